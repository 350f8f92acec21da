"""Share-group APIs: ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch, ShareAcknowledge,
and the share-group offsets APIs of the admin client.

ShareFetch first applies the acknowledgements it carries, then acquires
records of every partition of the member's share session under acquisition
locks; the records go out as Fetch sends them (file slices, sendfile) with the
acquired offset ranges and their delivery counts. With nothing to acquire it
waits up to max_wait_ms for appends or releases on those partitions. State
changes are persisted in `__share_group_state` before the answer goes out.
"""
from __future__ import annotations

import asyncio

from pylog.broker.api.context import RequestContext
from pylog.broker.api.views import ShareView
from pylog.broker.groups.share.coordinator import heartbeat_error
from pylog.broker.groups.share.partition import RENEW, AckError, batches_error
from pylog.broker.groups.store import now_ms
from pylog.core.errors import ErrorCode
from pylog.core.protocol import ZERO_UUID

EMPTY = b""
FINAL_EPOCH = -1
RECORD_LIMIT = 1  # share_acquire_mode


RENEW_DISABLED = "Renewing acquisition locks is not enabled for the group."
RENEW_ONLY_LIMITS = ("max_bytes", "min_bytes", "max_records", "max_wait_ms")


def _host(ctx: RequestContext) -> str:
    return "/" + ctx.conn.peer.rsplit(":", 1)[0] if ctx.conn is not None else ""


# ---- ShareGroupHeartbeat, ShareGroupDescribe --------------------------------------

def share_group_heartbeat(broker: ShareView, ctx: RequestContext, body: dict) -> dict:
    """Join, heartbeat or leave a share group."""
    return broker.share_coordinator.heartbeat(body, ctx.client_id or "", _host(ctx))


def share_group_heartbeat_error(body, version, code, msg):
    """The heartbeat failed with `code`."""
    return heartbeat_error(code, msg)


def share_group_describe(broker: ShareView, ctx: RequestContext, body: dict) -> dict:
    """Epochs, members and assignments of share groups."""
    sc = broker.share_coordinator
    return {"throttle_time_ms": 0, "groups": [sc.describe(g) for g in body["group_ids"]]}


def share_group_describe_error(body, version, code, msg):
    """Every requested group with `code`."""
    return {"throttle_time_ms": 0, "groups": [
        {"error_code": code, "error_message": msg, "group_id": g, "group_state": "", "group_epoch": 0,
         "assignment_epoch": 0, "assignor_name": "", "members": []} for g in body["group_ids"]]}


# ---- ShareFetch / ShareAcknowledge --------------------------------------------------

def _entry(broker: ShareView, idx: int) -> dict:
    return {"partition_index": idx, "error_code": 0, "error_message": None, "acknowledge_error_code": 0,
            "acknowledge_error_message": None, "current_leader": {"leader_id": broker.node_id, "leader_epoch": 0},
            "records": EMPTY, "acquired_records": []}


def _acknowledge(broker: ShareView, gid: str, mid: str, tid, idx: int, batches: list, changed: dict,
                 renew: tuple, holds: dict | None = None) -> tuple:
    """Apply one partition's acknowledgement batches: (error code, message). `renew`: (the version
    has RENEW, the request says IsRenewAck). `holds` gets the offsets made available again."""
    sc = broker.share_coordinator
    why = batches_error(batches, *renew)
    if why is not None:
        return ErrorCode.INVALID_REQUEST, why
    if broker.topic_by_id(tid) is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
    if not sc.renew_enabled(gid) and any(RENEW in b["acknowledge_types"] for b in batches):
        return ErrorCode.INVALID_RECORD_STATE, RENEW_DISABLED
    sp = sc.partition(gid, tid, idx, create=False)
    if sp is None:
        return ErrorCode.INVALID_RECORD_STATE, "the share-partition has no records in flight"
    start = sp.start
    try:
        released = sp.acknowledge(mid, batches, sc.delivery_limit(gid), sc.lock_ms(gid), now_ms())
    except AckError as e:
        return ErrorCode[e.code_name], str(e)
    if released is None:
        return ErrorCode.NONE, None
    changed[(tid, idx)] = sp
    sc.count_acks(batches)
    if holds is not None:
        holds[(tid, idx)] = (released, start)
    if released:
        sc.wake(sp)
    return ErrorCode.NONE, None


