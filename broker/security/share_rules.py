"""Authorization of the share-group APIs, as Kafka's KafkaApis checks them.

ShareGroupHeartbeat: READ on the group, DESCRIBE on every subscribed topic.
ShareFetch / ShareAcknowledge: READ on the group, READ on each topic (the
partitions of a topic the principal may not read answer
TOPIC_AUTHORIZATION_FAILED). ShareGroupDescribe and DescribeShareGroupOffsets:
DESCRIBE on each group. AlterShareGroupOffsets: READ on the group and the
topics; DeleteShareGroupOffsets: DELETE on the group, READ on the topics.
"""
from __future__ import annotations

from pylog.broker.security import denials
from pylog.core.security.acl import AclOperation as Op, ResourceType as Res


def _heartbeat(az, ctx, api, body):
    if not az.allowed(ctx, Op.READ, Res.GROUP, body.get("group_id") or ""):
        return az.refuse(api, ctx, body, denials.GROUP_DENIED)
    denied = [t for t in body.get("subscribed_topic_names") or [] if not az.allowed(ctx, Op.DESCRIBE, Res.TOPIC, t)]
    if denied:
        return az.refuse(api, ctx, body, denials.TOPIC_DENIED, f"Topic authorization failed for topics {denied}")
    return None


def _partitions(az, ctx, api, body, fetch: bool):
    if not az.allowed(ctx, Op.READ, Res.GROUP, body.get("group_id") or ""):
        return az.refuse(api, ctx, body, denials.GROUP_DENIED)
    keep, drop = [], []
    for t in body.get("topics") or []:
        info = az.topic_by_id(t["topic_id"])
        (keep if info is not None and az.allowed(ctx, Op.READ, Res.TOPIC, info.name) else drop).append(t)
    if not drop:
        return None
    leader = {"leader_id": -1, "leader_epoch": -1}

    def entry(p):
        e = {"partition_index": p["partition_index"], "error_code": denials.TOPIC_DENIED,
             "error_message": denials.MESSAGES[denials.TOPIC_DENIED], "current_leader": leader}
        if fetch:
            e.update(acknowledge_error_code=0, acknowledge_error_message=None, records=b"", acquired_records=[])
        return e
    return dict(body, topics=keep), {"responses": [
        {"topic_id": t["topic_id"], "partitions": [entry(p) for p in t["partitions"]]} for t in drop]}


def _describe_groups(az, ctx, api, body):
    ids = body.get("group_ids") or []
    keep = [g for g in ids if az.allowed(ctx, Op.DESCRIBE, Res.GROUP, g)]
    if len(keep) == len(ids):
        return None
    drop = [g for g in ids if g not in keep]
    return dict(body, group_ids=keep), api.error(dict(body, group_ids=drop), ctx.api_version, denials.GROUP_DENIED,
                                                 denials.MESSAGES[denials.GROUP_DENIED])


def _describe_offsets(az, ctx, api, body):
    groups = body.get("groups") or []
    keep = [g for g in groups if az.allowed(ctx, Op.DESCRIBE, Res.GROUP, g["group_id"])]
    drop = [g for g in groups if g not in keep]
    if not drop:
        return None
    return dict(body, groups=keep), api.error(dict(body, groups=drop), ctx.api_version, denials.GROUP_DENIED,
                                              denials.MESSAGES[denials.GROUP_DENIED])


def _group_and_topics(group_op):
    def rule(az, ctx, api, body):
        if not az.allowed(ctx, group_op, Res.GROUP, body.get("group_id") or ""):
            return az.refuse(api, ctx, body, denials.GROUP_DENIED)
        if any(not az.allowed(ctx, Op.READ, Res.TOPIC, t["topic_name"]) for t in body.get("topics") or []):
            return az.refuse(api, ctx, body, denials.TOPIC_DENIED)
        return None
    return rule


SHARE_RULES = {
    "ShareGroupHeartbeat": _heartbeat,
    "ShareGroupDescribe": _describe_groups,
    "ShareFetch": lambda az, ctx, api, body: _partitions(az, ctx, api, body, fetch=True),
    "ShareAcknowledge": lambda az, ctx, api, body: _partitions(az, ctx, api, body, fetch=False),
    "DescribeShareGroupOffsets": _describe_offsets,
    "AlterShareGroupOffsets": _group_and_topics(Op.READ),
    "DeleteShareGroupOffsets": _group_and_topics(Op.DELETE),
}

# streams groups (KIP-1071): READ on the group to heartbeat or upload a topology description,
# DESCRIBE on each group described
def _read_group(az, ctx, api, body):
    if not az.allowed(ctx, Op.READ, Res.GROUP, body.get("group_id") or ""):
        return az.refuse(api, ctx, body, denials.GROUP_DENIED)
    return None


STREAMS_RULES = {"StreamsGroupHeartbeat": _read_group, "StreamsGroupDescribe": _describe_groups,
                 "StreamsGroupTopologyDescriptionUpdate": _read_group}
