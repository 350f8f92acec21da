"""Fetch (with min.bytes/max.wait.ms long polls), ListOffsets, OffsetForLeaderEpoch.

Fetch is sessionless (KIP-227 sessions save request bytes between replicas
and busy clients; one node with a handful of partitions per request gains
little): every answer carries session_id 0, which tells a client asking for a
session that none was created, so it keeps sending full requests. The record
bytes are storage FetchSlices left in the response body; the response encoder
turns them into file ranges that the server sends with os.sendfile. As Kafka's
(LogSegment.read), a partition's slice is its byte budget of the log, the first
batch whole and a partial batch at the end, which clients leave for the next fetch.
"""
from __future__ import annotations

from dataclasses import dataclass

from pylog.broker.api.context import (
    NONE,
    UNKNOWN_TOPIC_OR_PARTITION,
    RequestContext,
    check_leader_epoch,
    code_of,
    mirror_partitions,
)
from pylog.broker.api.views import PartitionLogView
from pylog.broker.api.quotas import fetch_byte_cap
from pylog.core.errors import ErrorCode


EMPTY = b""
READ_COMMITTED = 1  # isolation_level
# ListOffsets timestamps with a special meaning (KIP-734, KIP-405, KIP-1005)
LATEST, EARLIEST, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -4, -5


@dataclass
class _FetchRequest:
    """The parts of a Fetch request a (possibly repeated) read needs."""

    topics: list
    by_id: bool  # v13+: topics named by id
    read_committed: bool
    max_bytes: int


def _leader_log(broker: PartitionLogView, entry: dict, name, idx: int, requested_epoch: int):
    """The partition's log, or None with entry's error_code set (unknown partition or
    a stale current_leader_epoch, KIP-320)."""
    plog = broker.logs.get_log(name, idx)
    if plog is None:
        entry["error_code"] = (ErrorCode.KAFKA_STORAGE_ERROR if (name, idx) in broker.logs.offline_logs
                               else UNKNOWN_TOPIC_OR_PARTITION)
        return None
    code = check_leader_epoch(requested_epoch, broker.leader_epoch(plog))
    if code:
        entry["error_code"] = code
        return None
    return plog


# ---- Fetch -----------------------------------------------------------------

def _read_all(broker: PartitionLogView, req: _FetchRequest) -> tuple[list, int, bool]:
    """One pass over the request's partitions: (responses, bytes, any_error)."""
    remaining = req.max_bytes
    total = 0
    errors = False
    first = True
    out = []
    logs = broker.logs
    for t in req.topics:
        name = t.get("topic") or None  # v13+: the name dispatch gave the topic id (topic_ids), None if none has it
        parts = []
        for p in t["partitions"]:
            idx = p["partition"]
            plog = logs.get_log(name, idx) if name is not None else None
            entry = {"partition_index": idx, "error_code": NONE, "high_watermark": -1,
                     "last_stable_offset": -1, "log_start_offset": -1,
                     "aborted_transactions": [] if req.read_committed else None,
                     "preferred_read_replica": -1, "records": EMPTY}
            parts.append(entry)
            if plog is None:
                entry["error_code"] = (ErrorCode.UNKNOWN_TOPIC_ID if req.by_id and name not in logs.topics
                                       else ErrorCode.KAFKA_STORAGE_ERROR if (name, idx) in logs.offline_logs
                                       else UNKNOWN_TOPIC_OR_PARTITION)
                errors = True
                continue
            code = check_leader_epoch(p["current_leader_epoch"], broker.leader_epoch(plog))
            entry["high_watermark"] = plog.high_watermark
            entry["last_stable_offset"] = plog.last_stable_offset
            entry["log_start_offset"] = plog.log_start_offset
            if code:
                entry["error_code"] = code
                errors = True
                continue
            limit = min(p["partition_max_bytes"], remaining)
            if limit <= 0 and not first:
                continue
            try:
                sl = plog.read(p["fetch_offset"], max(limit, 0),
                               upper_bound=plog.last_stable_offset if req.read_committed else None,
                               min_one_batch=first, partial_tail=True)
            except Exception as e:  # noqa: BLE001 - per-partition error
                entry["error_code"], _ = code_of(e)
                errors = True
                continue
            if sl.length:
                entry["records"] = sl
                if req.read_committed:
                    entry["aborted_transactions"] = [
                        {"producer_id": a.producer_id, "first_offset": a.first_offset}
                        for a in plog.aborted_transactions(p["fetch_offset"], plog.last_stable_offset)]
                total += sl.length
                remaining -= sl.length
                first = False
        item = {"topic": name or "", "partitions": parts}
        if req.by_id:
            item["topic_id"] = t["topic_id"]
        out.append(item)
    return out, total, errors


def _fetch_answer(broker: PartitionLogView, responses: list) -> dict:
    broker.stats.fetched(responses)  # bytes out per topic: once per answer, not per read pass
    return {"throttle_time_ms": 0, "error_code": NONE, "session_id": 0, "responses": responses}