def _held(holds: dict | None, tid, idx: int) -> dict:
    """What this request's acknowledgements hold back from its first acquisition pass."""
    held = (holds or {}).get((tid, idx))
    return {} if held is None else {"hold": held[0], "held_start": held[1]}


def _persist(broker: ShareView, changed: dict) -> int:
    if not changed:
        return ErrorCode.NONE
    try:
        broker.share_coordinator.persist(list(changed.values()))
        return ErrorCode.NONE
    except Exception:  # noqa: BLE001 - logged by the coordinator
        return ErrorCode.COORDINATOR_NOT_AVAILABLE


def _acquire_all(broker: ShareView, gid: str, mid: str, parts, body: dict, entries: dict, changed: dict,
                 holds: dict | None = None) -> int:
    """Acquire records in every session partition; returns the bytes acquired. `holds`: offsets
    per partition this request's acknowledgements released, not acquirable before they are written
    (Kafka's state transition is in progress until then)."""
    sc = broker.share_coordinator
    remaining = min(body["max_bytes"], broker.config["fetch.max.bytes"])
    max_records = body["max_records"] if body["max_records"] > 0 else 500
    strict = body.get("share_acquire_mode", 0) == RECORD_LIMIT
    lock_ms, max_locks, limit = sc.lock_ms(gid), sc.max_locks(gid), sc.delivery_limit(gid)
    batch_size = body["batch_size"]
    committed = sc.read_committed(gid)
    now = now_ms()
    total = 0
    for tid, idx in parts:
        info = broker.topic_by_id(tid)
        plog = broker.logs.get_log(info.name, idx) if info is not None else None
        if plog is None:
            entries.setdefault((tid, idx), _entry(broker, idx))["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            continue
        sp = sc.partition(gid, tid, idx)
        bound = plog.last_stable_offset if committed else plog.high_watermark
        if max_records <= 0 or remaining <= 0 or not sp.has_available(bound):
            continue
        try:
            sl, ranges = sp.acquire(plog, mid, max_records, remaining, lock_ms, max_locks, bound, now, strict,
                                    min_one=total == 0, read_committed=committed, batch_size=batch_size,
                                    limit=limit, **_held(holds, tid, idx))
        except Exception as e:  # noqa: BLE001 - per-partition error
            from pylog.broker.api.context import code_of

            entries.setdefault((tid, idx), _entry(broker, idx))["error_code"] = code_of(e)[0]
            continue
        if not ranges:
            continue
        e = entries.setdefault((tid, idx), _entry(broker, idx))
        e["records"] = sl
        e["acquired_records"] = [{"first_offset": f, "last_offset": la, "delivery_count": c} for f, la, c in ranges]
        changed[(tid, idx)] = sp
        sc.stats["acquired"] += sum(la - f + 1 for f, la, _ in ranges)
        total += sl.length
        remaining -= sl.length
        max_records -= sum(la - f + 1 for f, la, _ in ranges)
    return total


def _fetch_answer(broker: ShareView, gid: str, entries: dict, order, code: int = 0) -> dict:
    by_topic: dict = {}
    for key in order:
        e = entries.get(key)
        if e is not None:
            by_topic.setdefault(key[0], []).append(e)
    for key, e in entries.items():
        if key not in order:
            by_topic.setdefault(key[0], []).append(e)
    return {"throttle_time_ms": 0, "error_code": code, "error_message": None,
            "acquisition_lock_timeout_ms": broker.share_coordinator.lock_ms(gid) if gid else 0,
            "responses": [{"topic_id": tid, "partitions": ps} for tid, ps in by_topic.items()],
            "node_endpoints": []}


def share_fetch_error(body, version, code, msg):
    """The share fetch as a whole failed with `code`."""
    return {"throttle_time_ms": 0, "error_code": code, "error_message": msg, "acquisition_lock_timeout_ms": 0,
            "responses": [], "node_endpoints": []}


def share_fetch(broker: ShareView, ctx: RequestContext, body: dict):
    """Acknowledge what the request carries, then acquire records of the session's partitions."""
    sc = broker.share_coordinator
    gid, mid, epoch = body["group_id"], body["member_id"], body["share_session_epoch"]
    if not gid or not mid:
        return share_fetch_error(body, ctx.api_version, ErrorCode.INVALID_REQUEST, "GroupId and MemberId are needed")
    has_acks = any(p["acknowledgement_batches"] for t in body["topics"] for p in t["partitions"])
    renew = (ctx.api_version >= 2, ctx.api_version >= 2 and bool(body["is_renew_ack"]))
    if renew[1] and any(body[k] for k in RENEW_ONLY_LIMITS):
        return share_fetch_error(body, ctx.api_version, ErrorCode.INVALID_REQUEST,
                                 "MaxBytes, MinBytes, MaxRecords and MaxWaitMs must be 0 in a renew request")
    if epoch == 0 and has_acks:
        return share_fetch_error(body, ctx.api_version, ErrorCode.INVALID_REQUEST,
                                 "Acknowledge data present on initial fetch for the share session")
    session, code = sc.session(gid, mid, epoch, ctx.conn)
    if code == ErrorCode.SHARE_SESSION_LIMIT_REACHED and body["max_wait_ms"] > 0:
        # Kafka answers a fetch it has no share session for once its MaxWaitMs ran out
        return _answer_later(broker, body["max_wait_ms"], share_fetch_error(body, ctx.api_version, code, None))
    if code:
        return share_fetch_error(body, ctx.api_version, code, None)
    for t in body["forgotten_topics_data"]:
        for idx in t["partitions"]:
            session.parts.pop((t["topic_id"], idx), None)
    order = []
    for t in body["topics"]:
        for p in t["partitions"]:
            key = (t["topic_id"], p["partition_index"])
            order.append(key)
            if epoch != FINAL_EPOCH and t["topic_id"] != ZERO_UUID:
                session.parts[key] = None
    entries: dict = {}
    changed: dict = {}
    holds: dict = {}
    for t in body["topics"]:
        for p in t["partitions"]:
            if p["acknowledgement_batches"]:
                e = entries.setdefault((t["topic_id"], p["partition_index"]), _entry(broker, p["partition_index"]))
                e["acknowledge_error_code"], e["acknowledge_error_message"] = _acknowledge(
                    broker, gid, mid, t["topic_id"], p["partition_index"], p["acknowledgement_batches"], changed,
                    renew, holds)
    if epoch == FINAL_EPOCH or renew[1]:
        if _persist(broker, changed):
            for e in entries.values():
                e["acknowledge_error_code"] = ErrorCode.COORDINATOR_NOT_AVAILABLE
        if epoch == FINAL_EPOCH:
            sc.close_session(gid, mid)
        return _fetch_answer(broker, gid, entries, order)
    if epoch == 0:  # a full request: every partition of the new session that may acquire answers
        for key in session.parts:
            sp = sc.partition(gid, key[0], key[1], create=False)
            if sp is None or sp.can_acquire(sc.max_locks(gid)):
                entries.setdefault(key, _entry(broker, key[1]))
    total = _acquire_all(broker, gid, mid, list(session.parts), body, entries, changed, holds)
    if _persist(broker, changed):
        return share_fetch_error(body, ctx.api_version, ErrorCode.COORDINATOR_NOT_AVAILABLE, "state not persisted")
    if not total and any(h[0] for h in holds.values()) and body["max_wait_ms"] > 0:
        # the released records are written now: a waiting fetch gets them at once
        total = _acquire_all(broker, gid, mid, list(session.parts), body, entries, changed)
        if _persist(broker, changed):
            return share_fetch_error(body, ctx.api_version, ErrorCode.COORDINATOR_NOT_AVAILABLE, "state not persisted")
    if total or body["max_wait_ms"] <= 0 or not session.parts or broker.state.stopping:
        return _fetch_answer(broker, gid, entries, order)
    return _long_poll(broker, gid, mid, session, body, entries, order)


async def _answer_later(broker: ShareView, wait_ms: int, answer: dict) -> dict:
    deadline = broker.loop.time() + wait_ms / 1000.0
    while not broker.state.stopping and broker.loop.time() < deadline:
        await asyncio.sleep(min(0.1, deadline - broker.loop.time()))
    return answer


async def _long_poll(broker: ShareView, gid: str, mid: str, session, body: dict, entries: dict, order) -> dict:
    deadline = broker.loop.time() + body["max_wait_ms"] / 1000.0
    while True:
        left = deadline - broker.loop.time()
        if left <= 0 or broker.state.stopping or broker.share_coordinator.current_session(gid, mid) is not session:
            break
        keys = []
        for tid, idx in session.parts:
            info = broker.topic_by_id(tid)
            if info is not None:
                keys.append((info.name, idx))
        await broker.wait_for_append(keys, left)
        changed: dict = {}
        total = _acquire_all(broker, gid, mid, list(session.parts), body, entries, changed)
        if _persist(broker, changed):
            return share_fetch_error(body, 0, ErrorCode.COORDINATOR_NOT_AVAILABLE, "state not persisted")
        if total:
            break
    return _fetch_answer(broker, gid, entries, order)


def share_acknowledge(broker: ShareView, ctx: RequestContext, body: dict) -> dict:
    """Acknowledge records: accepted, released, rejected or renewed."""
    sc = broker.share_coordinator
    gid, mid, epoch = body["group_id"], body["member_id"], body["share_session_epoch"]
    if not gid or not mid:
        return share_acknowledge_error(body, ctx.api_version, ErrorCode.INVALID_REQUEST,
                                       "GroupId and MemberId are needed")
    if epoch == 0:
        return share_acknowledge_error(body, ctx.api_version, ErrorCode.INVALID_SHARE_SESSION_EPOCH, None)
    renew = (ctx.api_version >= 2, ctx.api_version >= 2 and bool(body["is_renew_ack"]))
    _, code = sc.session(gid, mid, epoch)
    if code:
        return share_acknowledge_error(body, ctx.api_version, code, None)
    changed: dict = {}
    out = []
    for t in body["topics"]:
        parts = []
        for p in t["partitions"]:
            if not p["acknowledgement_batches"]:
                continue  # Kafka answers only the partitions with acknowledgements
            c, msg = _acknowledge(broker, gid, mid, t["topic_id"], p["partition_index"], p["acknowledgement_batches"],
                                  changed, renew)
            parts.append({"partition_index": p["partition_index"], "error_code": c, "error_message": msg,
                          "current_leader": {"leader_id": broker.node_id, "leader_epoch": 0}})
        if parts:
            out.append({"topic_id": t["topic_id"], "partitions": parts})
    if _persist(broker, changed):
        return share_acknowledge_error(body, ctx.api_version, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                                       "state not persisted")
    if epoch == FINAL_EPOCH:
        sc.close_session(gid, mid)
    return {"throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "acquisition_lock_timeout_ms": sc.lock_ms(gid), "responses": out, "node_endpoints": []}


def share_acknowledge_error(body, version, code, msg):
    """The acknowledgement as a whole failed with `code`."""
    return {"throttle_time_ms": 0, "error_code": code, "error_message": msg, "acquisition_lock_timeout_ms": 0,
            "responses": [], "node_endpoints": []}
