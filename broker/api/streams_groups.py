"""Streams-group APIs (KIP-1071): StreamsGroupHeartbeat, StreamsGroupDescribe and
StreamsGroupTopologyDescriptionUpdate.

Requests in, calls on the group coordinator's streams half (groups/streams/coordinator.py),
responses out.
"""
from __future__ import annotations

from pylog.broker.api.context import RequestContext
from pylog.broker.api.views import GroupView
from pylog.broker.groups.streams.answers import describe_error, heartbeat_error


def streams_group_heartbeat(broker: GroupView, ctx: RequestContext, body: dict) -> dict:
    """Join, heartbeat, reconcile or leave a streams group."""
    host = "/" + ctx.conn.peer.rsplit(":", 1)[0] if ctx.conn is not None else ""
    return broker.group_coordinator.streams_heartbeat(body, ctx.api_version, ctx.client_id or "", host)


def streams_group_heartbeat_error(body, version, code, msg):
    """The heartbeat failed with `code`."""
    return heartbeat_error(code, msg)


def streams_group_describe(broker: GroupView, ctx: RequestContext, body: dict) -> dict:
    """Topology, epochs, members and their tasks of streams groups."""
    return {"throttle_time_ms": 0, "groups": broker.group_coordinator.describe_streams_groups(
        body["group_ids"], body["include_topology_description"])}


def streams_group_describe_error(body, version, code, msg):
    """Every requested group with `code`."""
    return {"throttle_time_ms": 0, "groups": [describe_error(g, code, msg) for g in body["group_ids"]]}


def streams_group_topology_description_update(broker: GroupView, ctx: RequestContext, body: dict) -> dict:
    """A member uploads its topology's description (KIP-1331)."""
    code, msg = broker.group_coordinator.update_topology_description(body)
    return {"throttle_time_ms": 0, "error_code": code, "error_message": msg}


def streams_group_topology_description_update_error(body, version, code, msg):
    """The update failed with `code`."""
    return {"throttle_time_ms": 0, "error_code": code, "error_message": msg}
