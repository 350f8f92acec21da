"""Fetch (with min.bytes/max.wait.ms long polls), ListOffsets, OffsetForLeaderEpoch.

Fetch is sessionless (KIP-227 sessions save request bytes between replicas
and busy clients; one node with a handful of partitions per request gains
little): every answer carries session_id 0, which tells a client asking for a
session that none was created, so it keeps sending full requests. The record
bytes are storage FetchSlices that the server sends with os.sendfile.
"""
from __future__ import annotations

import asyncio
import uuid

from pylog.commands.broker.apis import Api, code_of
from pylog.commands.broker.broker import check_leader_epoch

ZERO_UUID = uuid.UUID(int=0)
EMPTY = b""


def apis(broker) -> list[Api]:
    def resolve(t, by_id):
        if by_id:
            tid = t.get("topic_id")
            info = broker.topic_by_id(tid) if tid not in (None, ZERO_UUID) else None
            return (info.name if info else None), tid
        return t.get("topic"), None

    def leader_log(entry, name, idx, requested_epoch):
        """The partition's log, or None with entry's error_code set (unknown partition or
        a stale current_leader_epoch, KIP-320)."""
        plog = broker.logs.get_log(name, idx)
        if plog is None:
            entry["error_code"] = 3
            return None
        code = check_leader_epoch(requested_epoch, broker.leader_epoch(plog))
        if code:
            entry["error_code"] = code
            return None
        return plog

    def read_all(body, by_id, read_committed, max_total):
        """One pass over the request's partitions: (responses, bytes, any_error)."""
        remaining = max_total
        total = 0
        errors = False
        first = True
        out = []
        for t in body.get("topics") or []:
            name, tid = resolve(t, by_id)
            parts = []
            for p in t.get("partitions") or []:
                idx = p.get("partition", 0)
                plog = broker.logs.get_log(name, idx) if name is not None else None
                entry = {"partition_index": idx, "error_code": 0, "high_watermark": -1, "last_stable_offset": -1,
                         "log_start_offset": -1, "aborted_transactions": [] if read_committed else None,
                         "preferred_read_replica": -1, "records": EMPTY}
                parts.append(entry)
                if plog is None:
                    entry["error_code"] = 100 if by_id and name is None else 3
                    errors = True
                    continue
                code = check_leader_epoch(p.get("current_leader_epoch", -1), broker.leader_epoch(plog))
                hw = plog.high_watermark
                entry["high_watermark"] = hw
                entry["last_stable_offset"] = plog.last_stable_offset
                entry["log_start_offset"] = plog.log_start_offset
                if code:
                    entry["error_code"] = code
                    errors = True
                    continue
                limit = min(p.get("partition_max_bytes", 0), remaining)
                if limit <= 0 and not first:
                    continue
                try:
                    sl = plog.read(p.get("fetch_offset", 0), max(limit, 0),
                                   upper_bound=plog.last_stable_offset if read_committed else None,
                                   min_one_batch=first)
                except Exception as e:  # noqa: BLE001 - per-partition error
                    entry["error_code"], _ = code_of(e)
                    errors = True
                    continue
                if sl.length:
                    entry["records"] = sl
                    total += sl.length
                    remaining -= sl.length
                    first = False
            item = {"topic": name or "", "partitions": parts}
            if by_id:
                item["topic_id"] = tid
            out.append(item)
        return out, total, errors

    def fetch(ctx, body):
        v = ctx.api_version
        by_id = v >= 13
        epoch = body.get("session_epoch", -1)
        if epoch not in (0, -1):
            # an incremental fetch for a session we never created (we answer
            # full requests with session_id 0, so no session ever exists)
            return {"throttle_time_ms": 0, "error_code": 70, "session_id": 0, "responses": []}
        read_committed = body.get("isolation_level", 0) == 1
        max_total = body.get("max_bytes", 0x7FFFFFFF) if v >= 3 else 0x7FFFFFFF
        max_total = min(max_total, broker.config["fetch.max.bytes"])
        min_bytes = body.get("min_bytes", 1)
        max_wait = body.get("max_wait_ms", 0)
        responses, total, errors = read_all(body, by_id, read_committed, max_total)

        def answer(resps):
            return {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": resps}

        if total >= min_bytes or max_wait <= 0 or errors or not responses or broker.stopping:
            return answer(responses)

        keys = [(t["topic"], p["partition_index"]) for t in responses for p in t["partitions"]]

        async def long_poll():
            deadline = broker.loop.time() + max_wait / 1000.0
            resps = responses
            while True:
                left = deadline - broker.loop.time()
                if left <= 0 or broker.stopping:
                    break
                fut = broker.new_waiter(keys)
                try:
                    await asyncio.wait_for(fut, left)
                except asyncio.TimeoutError:
                    pass
                finally:
                    broker.drop_waiter(fut, keys)
                resps, got, errs = read_all(body, by_id, read_committed, max_total)
                if got >= min_bytes or errs:
                    return answer(resps)
            resps, _, _ = read_all(body, by_id, read_committed, max_total)
            return answer(resps)

        return long_poll()

    def fetch_error(body, version, code, msg):
        return {"throttle_time_ms": 0, "error_code": code, "session_id": 0, "responses": []}

    # ---- ListOffsets ----------------------------------------------------
    def list_offsets(ctx, body):
        v = ctx.api_version
        read_committed = body.get("isolation_level", 0) == 1
        out = []
        for t in body.get("topics") or []:
            name = t.get("name")
            parts = []
            for p in t.get("partitions") or []:
                idx = p.get("partition_index", 0)
                entry = {"partition_index": idx, "error_code": 0, "old_style_offsets": [], "timestamp": -1,
                         "offset": -1, "leader_epoch": -1}
                parts.append(entry)
                plog = leader_log(entry, name, idx, p.get("current_leader_epoch", -1))
                if plog is None:
                    continue
                ts = p.get("timestamp", -1)
                if ts == -4:  # EARLIEST_LOCAL: every segment is local here
                    ts = -2
                try:
                    if ts <= -5:  # LATEST_TIERED and later specials: nothing is tiered
                        found = None
                    elif ts == -1:
                        found = (plog.last_stable_offset if read_committed else plog.high_watermark, -1,
                                 broker.leader_epoch(plog))
                    else:
                        found = plog.offset_for_timestamp(ts)
                except Exception as e:  # noqa: BLE001
                    entry["error_code"], _ = code_of(e)
                    continue
                if found is not None:
                    offset, timestamp, epoch = found
                    entry.update(offset=offset, timestamp=timestamp, leader_epoch=epoch if epoch is not None else -1)
                    if v == 0:
                        entry["old_style_offsets"] = [offset]
            out.append({"name": name, "partitions": parts})
        return {"throttle_time_ms": 0, "topics": out}

    def list_offsets_error(body, version, code, msg):
        out = [{"name": t.get("name"), "partitions": [
            {"partition_index": p.get("partition_index", 0), "error_code": code, "timestamp": -1, "offset": -1,
             "leader_epoch": -1} for p in t.get("partitions") or []]} for t in body.get("topics") or []]
        return {"throttle_time_ms": 0, "topics": out}

    # ---- OffsetForLeaderEpoch ---------------------------------------------
    def offset_for_leader_epoch(ctx, body):
        out = []
        for t in body.get("topics") or []:
            name = t.get("topic")
            parts = []
            for p in t.get("partitions") or []:
                idx = p.get("partition", 0)
                entry = {"error_code": 0, "partition": idx, "leader_epoch": -1, "end_offset": -1}
                parts.append(entry)
                plog = leader_log(entry, name, idx, p.get("current_leader_epoch", -1))
                if plog is None:
                    continue
                try:
                    epoch, end = plog.end_offset_for_epoch(p.get("leader_epoch", -1))
                except Exception as e:  # noqa: BLE001
                    entry["error_code"], _ = code_of(e)
                    continue
                entry.update(leader_epoch=epoch, end_offset=end)
            out.append({"topic": name, "partitions": parts})
        return {"throttle_time_ms": 0, "topics": out}

    def offset_for_leader_epoch_error(body, version, code, msg):
        out = [{"topic": t.get("topic"), "partitions": [
            {"error_code": code, "partition": p.get("partition", 0), "leader_epoch": -1, "end_offset": -1}
            for p in t.get("partitions") or []]} for t in body.get("topics") or []]
        return {"throttle_time_ms": 0, "topics": out}

    return [
        Api(1, fetch, 4, 16, fetch_error),
        Api(2, list_offsets, 1, 9, list_offsets_error),
        Api(23, offset_for_leader_epoch, 0, 4, offset_for_leader_epoch_error),
    ]
