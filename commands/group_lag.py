"""Lag in time, consumption rate and catch-up estimate for `pylog groups describe`.

Kafka's tools give lag in records only; what an operator wants to know is how far behind in
time a group is and whether it is catching up. Time lag is now minus the timestamp of the next
record the group will consume (the record at its committed offset); rates come from two looks
at the committed and end offsets a short window apart.
"""
from __future__ import annotations

import time


def next_record_timestamps(props: dict, rows: list[dict], timeout_s: float = 10.0) -> dict:
    """{(topic, partition): timestamp of the record at the committed offset} for rows with a lag."""
    from pylog.core.client import Consumer, TopicPartition

    want = {(r["topic"], r["partition"]): r["current_offset"] for r in rows if r.get("lag")}
    found: dict = {}
    if not want:
        return found
    with Consumer({**props, "enable.auto.commit": "false", "auto.offset.reset": "earliest",
                   "max.partition.fetch.bytes": 65536}) as c:
        tps = [TopicPartition(t, p) for t, p in want]
        c.assign(tps)
        for tp in tps:
            c.seek(tp, want[(tp.topic, tp.partition)])
        deadline = time.monotonic() + timeout_s
        while len(found) < len(want) and time.monotonic() < deadline:
            for tp, records in c.poll(200).items():
                key = (tp.topic, tp.partition)
                if key not in found and records:
                    # a compacted log may have a gap at the committed offset: the next record is what counts
                    found[key] = records[0].timestamp
                    c.pause([tp])
    return found


def add_lag_figures(before: list[dict], after: list[dict], window_s: float, timestamps: dict,
                    now_ms: int) -> dict:
    """Fill time lag and rates into `after` (in place); return the group's totals."""
    prev = {(r["topic"], r["partition"]): r for r in before}
    consume = produce = 0.0
    lag_records = 0
    max_time_lag = 0
    for r in after:
        key = (r["topic"], r["partition"])
        ts = timestamps.get(key)
        r["lag_ms"] = (max(0, now_ms - ts) if ts is not None else None) if r.get("lag") else (
            0 if r.get("lag") == 0 else None)
        p = prev.get(key)
        if window_s > 0 and p is not None:
            c0, c1 = p.get("current_offset"), r.get("current_offset")
            e0, e1 = p.get("log_end_offset"), r.get("log_end_offset")
            r["consume_rate"] = (c1 - c0) / window_s if c0 is not None and c1 is not None else None
            r["produce_rate"] = (e1 - e0) / window_s if e0 is not None and e1 is not None else None
            consume += r["consume_rate"] or 0.0
            produce += r["produce_rate"] or 0.0
        else:
            r["consume_rate"] = r["produce_rate"] = None
        lag_records += r.get("lag") or 0
        if r["lag_ms"]:
            max_time_lag = max(max_time_lag, r["lag_ms"])
    totals = {"lag": lag_records, "max_lag_ms": max_time_lag,
              "consume_rate": consume if window_s > 0 else None,
              "produce_rate": produce if window_s > 0 else None,
              "rate_window_s": window_s, "catch_up_s": None}
    if lag_records == 0:
        totals["catch_up_s"] = 0.0
    elif window_s > 0 and consume > produce:
        totals["catch_up_s"] = lag_records / (consume - produce)
    return totals


def human_duration(ms) -> str:
    """12ms, 3.4s, 5m07s, 2h03m, 3d04h: short, sortable by eye."""
    if ms is None:
        return "-"
    s = ms / 1000
    if s < 1:
        return f"{int(ms)}ms"
    if s < 60:
        return f"{s:.1f}s"
    m, s = divmod(int(s), 60)
    if m < 60:
        return f"{m}m{s:02d}s"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h}h{m:02d}m"
    d, h = divmod(h, 24)
    return f"{d}d{h:02d}h"


def summary_line(totals: dict) -> str:
    """The group's lag, rates and when it catches up, in one line."""
    parts = [f"lag {totals['lag']:,} records, {human_duration(totals['max_lag_ms'])} behind"]
    if totals["consume_rate"] is not None:
        parts.append(f"consuming {totals['consume_rate']:,.1f}/s, produced {totals['produce_rate']:,.1f}/s "
                     f"(over {totals['rate_window_s']:.1f}s)")
        if totals["catch_up_s"] is None:
            parts.append("not catching up")
        elif totals["lag"]:
            parts.append(f"caught up in about {human_duration(totals['catch_up_s'] * 1000)}")
        else:
            parts.append("caught up")
    return "; ".join(parts)
