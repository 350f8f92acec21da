"""`python -m bench spark-export --cold-rounds N`: the cold figure as a measurement, not one sample.

Round 1 is the bench's own run (its rows' cold jobs); rounds 2..N run every path again on each
local master, each export in a fresh process (so its job is cold, as one `pylog spark-export`
is), the masters' order alternating round by round (round 2 starts with the last master, round 3
with the first, ...) so that local[1] and local[2] meet the same load on average. Printed per
run: median, min, max and spread of the cold job, and per path the scaling of the medians beside
the ratios of the rounds' pairs and the ratio of the fastest samples (noise only adds time), with
F (wall time outside the tasks) and T (the tasks' CPU) as medians over the rounds, and the 1-minute
load average as each sample ended (above 2 on this 2-core machine, others were using the cores).
"""
from __future__ import annotations

import os
import statistics
import time


def cold_rounds(rows: list, n: int, masters: list, run) -> dict:
    """{row name: [{"job", "timeline"} per round]}: round 1 from `rows` (the runs on `masters`),
    rounds 2..n from `run(name, master)`, which returns the rows of one master's runs, cold."""
    samples: dict[str, list] = {}

    def add(row):
        samples.setdefault(row["name"], []).append({"job": row["job"], "timeline": row.get("timeline"),
                                                    "load": row.get("load", os.getloadavg()[0])})

    for row in rows:
        if any(row["name"].endswith(f" {m}") for m in masters):
            add(row)
    for r in range(2, n + 1):
        order = list(reversed(masters)) if r % 2 == 0 else list(masters)
        t0 = time.monotonic()
        for m in order:
            for row in run(m, m):
                add(row)
        line = ", ".join(f"{name} {s[-1]['job']:.1f} s" for name, s in samples.items())
        print(f"cold round {r}/{n} ({' then '.join(order)}, {time.monotonic() - t0:.0f} s): {line}", flush=True)
    return samples


def outside_tasks(sample: dict) -> float | None:
    """F of one cold sample: its job's wall time outside its tasks (None without a timeline)."""
    tl = sample.get("timeline") or {}
    return max(0.0, sample["job"] - tl["tasks_seconds"]) if tl.get("tasks") else None


def _median(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def print_rounds(samples: dict, n: int) -> None:
    print(f"\ncold jobs over {n} rounds (each a fresh process; masters interleaved, order alternating)")
    print(f"{'run':40} {'median s':>9} {'min s':>7} {'max s':>7} {'spread':>7} {'F median':>9} {'T median':>9}  samples (load average)")
    for name, s in samples.items():
        jobs = [x["job"] for x in s]
        med = statistics.median(jobs)
        f = _median([outside_tasks(x) for x in s])
        t = _median([(x.get("timeline") or {}).get("task_cpu_seconds") for x in s])
        print(f"{name:40} {med:9.2f} {min(jobs):7.2f} {max(jobs):7.2f} {(max(jobs) - min(jobs)) / med:6.0%} "
              f"{'-' if f is None else f'{f:.2f}':>9} {'-' if t is None else f'{t:.2f}':>9}  "
              + " ".join(f"{x['job']:.1f} ({x['load']:.1f})" for x in s))
    prefixes = list(dict.fromkeys(name.rsplit(" ", 1)[0] for name in samples))
    for src in prefixes:
        one, two = samples.get(f"{src} local[1]"), samples.get(f"{src} local[2]")
        if not one or not two:
            continue
        m1, m2 = statistics.median(x["job"] for x in one), statistics.median(x["job"] for x in two)
        ratios = [a["job"] / b["job"] for a, b in zip(one, two)]
        print(f"cold scaling {src} local[2] / local[1], medians: {m1 / m2:.2f}x ({m1:.2f} s / {m2:.2f} s); "
              f"per round {' '.join(f'{r:.2f}' for r in ratios)}: median {statistics.median(ratios):.2f}x, "
              f"{min(ratios):.2f}-{max(ratios):.2f}x; fastest {min(x['job'] for x in one) / min(x['job'] for x in two):.2f}x")
        f = _median([outside_tasks(x) for x in one])
        t = _median([(x.get("timeline") or {}).get("task_cpu_seconds") for x in one])
        if f is not None and t:
            print(f"  {src} local[1] cold medians: F {f:.2f} s outside the tasks, T {t:.2f} s of task CPU: "
                  f"expected local[2]/local[1] on two free cores {(f + t) / (f + t / 2):.2f}x")