def fetch(broker: PartitionLogView, ctx: RequestContext, body: dict):
    """Read every requested partition; when that is under min_bytes, wait (up to
    max_wait_ms) for appends to the partitions and read again."""
    if body["session_epoch"] not in (0, -1):
        # an incremental fetch for a session we never created (we answer
        # full requests with session_id 0, so no session ever exists)
        return {"throttle_time_ms": 0, "error_code": ErrorCode.FETCH_SESSION_ID_NOT_FOUND, "session_id": 0,
                "responses": []}
    max_bytes = min(body["max_bytes"], broker.config["fetch.max.bytes"])
    cap = fetch_byte_cap(broker, ctx)  # more than the quota allows would be throttled for sure
    if cap is not None:
        max_bytes = min(max_bytes, cap)
    req = _FetchRequest(body["topics"], ctx.api_version >= 13, body["isolation_level"] == READ_COMMITTED, max_bytes)
    min_bytes = min(body["min_bytes"], max_bytes)
    max_wait = body["max_wait_ms"]
    responses, total, errors = _read_all(broker, req)
    if total >= min_bytes or max_wait <= 0 or errors or not responses or broker.state.stopping:
        return _fetch_answer(broker, responses)
    keys = [(t["topic"], p["partition_index"]) for t in responses for p in t["partitions"]]
    return _long_poll(broker, req, keys, min_bytes, max_wait)


async def _long_poll(broker: PartitionLogView, req: _FetchRequest, keys: list, min_bytes: int, max_wait_ms: int) -> dict:
    deadline = broker.loop.time() + max_wait_ms / 1000.0
    while True:
        left = deadline - broker.loop.time()
        if left <= 0 or broker.state.stopping:
            break
        await broker.wait_for_append(keys, left)
        resps, got, errs = _read_all(broker, req)
        if got >= min_bytes or errs:
            return _fetch_answer(broker, resps)
    resps, _, _ = _read_all(broker, req)
    return _fetch_answer(broker, resps)


def fetch_error(body, version, code, msg):
    """The fetch as a whole failed with `code`."""
    return {"throttle_time_ms": 0, "error_code": code, "session_id": 0, "responses": []}


# ---- ListOffsets -----------------------------------------------------------

def _list_offset(broker: PartitionLogView, name: str, p: dict, version: int, read_committed: bool) -> dict:
    idx = p["partition_index"]
    entry = {"partition_index": idx, "error_code": NONE, "old_style_offsets": [],
             "timestamp": -1, "offset": -1, "leader_epoch": -1}
    plog = _leader_log(broker, entry, name, idx, p["current_leader_epoch"])
    if plog is None:
        return entry
    ts = p["timestamp"]
    if ts == EARLIEST_LOCAL:  # every segment is local here
        ts = EARLIEST
    try:
        if ts <= LATEST_TIERED:  # and later specials: nothing is tiered
            found = None
        elif ts == LATEST:
            found = (plog.last_stable_offset if read_committed else plog.high_watermark, -1,
                     broker.leader_epoch(plog))
        else:
            found = plog.offset_for_timestamp(ts)
    except Exception as e:  # noqa: BLE001
        entry["error_code"], _ = code_of(e)
        return entry
    if found is not None:
        offset, timestamp, epoch = found
        entry.update(offset=offset, timestamp=timestamp, leader_epoch=epoch if epoch is not None else -1)
        if version == 0:
            entry["old_style_offsets"] = [offset]
    return entry


def list_offsets(broker: PartitionLogView, ctx: RequestContext, body: dict) -> dict:
    """The offset for each partition's timestamp (or special timestamp: latest, earliest, ...)."""
    read_committed = body["isolation_level"] == READ_COMMITTED
    return {"throttle_time_ms": 0, "topics": mirror_partitions(
        body["topics"], lambda t, p: _list_offset(broker, t["name"], p, ctx.api_version, read_committed))}


# ---- OffsetForLeaderEpoch --------------------------------------------------

def _epoch_end(broker: PartitionLogView, name: str, p: dict) -> dict:
    idx = p["partition"]
    entry = {"error_code": NONE, "partition": idx, "leader_epoch": -1, "end_offset": -1}
    plog = _leader_log(broker, entry, name, idx, p["current_leader_epoch"])
    if plog is None:
        return entry
    try:
        epoch, end = plog.end_offset_for_epoch(p["leader_epoch"])
    except Exception as e:  # noqa: BLE001
        entry["error_code"], _ = code_of(e)
        return entry
    entry.update(leader_epoch=epoch, end_offset=end)
    return entry


def offset_for_leader_epoch(broker: PartitionLogView, ctx: RequestContext, body: dict) -> dict:
    """The end offset of each requested leader epoch (clients detect log truncation with it)."""
    return {"throttle_time_ms": 0, "topics": mirror_partitions(
        body["topics"], lambda t, p: _epoch_end(broker, t["topic"], p), name="topic")}
