"""Consumer-group APIs: requests in, calls on the group coordinator, responses out.

FindCoordinator, JoinGroup, SyncGroup, Heartbeat, LeaveGroup, OffsetCommit,
OffsetFetch, OffsetDelete, ListGroups, DescribeGroups, DeleteGroups. The
state machine and its persistence live in groups/coordinator.py and
groups/store.py; these functions only read request fields and shape answers.
"""
from __future__ import annotations

import base64
import logging

from pylog.broker.api.context import AUTHORIZED_OPS_OMITTED, RequestContext, mirror_partitions
from pylog.broker.api.views import GroupView
from pylog.broker.groups.coordinator import JoinRequest, SyncRequest, join_error, sync_answer
from pylog.broker.groups.state import DEAD, EMPTY, STABLE, Group
from pylog.core.errors import ErrorCode, KafkaError

log = logging.getLogger("pylog.broker.groups")

# FindCoordinator key types
GROUP_KEY, TRANSACTION_KEY, SHARE_KEY = 0, 1, 2


# ---- FindCoordinator -------------------------------------------------------

def _no_coordinator(key: str, code: int, message: str | None) -> dict:
    return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": code, "error_message": message}


def _share_key_ok(key: str) -> bool:
    """A share coordinator key is Kafka's SharePartitionKey: `group:topic id (base64):partition`."""
    parts = key.rsplit(":", 2)
    if len(parts) != 3 or not parts[0] or not parts[2].lstrip("-").isdigit():
        return False
    try:
        return len(base64.urlsafe_b64decode(parts[1] + "==")) == 16
    except ValueError:
        return False


def _coordinator_for(broker: GroupView, key_type: int, key: str, conn=None, version: int = 6) -> dict:
    if key_type == SHARE_KEY:  # v6+ (KIP-932): the share coordinator of a share-partition
        if version < 6 or not _share_key_ok(key):
            return _no_coordinator(key, ErrorCode.INVALID_REQUEST, "")
        try:
            broker.group_coordinator.ensure_share_state_topic()
        except KafkaError as e:
            return _no_coordinator(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, str(e))
        host, port = broker.advertised_for(conn)
        return {"key": key, "node_id": broker.node_id, "host": host, "port": port,
                "error_code": ErrorCode.NONE, "error_message": None}
    if key_type not in (GROUP_KEY, TRANSACTION_KEY) or not key:
        code = {GROUP_KEY: ErrorCode.INVALID_GROUP_ID, TRANSACTION_KEY: ErrorCode.INVALID_REQUEST}.get(
            key_type, ErrorCode.UNSUPPORTED_VERSION)
        return _no_coordinator(key, code, "invalid coordinator key")
    try:
        if key_type == TRANSACTION_KEY:
            broker.txn_coordinator.ensure_topic()
        else:
            broker.group_coordinator.ensure_topic()
    except KafkaError as e:
        return _no_coordinator(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, str(e))
    host, port = broker.advertised_for(conn)
    return {"key": key, "node_id": broker.node_id, "host": host, "port": port,
            "error_code": ErrorCode.NONE, "error_message": None}


def find_coordinator(broker: GroupView, ctx: RequestContext, body: dict) -> dict:
    """This broker coordinates every group; v4+ asks for several keys at once."""
    keys = body["coordinator_keys"] if ctx.api_version >= 4 else [body["key"]]
    results = [_coordinator_for(broker, body["key_type"], k, ctx.conn, ctx.api_version) for k in keys]
    out = {"throttle_time_ms": 0, "coordinators": results}
    if ctx.api_version < 4:
        r = results[0]
        out.update(error_code=r["error_code"], error_message=r["error_message"], node_id=r["node_id"],
                   host=r["host"], port=r["port"])
    return out


def find_coordinator_error(body, version, code, msg):
    """Every requested key with `code`."""
    return {"throttle_time_ms": 0, "error_code": code, "error_message": msg, "node_id": -1, "host": "",
            "port": -1, "coordinators": [_no_coordinator(k, code, msg) for k in body["coordinator_keys"]]}


# ---- JoinGroup, SyncGroup, Heartbeat, LeaveGroup ---------------------------

def join_group(broker: GroupView, ctx: RequestContext, body: dict):
    """Join (or rejoin) a group; answered when the group's rebalance completes."""
    v = ctx.api_version
    session = body["session_timeout_ms"]
    rebalance = body["rebalance_timeout_ms"]
    if v == 0 or rebalance < 0:
        rebalance = session  # v0 has one timeout for both
    host = "/" + ctx.conn.peer.rsplit(":", 1)[0] if ctx.conn is not None else ""
    return broker.group_coordinator.join(JoinRequest(
        body["group_id"], body["member_id"], body["group_instance_id"], session, rebalance,
        body["protocol_type"], [(p["name"], bytes(p["metadata"])) for p in body["protocols"]],
        ctx.client_id or "", host, v))


