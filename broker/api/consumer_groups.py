"""KIP-848 consumer-group APIs: ConsumerGroupHeartbeat and ConsumerGroupDescribe.

Requests in, calls on the group coordinator's consumer half
(groups/consumer/coordinator.py), responses out.
"""
from __future__ import annotations

from pylog.broker.groups.consumer.coordinator import describe_error, heartbeat_error
from pylog.broker.api.context import RequestContext
from pylog.broker.api.views import GroupView
from pylog.broker.security.authorizer import topic_filter


def consumer_group_heartbeat(broker: GroupView, ctx: RequestContext, body: dict) -> dict:
    """Join, heartbeat, reconcile or leave a consumer group."""
    host = "/" + ctx.conn.peer.rsplit(":", 1)[0] if ctx.conn is not None else ""
    may_describe = None if broker.authorizer is None else topic_filter(broker.authorizer, ctx)
    return broker.group_coordinator.consumer_heartbeat(body, ctx.api_version, ctx.client_id or "", host,
                                                       may_describe)


def consumer_group_heartbeat_error(body, version, code, msg):
    """The heartbeat failed with `code`."""
    return heartbeat_error(code, msg)


def consumer_group_describe(broker: GroupView, ctx: RequestContext, body: dict) -> dict:
    """Epochs, members, current and target assignments of consumer groups."""
    return {"throttle_time_ms": 0, "groups": broker.group_coordinator.describe_consumer_groups(body["group_ids"])}


def consumer_group_describe_error(body, version, code, msg):
    """Every requested group with `code`."""
    return {"throttle_time_ms": 0, "groups": [describe_error(g, code, msg) for g in body["group_ids"]]}
