"""Checks over one key at a time: lost writes, aborted and uncommitted reads, the order of polls
and sends per client, and where a consumer starts after its group assigns it a partition."""
from __future__ import annotations

from bisect import bisect_left

from pylog.checker.history import FAIL, OK
from pylog.checker.log import Log, anomaly

SHOWN = 5  # values named in one anomaly's detail


def _few(values) -> str:
    values = list(values)
    more = f" and {len(values) - SHOWN} more" if len(values) > SHOWN else ""
    return ", ".join(map(str, values[:SHOWN])) + more


def first_readers(log: Log) -> dict[int, int]:
    first: dict[int, int] = {}
    for i, _key, pairs in log.reads:
        for _o, v in pairs:
            if v not in first:
                first[v] = i
    for i, _key, recs in log.deliveries:
        for r in recs:
            if r[1] not in first:
                first[r[1]] = i
    return first


def lost_writes(log: Log, readers: dict[int, int]) -> tuple[list[dict], int]:
    """Acknowledged sends at or below the highest offset read of their key that nobody ever read
    (whether a later value was read, or another value at their very offset).

    Returns the anomalies and the count of acknowledged sends above it (unseen, not lost)."""
    found, unseen = [], 0
    ops = log.ops
    read_at: dict[str, list[tuple]] = {}
    for v in readers:
        key, offset = log.place[v]
        read_at.setdefault(key, []).append((offset, v))
    for rows in read_at.values():
        rows.sort()
    for key, value, offset, w in log.sends:
        if offset is None or ops[w].type != OK or value in readers:
            continue
        rows = read_at.get(key)
        if not rows or rows[-1][0] < offset:
            unseen += 1
            continue
        later_offset, later = rows[bisect_left(rows, (offset, -(1 << 62)))]
        where = "at that offset" if later_offset == offset else f"at offset {later_offset}"
        found.append(anomaly("lost-write", (w, readers[later]),
                             f"{value} was acknowledged at {key}@{offset}, but never read, though {later} "
                             f"{where} was", key=key, value=value, offset=offset))
    return found, unseen


def bad_reads(log: Log) -> list[dict]:
    """Reads of values whose writer failed (aborted reads, G1a for a transaction), and reads of
    a transaction's values before it began to commit (reads of uncommitted data)."""
    found = []
    ops, writer = log.ops, log.writer
    for i, key, pairs in log.reads:
        reader = ops[i]
        for offset, v in pairs:
            w = writer.get(v)
            if w is None:
                continue
            wo = ops[w]
            if wo.type == FAIL:
                kind = "G1a" if wo.f == "txn" else "aborted-read"
                found.append(anomaly(kind, (w, i), f"{v} at {key}@{offset} was read, but its "
                                     f"{'transaction aborted' if wo.f == 'txn' else 'send failed'}",
                                     key=key, value=v, offset=offset))
            elif w == i:
                found.append(anomaly("read-uncommitted", (i,), f"a transaction read its own write {v} at "
                                     f"{key}@{offset} before committing", key=key, value=v, offset=offset))
            elif wo.f == "txn" and reader.time < wo.extra.get("commit_at", -1):
                found.append(anomaly("read-uncommitted", (w, i), f"{v} at {key}@{offset} was read before "
                                     "its transaction began to commit", key=key, value=v, offset=offset))
    return found


def poll_order(log: Log) -> list[dict]:
    """Each consumer reads a key in version order with nothing skipped, until its assignment
    changes (assign, subscribe, rebalance) or the client is replaced (a new process)."""
    found = []
    ops, pos, order, writer = log.ops, log.pos, log.order, log.writer
    last: dict[tuple, tuple] = {}
    for i, op in enumerate(ops):
        f = op.f
        if f == "assign" or f == "subscribe":
            for k in [k for k in last if k[0] == op.process]:
                del last[k]
            continue
        if f == "rebalance":
            for key in op.value.get("assigned", ()) + op.value.get("revoked", ()):
                last.pop((op.process, key), None)
            continue
        if (f != "poll" and f != "txn") or op.type == FAIL:
            continue
        for mop in op.value:
            if mop[0] != "poll" or len(mop) < 2:
                continue
            for key, pairs in mop[1].items():
                lk = (op.process, key)
                prev = last.get(lk)
                for _offset, v in pairs:
                    p = pos[v]
                    if prev is not None and p != prev[0] + 1:
                        found.extend(_disorder(log, key, prev, p, i))
                    prev = (p, i)
                if prev is not None:
                    last[lk] = prev
    return found


def _disorder(log: Log, key: str, prev: tuple, p: int, i: int) -> list[dict]:
    q, j = prev
    order, writer, ops = log.order[key], log.writer, log.ops
    where = "within one poll" if i == j else "between two polls"
    if p <= q:
        return [anomaly("nonmonotonic-poll", (j, i), f"{where} of one consumer, {key} went from {order[q]} "
                        f"(offset {log.offset[order[q]]}) back to {order[p]} (offset {log.offset[order[p]]})",
                        key=key, values=[order[q], order[p]])]
    skipped = order[q + 1:p]
    found = [anomaly("poll-skip", (j, i, writer.get(skipped[0])), f"{where} of one consumer, {key} went "
                     f"from {order[q]} to {order[p]}, skipping {_few(skipped)}", key=key,
                     values=[order[q], order[p]], skipped=skipped[:SHOWN])]
    w = writer.get(order[q])
    if w is not None and ops[w].f == "txn" and writer.get(skipped[0]) == w:
        found.append(anomaly("G1b", (w, j, i), f"a consumer read {order[q]} of a transaction's writes to {key} "
                             f"but not its next write {skipped[0]}: an intermediate state", key=key,
                             values=[order[q], skipped[0]]))
    return found


def send_order(log: Log) -> list[dict]:
    """Each producer's acknowledged sends to one key get rising offsets."""
    found = []
    last: dict[tuple, tuple] = {}
    ops = log.ops
    for key, value, offset, i in log.sends:
        if offset is None:
            continue
        lk = (ops[i].process, key)
        prev = last.get(lk)
        if prev is not None and offset <= prev[0]:
            found.append(anomaly("nonmonotonic-send", (prev[2], i), f"one producer sent {prev[1]} to {key} at "
                                 f"offset {prev[0]}, then {value} at offset {offset}", key=key,
                                 values=[prev[1], value]))
        last[lk] = (offset, value, i)
    return found