def join_group_error(body, version, code, msg):
    """The join failed with `code`."""
    return join_error(body["member_id"], code)


def sync_group(broker: GroupView, ctx: RequestContext, body: dict):
    """Get this member's assignment (the leader brings everyone's)."""
    return broker.group_coordinator.sync(SyncRequest(
        body["group_id"], body["member_id"], body["group_instance_id"], body["generation_id"],
        body["protocol_type"], body["protocol_name"],
        {a["member_id"]: bytes(a["assignment"]) for a in body["assignments"]}))


def sync_group_error(body, version, code, msg):
    """The sync failed with `code`."""
    return sync_answer(None, code)


def heartbeat(broker: GroupView, ctx: RequestContext, body: dict) -> dict:
    """Keep a member alive; errors tell it to rejoin."""
    code = broker.group_coordinator.heartbeat(body["group_id"], body["member_id"], body["group_instance_id"],
                                              body["generation_id"])
    if code:
        log.debug("Heartbeat group=%s member=%s: error %s", body["group_id"], body["member_id"], code.name)
    return {"throttle_time_ms": 0, "error_code": code}


def heartbeat_error(body, version, code, msg):
    """The heartbeat failed with `code`."""
    return {"throttle_time_ms": 0, "error_code": code}


def _leaving(body: dict, version: int) -> list[tuple[str, str | None]]:
    """(member_id, group_instance_id) per leaving member: one before v3, a batch after."""
    if version < 3:
        return [(body["member_id"], None)]
    return [(m["member_id"], m["group_instance_id"]) for m in body["members"]]


def leave_group(broker: GroupView, ctx: RequestContext, body: dict) -> dict:
    """Remove members (v3+: a batch, static members by instance id)."""
    gc = broker.group_coordinator
    results = []
    for mid, inst in _leaving(body, ctx.api_version):
        mid, code = gc.leave(body["group_id"], mid, inst)
        results.append({"member_id": mid, "group_instance_id": inst, "error_code": code})
    top = results[0]["error_code"] if ctx.api_version < 3 else ErrorCode.NONE
    return {"throttle_time_ms": 0, "error_code": top, "members": results}


def leave_group_error(body, version, code, msg):
    """The whole request failed with `code` (Kafka lists no members then)."""
    return {"throttle_time_ms": 0, "error_code": code, "members": []}


# ---- OffsetCommit, OffsetFetch, OffsetDelete -------------------------------

def commit_requests(broker: GroupView, topics: list) -> tuple[set, list]:
    """The (topic, partition)s of an offset commit that exist, and their offsets to store as
    ((topic, partition), offset, leader epoch, metadata): Kafka answers the others
    UNKNOWN_TOPIC_OR_PARTITION and stores nothing for them."""
    logs = broker.logs
    known = {(t["name"], p["partition_index"]) for t in topics for p in t["partitions"]
             if logs.get_log(t["name"], p["partition_index"]) is not None}
    offsets = [((t["name"], p["partition_index"]), p["committed_offset"], p["committed_leader_epoch"],
                p["committed_metadata"]) for t in topics for p in t["partitions"]
               if (t["name"], p["partition_index"]) in known]
    return known, offsets


def commit_answer(topics: list, by_tp: dict) -> dict:
    """An OffsetCommit or TxnOffsetCommit answer: each partition's code from `by_tp`,
    UNKNOWN_TOPIC_OR_PARTITION for the partitions that do not exist (as Kafka's KafkaApis)."""
    return {"throttle_time_ms": 0, "topics": mirror_partitions(
        topics, lambda t, p: {"partition_index": p["partition_index"], "error_code": by_tp.get(
            (t["name"], p["partition_index"]), ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)})}


def _member_commit_refused(broker: GroupView, ctx: RequestContext, body: dict) -> int:
    """Kafka's version rules for a member's commit: from v9 an unknown group is GROUP_ID_NOT_FOUND
    (older versions keep ILLEGAL_GENERATION); a KIP-848 member must commit with v9 or above."""
    gen = body["generation_id_or_member_epoch"]
    if gen < 0:
        return ErrorCode.NONE
    g = broker.group_coordinator.group(body["group_id"])
    if g is None:
        return ErrorCode.GROUP_ID_NOT_FOUND if ctx.api_version >= 9 else ErrorCode.NONE
    cg = getattr(g, "consumer", None)
    if cg is not None and ctx.api_version < 9:
        m = cg.members.get(body["member_id"] or "")
        if m is not None and m.classic is None:
            return ErrorCode.UNSUPPORTED_VERSION
    return ErrorCode.NONE


