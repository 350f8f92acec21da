"""Committed offsets: a consumer given a partition by its group starts at the group's committed
offset: not past it (the records between are skipped) and not before it (records the group had
committed as processed are read again)."""
from __future__ import annotations

from bisect import bisect_left, bisect_right

from pylog.checker.history import FAIL, OK
from pylog.checker.log import Log, anomaly


def group_commits(log: Log) -> dict[tuple, list[tuple]]:
    """(group, key) -> [(start, time, type, offset, op position)] by completion time: commits
    and the offsets transactions committed with them."""
    commits: dict[tuple, list[tuple]] = {}
    for i, op in enumerate(log.ops):
        if op.type == FAIL:
            continue
        if op.f == "commit":
            group, offsets = op.value["group"], op.value["offsets"]
        elif op.f == "txn" and "offsets" in op.extra:
            group, offsets = op.extra["group"], op.extra["offsets"]
        else:
            continue
        for key, offset in offsets.items():
            commits.setdefault((group, key), []).append((op.start, op.time, op.type, offset, i))
    return commits


class Commits:
    """One (group, key)'s commits by completion time, with the longest one's duration."""

    def __init__(self, rows: list[tuple]):
        rows.sort(key=lambda c: c[1])
        self.rows = rows
        self.times = [c[1] for c in rows]
        self.ok_times = [c[1] for c in rows if c[2] == OK]
        self.ok = [c for c in rows if c[2] == OK]
        self.longest = max((c[1] - c[0] for c in rows), default=0)


def _candidates(commits, assigned_at, read_at, reader) -> list[tuple]:
    """The commits a consumer assigned at `assigned_at` may have started from: the last that
    succeeded before, and any that may have taken effect after it and before the read."""
    if not commits:
        return []
    n = bisect_left(commits.ok_times, assigned_at)
    base = commits.ok[n - 1] if n else None
    lo = bisect_right(commits.times, base[1]) if base else 0
    hi = bisect_right(commits.times, read_at + commits.longest)
    later = [c for c in commits.rows[lo:hi] if c[4] != reader and c[0] < read_at]
    return ([base] if base else []) + later


def committed_starts(log: Log) -> list[dict]:
    commits = {k: Commits(v) for k, v in group_commits(log).items()}
    found = []
    ops = log.ops
    waiting: dict[tuple, tuple] = {}   # (process, key) -> (group, rebalance time, op position)
    for i, op in enumerate(ops):
        if op.f == "rebalance":
            for key in op.value.get("assigned", ()):
                waiting[(op.process, key)] = (op.value.get("group"), op.time, i)
            for key in op.value.get("revoked", ()):
                waiting.pop((op.process, key), None)
            continue
        if op.f == "assign" or op.f == "subscribe":
            for k in [k for k in waiting if k[0] == op.process]:
                del waiting[k]
            continue
        if (op.f != "poll" and op.f != "txn") or op.type == FAIL or not waiting:
            continue
        for mop in op.value:
            if mop[0] != "poll" or len(mop) < 2:
                continue
            for key, pairs in mop[1].items():
                w = waiting.pop((op.process, key), None) if pairs else None
                if w is not None:
                    bad = _check_start(log, commits.get((w[0], key)), key, pairs[0], w, op, i)
                    if bad is not None:
                        found.append(bad)
    return found


def _check_start(log: Log, commits, key, first, w, op, i):
    group, assigned_at, rebalance = w
    candidates = _candidates(commits, assigned_at, op.time, i)
    offsets = [c[3] for c in candidates] or [0]
    offset, value = first
    p = log.pos[value]
    expected = [log.first_at_or_after(key, o) for o in offsets]
    if p in expected:
        return None
    order = log.order[key]
    witness = [c[4] for c in candidates[:2]] + [rebalance, i]
    if all(o > offset for o in offsets):
        return anomaly("commit-reread", witness, f"group {group} had committed {key} up to offset "
                       f"{min(offsets)}, but a consumer assigned {key} started at offset {offset} ({value}), "
                       "reading committed records again", key=key, group=group, committed=sorted(set(offsets)))
    lo = min(e for e in expected if e < p) if any(e < p for e in expected) else p
    skipped = order[lo:p]
    return anomaly("commit-skip", witness + [log.writer.get(skipped[0]) if skipped else None],
                   f"group {group} had committed {key} at offset {max(offsets)}, but a consumer assigned "
                   f"{key} started at offset {offset} ({value}), skipping "
                   + ", ".join(map(str, skipped[:5])), key=key, group=group, committed=sorted(set(offsets)),
                   skipped=skipped[:5])
