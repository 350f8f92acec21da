"""Share groups (queues): each record accepted at most once, its delivery count only rising,
and a released record delivered again."""
from __future__ import annotations

from bisect import bisect_right

from pylog.checker.history import OK
from pylog.checker.log import Log, anomaly

ATTEMPT_LIMIT = 5  # group.share.delivery.attempt.limit's default: a record delivered this often is archived


def share_checks(log: Log) -> list[dict]:
    ops = log.ops
    accepted: dict[tuple, list[int]] = {}
    released: list[tuple] = []
    for i, op in enumerate(ops):
        if op.f != "share-ack" or op.type != OK:
            continue
        failed = set(op.value.get("failed", ()))
        for key, offsets in op.value.get("accept", {}).items():
            if key not in failed:
                for o in offsets:
                    accepted.setdefault((key, o), []).append(i)
        for key, offsets in op.value.get("release", {}).items():
            if key not in failed:
                released.extend((key, o, op.time, i) for o in offsets)
    found = [anomaly("double-accept", acks[:2], f"{key}@{o} was accepted by {len(acks)} acknowledgements "
                     "that succeeded", key=key, offset=o)
             for (key, o), acks in accepted.items() if len(acks) > 1]
    deliveries: dict[tuple, list[tuple]] = {}
    for i, key, recs in log.deliveries:
        op = ops[i]
        for offset, _value, count in recs:
            deliveries.setdefault((key, offset), []).append((op.start, op.time, count, i))
    for (key, offset), ds in deliveries.items():
        if len(ds) > 1:
            found.extend(_counts(key, offset, ds))
    found.extend(_released_lost(log, released, deliveries))
    return found


def _counts(key, offset, ds) -> list[dict]:
    """A delivery that began after another had ended must not show a lower delivery count."""
    ds.sort(key=lambda d: d[1])
    for a in ds:
        for b in ds:
            if a[1] < b[0] and b[2] < a[2]:
                return [anomaly("delivery-count-decrease", (a[3], b[3]), f"{key}@{offset} was delivered with "
                                f"delivery count {a[2]}, then later with {b[2]}", key=key, offset=offset)]
    return []


def _released_lost(log: Log, released, deliveries) -> list[dict]:
    """A released record never delivered again, though its partition delivered later records
    to fetches that began after the release."""
    if not released:
        return []
    later: dict[str, tuple] = {}   # key -> (starts sorted, suffix max offset, op at that max)
    per_key: dict[str, list] = {}
    for i, key, recs in log.deliveries:
        per_key.setdefault(key, []).append((log.ops[i].start, max(r[0] for r in recs), i))
    for key, rows in per_key.items():
        rows.sort()
        suffix, best = [], (-1, None)
        for start, hi, i in reversed(rows):
            if hi > best[0]:
                best = (hi, i)
            suffix.append(best)
        suffix.reverse()
        later[key] = ([r[0] for r in rows], suffix)
    found = []
    for key, offset, t, i in released:
        ds = deliveries.get((key, offset), ())
        if any(d[1] > t for d in ds) or max((d[2] for d in ds), default=0) >= ATTEMPT_LIMIT:
            continue
        starts, suffix = later.get(key, ((), ()))
        j = bisect_right(starts, t)
        if j < len(starts) and suffix[j][0] > offset:
            found.append(anomaly("release-lost", (i, suffix[j][1]), f"{key}@{offset} was released but never "
                                 f"delivered again, though a later fetch delivered offset {suffix[j][0]}",
                                 key=key, offset=offset))
    return found