def offset_commit(broker: GroupView, ctx: RequestContext, body: dict) -> dict:
    """Commit offsets for a member of the group's generation, or for an admin (generation -1)."""
    topics = body["topics"]
    known, offsets = commit_requests(broker, topics)
    by_tp = {}
    refused = _member_commit_refused(broker, ctx, body)
    if refused:
        offsets, by_tp = [], {(t["name"], p["partition_index"]): refused for t in topics for p in t["partitions"]
                              if (t["name"], p["partition_index"]) in known}
    if offsets:
        codes = broker.group_coordinator.commit_offsets(
            body["group_id"], body["generation_id_or_member_epoch"], body["member_id"], body["group_instance_id"],
            offsets)
        by_tp = {tp: c for (tp, *_), c in zip(offsets, codes)}
    return commit_answer(topics, by_tp)


def _committed(g: Group | None, topics, unstable=None) -> list:
    """OffsetFetch topics answer; topics None = every committed partition of the group.
    unstable((topic, p)): an open transaction holds an offset there (require_stable answers
    UNSTABLE_OFFSET_COMMIT so the client retries after the transaction ends)."""
    def part(t, p):
        if unstable is not None and unstable((t, p)):
            return {"partition_index": p, "committed_offset": -1, "committed_leader_epoch": -1,
                    "metadata": "", "error_code": ErrorCode.UNSTABLE_OFFSET_COMMIT}
        e = g.offsets.get((t, p)) if g is not None else None
        if e is None:
            return {"partition_index": p, "committed_offset": -1, "committed_leader_epoch": -1,
                    "metadata": "", "error_code": ErrorCode.NONE}
        return {"partition_index": p, "committed_offset": e.offset, "committed_leader_epoch": e.leader_epoch,
                "metadata": e.metadata, "error_code": ErrorCode.NONE}

    if topics is None:
        by_topic: dict[str, list] = {}
        for (t, p) in sorted(g.offsets) if g is not None else []:
            by_topic.setdefault(t, []).append(p)
        return [{"name": t, "partitions": [part(t, p) for p in ps]} for t, ps in by_topic.items()]
    return [{"name": t["name"], "partitions": [part(t["name"], p) for p in t["partition_indexes"]]}
            for t in topics]


def offset_fetch(broker: GroupView, ctx: RequestContext, body: dict) -> dict:
    """Committed offsets of one group (v8+: of several)."""
    gc = broker.group_coordinator

    def unstable(gid):
        if not body["require_stable"] or not gc.any_txn_offsets():
            return None
        return lambda tp: gc.has_pending_txn_offset(gid, tp)
    if ctx.api_version >= 8:
        out = []
        for gq in body["groups"]:
            gid = gq["group_id"]
            g = gc.group(gid)
            code = ErrorCode.NONE if gid else ErrorCode.INVALID_GROUP_ID
            if g is not None and (g.consumer is not None or g.streams is not None) and ctx.api_version >= 9:
                code = gc.fetch_check(g, gq["member_id"], gq["member_epoch"])
            out.append({"group_id": gid, "topics": _committed(g, gq["topics"], unstable(gid)) if not code else [],
                        "error_code": code})
        return {"throttle_time_ms": 0, "groups": out}
    gid = body["group_id"]
    topics = body["topics"]
    if ctx.api_version < 2 and topics is None:
        topics = []
    return {"throttle_time_ms": 0, "topics": _committed(gc.group(gid), topics, unstable(gid)),
            "error_code": ErrorCode.NONE if gid else ErrorCode.INVALID_GROUP_ID}


def offset_fetch_error(body, version, code, msg):
    """Every requested partition (of every group) with `code`."""
    def topics(ts):
        if version >= 2:  # Kafka's error answer lists no partitions from v2 on
            return []
        return [{"name": t["name"], "partitions": [
            {"partition_index": p, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
             "error_code": code} for p in t["partition_indexes"]]} for t in ts or ()]
    return {"throttle_time_ms": 0, "topics": topics(body["topics"]), "error_code": code,
            "groups": [{"group_id": g["group_id"], "topics": topics(g["topics"]), "error_code": code}
                       for g in body["groups"]]}


