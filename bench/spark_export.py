"""Benchmark: `pylog spark-export --from-dir` to Parquet on local[1] and local[2], against one
process reading the same segments with the same reader and writing the same Parquet.

    python -m bench spark-export [--records 10000000] [--dir DIR] [--masters local[1],local[2]]

Input: N records (key 10 bytes over N/10 keys, value 90 bytes) loaded into a fresh
log dir with `pylog spark-ingest --mode segments` (4 partitions, lz4). Each master runs
in a fresh `pylog spark-export ... --json` process; its job time excludes Spark's
start-up (reported beside it). The reference is this process: the planner and
`log_rows.read_task` over every segment, pyarrow writing one Parquet file per segment.
Spark's own Kafka source is not measured: Maven Central has no spark-sql-kafka-0-10
build for the installed pyspark.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.spark import make_input, spark_bench_parser, work_dir


def _pylog(*args: str, timeout: float = 3600) -> dict:
    res = subprocess.run([sys.executable, "-m", "pylog.cli", *args], capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise SystemExit(f"pylog {' '.join(args[:2])} failed ({res.returncode}): {res.stderr[-2000:]}")
    return json.loads(res.stdout)


def reference(log_dir: Path, out: Path) -> tuple[float, int]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pylog.commands.spark.log_plan import ReadOptions, plan_log_dir
    from pylog.commands.spark.log_rows import read_task

    out.mkdir(parents=True)
    t0 = time.monotonic()
    n = 0
    for plan in plan_log_dir(str(log_dir), ReadOptions(topics=("bench",))):
        for i, task in enumerate(plan.tasks):
            batches = list(read_task(task))
            if batches:
                pq.write_table(pa.Table.from_batches(batches), out / f"{plan.partition}-{i}.parquet",
                               compression="zstd")
                n += sum(b.num_rows for b in batches)
    return time.monotonic() - t0, n


def main(argv: list[str]) -> int:
    a = spark_bench_parser("python -m bench spark-export", "local[1],local[2]").parse_args(argv)
    work = work_dir(a.dir, "bench-spark-export-")
    src = work / "input.csv"
    log_dir = work / "logs"
    t0 = time.monotonic()
    make_input(src, a.records)
    _pylog("spark-ingest", str(src), "-t", "bench", "--format", "csv", "--no-csv-header", "--key-column", "_c0",
           "--value-column", "_c1", "--mode", "segments", "--log-dir", str(log_dir), "--partitions", "4",
           "--compression", "lz4", "--master", "local[2]", "--json")
    print(f"loaded {a.records:,} records in {time.monotonic() - t0:.1f} s")
    ref_s, ref_n = reference(log_dir, work / "reference")
    assert ref_n == a.records, (ref_n, a.records)
    rows = [("one process (read_task + pyarrow)", ref_s, None)]
    for master in a.masters.split(","):
        out = work / f"out-{master.strip('[]').replace('[', '')}"
        shutil.rmtree(out, ignore_errors=True)
        doc = _pylog("spark-export", "bench", "--from-dir", str(log_dir), "-o", str(out), "--master", master, "--json")
        assert doc["records"] == a.records, doc["records"]
        rows.append((f"spark-export {master}", doc["job_seconds"], doc["spark_startup_seconds"]))
    print(f"\n{'run':40} {'seconds':>8} {'records/s':>12} {'vs one process':>15} {'spark start-up':>15}")
    for name, sec, start in rows:
        print(f"{name:40} {sec:8.1f} {a.records / sec:12,.0f} {ref_s / sec:14.2f}x "
              f"{'' if start is None else f'{start:.1f} s':>15}")
    times = dict((n, s) for n, s, _ in rows)
    if "spark-export local[1]" in times and "spark-export local[2]" in times:
        print(f"\nscaling local[2] / local[1]: {times['spark-export local[1]'] / times['spark-export local[2]']:.2f}x")
    return 0
