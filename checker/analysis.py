"""The checker: every anomaly a history shows, each with the operations that show it."""
from __future__ import annotations

import time
from pathlib import Path

from pylog.checker.checks import bad_reads, first_readers, lost_writes, poll_order, send_order
from pylog.checker.commits import committed_starts
from pylog.checker.cycles import cycles
from pylog.checker.history import Op, read_history
from pylog.checker.log import Log
from pylog.checker.share import share_checks

# every kind the checker names, with what it means
KINDS = {
    "lost-write": "an acknowledged send never read, though later values of its partition were",
    "duplicate": "one value at two offsets",
    "inconsistent-offsets": "one offset with two values",
    "aborted-read": "a read of a value whose send failed",
    "G1a": "a read of a value written by an aborted transaction",
    "read-uncommitted": "a read of a transaction's value before the transaction began to commit",
    "poll-skip": "a consumer skipped values of a partition it kept reading",
    "nonmonotonic-poll": "a consumer went back in a partition it kept reading",
    "nonmonotonic-send": "a producer's later send to a partition got a lower offset",
    "commit-skip": "a consumer assigned a partition started past its group's committed offset",
    "commit-reread": "a consumer assigned a partition started before its group's committed offset",
    "double-accept": "a share-group record accepted twice",
    "delivery-count-decrease": "a share-group record delivered later with a lower delivery count",
    "release-lost": "a released share-group record never delivered again",
    "G0": "a cycle of write-write dependencies between operations",
    "G1b": "a read of a transaction's intermediate write to a partition",
    "G1c": "a cycle of write-write and write-read dependencies between operations",
}
KEEP = 100  # anomalies of one kind kept in the results (all are counted)


def analyze(ops: list[Op]) -> dict:
    """The results of checking `ops`: {"valid", "anomaly_counts", "anomalies", "stats"}."""
    t0 = time.monotonic()
    log = Log(ops)
    readers = first_readers(log)
    lost, unseen = lost_writes(log, readers)
    found = list(log.anomalies) + lost + bad_reads(log) + poll_order(log) + send_order(log)
    found += committed_starts(log) + share_checks(log) + cycles(log)
    counts: dict[str, int] = {}
    kept = []
    for a in found:
        n = counts.get(a["kind"], 0)
        counts[a["kind"]] = n + 1
        if n < KEEP:
            a["ops"] = [ops[i].index for i in a["ops"]]
            kept.append(a)
    by_index = {}
    wanted = {i for a in kept for i in a["ops"]}
    for op in ops:
        if op.index in wanted:
            by_index[op.index] = _event(op)
    for a in kept:
        a["events"] = [by_index[i] for i in a["ops"]]
    sent_ok = sum(1 for _k, _v, off, i in log.sends if off is not None and ops[i].type == "ok")
    stats = {"operations": len(ops), "sends": len(log.sends), "acknowledged_sends": sent_ok,
             "values_read": len(readers), "unseen": unseen, "keys": len(log.order),
             "seconds": round(time.monotonic() - t0, 3)}
    return {"valid": not found, "anomaly_counts": dict(sorted(counts.items())), "anomalies": kept,
            "stats": stats}


def analyze_dir(directory: Path) -> dict:
    return analyze(read_history(Path(directory)))


def _event(op: Op) -> dict:
    e = {"index": op.index, "process": op.process, "type": op.type, "f": op.f, "start": op.start,
         "time": op.time, "value": op.value}
    e.update(op.extra)
    return e
