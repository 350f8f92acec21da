"""The share-group offsets APIs of the admin client: DescribeShareGroupOffsets,
AlterShareGroupOffsets, DeleteShareGroupOffsets (kafka-share-groups.sh
--describe, --reset-offsets, --delete-offsets).

A share group's "offset" of a partition is its share-partition start offset;
its lag (v1, KIP-1226) is the records from there to the high watermark that
are not yet delivered to completion. Alter and delete need an empty group.
"""
from __future__ import annotations

from pylog.broker.api.context import RequestContext
from pylog.broker.api.views import ShareView
from pylog.core.errors import ErrorCode
from pylog.core.protocol import ZERO_UUID


def _partition_offsets(broker: ShareView, gid: str, info, idx: int) -> dict:
    sc = broker.share_coordinator
    entry = {"partition_index": idx, "start_offset": -1, "leader_epoch": -1, "lag": -1, "error_code": 0,
             "error_message": None}
    plog = broker.logs.get_log(info.name, idx) if info is not None else None
    if plog is None:
        entry["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return entry
    sp = sc.partition(gid, info.topic_id, idx, create=False)
    if sp is not None:
        start, lag = sp.described(plog.high_watermark)
        entry.update(start_offset=start, leader_epoch=0, lag=lag)
    return entry


def describe_share_group_offsets(broker: ShareView, ctx: RequestContext, body: dict) -> dict:
    """Start offset (and lag) of each share-partition of each group."""
    sc = broker.share_coordinator
    topics = broker.logs.topics
    out = []
    for g in body["groups"]:
        gid = g["group_id"]
        res = {"group_id": gid, "topics": [], "error_code": 0, "error_message": None}
        out.append(res)
        if sc.group(gid) is None:
            res["error_code"], res["error_message"] = ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} not found."
            continue
        wanted = g["topics"]
        if wanted is None:  # every share-partition with state
            names = {info.topic_id: n for n, info in topics.items()}
            by_topic: dict = {}
            for (gg, tid, p) in sorted((k for k, _ in sc.all_partitions()), key=lambda k: (str(k[1]), k[2])):
                if gg == gid and tid in names:
                    by_topic.setdefault(names[tid], []).append(p)
            wanted = [{"topic_name": n, "partitions": ps} for n, ps in sorted(by_topic.items())]
        for t in wanted:
            info = topics.get(t["topic_name"])
            res["topics"].append({"topic_name": t["topic_name"], "topic_id": info.topic_id if info else ZERO_UUID,
                                  "partitions": [_partition_offsets(broker, gid, info, p) for p in t["partitions"]]})
    return {"throttle_time_ms": 0, "groups": out}


def describe_share_group_offsets_error(body, version, code, msg):
    """Every group with `code`."""
    return {"throttle_time_ms": 0, "groups": [
        {"group_id": g["group_id"], "topics": [], "error_code": code, "error_message": msg} for g in body["groups"]]}


def _group_empty(broker: ShareView, gid: str):
    g = broker.share_coordinator.group(gid)
    if g is not None and g.members:
        return ErrorCode.NON_EMPTY_GROUP, "The group is not empty."
    return ErrorCode.NONE, None


def alter_share_group_offsets(broker: ShareView, ctx: RequestContext, body: dict) -> dict:
    """Set share-partition start offsets of an empty share group (it is created if new)."""
    sc = broker.share_coordinator
    gid = body["group_id"]
    code, msg = _group_empty(broker, gid)
    if code:
        return alter_share_group_offsets_error(body, ctx.api_version, code, msg)
    sc.ensure_group(gid)
    changed = []
    out = []
    for t in body["topics"]:
        info = broker.logs.topics.get(t["topic_name"])
        parts = []
        for p in t["partitions"]:
            e = {"partition_index": p["partition_index"], "error_code": 0, "error_message": None}
            plog = broker.logs.get_log(info.name, p["partition_index"]) if info is not None else None
            if plog is None:
                e["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                off = p["start_offset"]
                off = plog.high_watermark if off == -1 else plog.log_start_offset if off == -2 else off
                sp = sc.partition(gid, info.topic_id, p["partition_index"])
                sp.reset(min(max(off, plog.log_start_offset), plog.high_watermark))
                changed.append(sp)
            parts.append(e)
        out.append({"topic_name": t["topic_name"], "topic_id": info.topic_id if info else ZERO_UUID,
                    "partitions": parts})
    sc.persist(changed)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": out}


def alter_share_group_offsets_error(body, version, code, msg):
    """The group as a whole failed with `code`."""
    return {"throttle_time_ms": 0, "error_code": code, "error_message": msg, "responses": []}


def delete_share_group_offsets(broker: ShareView, ctx: RequestContext, body: dict) -> dict:
    """Forget an empty share group's state for whole topics."""
    sc = broker.share_coordinator
    gid = body["group_id"]
    if sc.group(gid) is None:
        return delete_share_group_offsets_error(body, ctx.api_version, ErrorCode.GROUP_ID_NOT_FOUND,
                                                f"Group {gid} not found.")
    code, msg = _group_empty(broker, gid)
    if code:
        return delete_share_group_offsets_error(body, ctx.api_version, code, msg)
    out = []
    for t in body["topics"]:
        info = broker.logs.topics.get(t["topic_name"])
        e = {"topic_name": t["topic_name"], "topic_id": info.topic_id if info else ZERO_UUID, "error_code": 0,
             "error_message": None}
        if info is None:
            e["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        else:
            sc.forget(gid, [(tid, p) for (g, tid, p), _ in sc.all_partitions() if g == gid and tid == info.topic_id])
        out.append(e)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "responses": out}


def delete_share_group_offsets_error(body, version, code, msg):
    """The group as a whole failed with `code`."""
    return {"throttle_time_ms": 0, "error_code": code, "error_message": msg, "responses": []}