def offset_delete(broker: GroupView, ctx: RequestContext, body: dict) -> dict:
    """Delete committed offsets of topics the group does not subscribe to."""
    topics = body["topics"]
    code, subscribed = broker.group_coordinator.delete_offsets(
        body["group_id"], [(t["name"], p["partition_index"]) for t in topics for p in t["partitions"]])

    def entry(t, p):
        return {"partition_index": p["partition_index"], "error_code":
                ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if t["name"] in subscribed else ErrorCode.NONE}
    # Kafka lists no partitions when the whole deletion failed
    return {"throttle_time_ms": 0, "error_code": code, "topics": mirror_partitions(topics, entry) if not code else []}


def offset_delete_error(body, version, code, msg):
    """The deletion failed with `code`."""
    return {"throttle_time_ms": 0, "error_code": code, "topics": []}


# ---- ListGroups, DescribeGroups, DeleteGroups ------------------------------

def list_groups(broker: GroupView, ctx: RequestContext, body: dict) -> dict:
    """Every group, filtered by state and type (v4+, v5+)."""
    states = {s.lower() for s in body["states_filter"]}
    types = {t.lower() for t in body["types_filter"]}
    out = []
    for g in sorted(broker.group_coordinator.all_groups(), key=lambda x: x.group_id):
        if g.consumer is not None:  # KIP-848: protocol type "consumer", Kafka's ConsumerGroupState names
            state, gtype, ptype = g.consumer.state, "consumer", "consumer"
        elif g.streams is not None:  # KIP-1071: Kafka's StreamsGroupState names
            state, gtype, ptype = g.streams.state, "streams", "streams"
        else:
            state, gtype, ptype = g.state, "classic", g.protocol_type or ""
        if states and state.lower() not in states:
            continue
        if types and gtype not in types:
            continue
        out.append({"group_id": g.group_id, "protocol_type": ptype, "group_state": state, "group_type": gtype})
    if not types or "share" in types:  # share groups: protocol type "share"
        out += [{"group_id": g.group_id, "protocol_type": "share", "group_state": g.state, "group_type": "share"}
                for g in broker.group_coordinator.share_groups() if not states or g.state.lower() in states]
        out.sort(key=lambda x: x["group_id"])
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "groups": out}


def list_groups_error(body, version, code, msg):
    """`code` and no groups."""
    return {"throttle_time_ms": 0, "error_code": code, "groups": []}


def _described(g: Group) -> dict:
    stable = g.is_(STABLE)
    members = [{
        "member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
        "client_host": m.client_host,
        # Kafka shows metadata/assignment only once the group has settled on a protocol
        "member_metadata": m.metadata(g.protocol_name) if stable else b"",
        "member_assignment": m.assignment if stable else b"",
    } for m in g.members.values()]
    return {"error_code": ErrorCode.NONE, "group_id": g.group_id, "group_state": g.state,
            "protocol_type": g.protocol_type or "", "protocol_data": (g.protocol_name or "") if stable else "",
            "members": members, "authorized_operations": AUTHORIZED_OPS_OMITTED}


def describe_groups(broker: GroupView, ctx: RequestContext, body: dict) -> dict:
    """State, protocol and members of each group."""
    gc = broker.group_coordinator
    out = []
    for gid in body["groups"]:
        g = gc.group(gid)
        if g is None or g.consumer is not None or g.streams is not None:  # Kafka describes only classic groups here
            code = ErrorCode.GROUP_ID_NOT_FOUND if ctx.api_version >= 6 else ErrorCode.NONE
            out.append({"error_code": code, "error_message": f"Group {gid} not found." if code else None,
                        "group_id": gid, "group_state": DEAD, "protocol_type": "",
                        "protocol_data": "", "members": [], "authorized_operations": AUTHORIZED_OPS_OMITTED})
            continue
        out.append(_described(g))
    return {"throttle_time_ms": 0, "groups": out}


def describe_groups_error(body, version, code, msg):
    """Every requested group with `code`."""
    return {"throttle_time_ms": 0, "groups": [
        {"error_code": code, "group_id": g, "group_state": "", "protocol_type": "", "protocol_data": "",
         "members": [], "authorized_operations": AUTHORIZED_OPS_OMITTED} for g in body["groups"]]}


def delete_groups(broker: GroupView, ctx: RequestContext, body: dict) -> dict:
    """Delete empty groups with their offsets."""
    gc = broker.group_coordinator
    return {"throttle_time_ms": 0, "results": [
        {"group_id": gid, "error_code": gc.delete_any_group(gid)} for gid in body["groups_names"]]}


def delete_groups_error(body, version, code, msg):
    """Every requested group with `code`."""
    return {"throttle_time_ms": 0, "results": [{"group_id": g, "error_code": code} for g in body["groups_names"]]}
