"""Benchmark: `pylog spark-export` to Parquet from a log dir (--from-dir) and through a broker (-b),
against Spark's own Kafka source (spark-sql-kafka-0-10) reading the same topic from the same broker
into the same Parquet, on local[1], local[2] and a two-worker standalone cluster.

    python -m bench spark-export [--records 10000000 | --quick] [--dir DIR]
                                 [--masters local[1],local[2],cluster]

With --dir, a log dir loaded by an earlier run there (DIR/logs) is read again, not reloaded
(give the same --records).

Input: N records (key 10 bytes over N/10 keys, value 90 bytes) loaded into a fresh
log dir with `pylog spark-ingest --mode segments` (4 partitions, lz4). `pylog broker
start` then serves that same log dir.
- `spark-export dir`: `pylog spark-export bench --from-dir DIR` (executors read the segments);
- `spark-export broker`: `pylog spark-export bench -b BOOTSTRAP` (executors fetch with pylog's client);
- `Spark Kafka source`: spark.read.format("kafka") with subscribe=bench and includeHeaders, the
  same columns selected, written as Parquet (zstd, as spark-export writes it), with the connector
  of tests/spark-kafka/pom.xml (spark-sql-kafka-0-10 4.2.0, kafka-clients 3.9.2).
Each run is a fresh process; its job time excludes Spark's start-up (reported beside it).
`cluster` is a standalone Master and two Workers (1 core, 2 GB each) from pyspark's
spark-class on loopback (tests/support/spark_fixtures.StandaloneCluster).
The reference row is one process: the planner and `log_rows.read_task` over every
segment, pyarrow writing one Parquet file per segment.
Goals (issue 32): the dir path at least 2x Spark's Kafka source; local[2]/local[1] at least 1.6x.
"""
from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

from bench.spark import make_input, spark_bench_parser, work_dir

TESTS = Path(__file__).resolve().parents[1] / "tests"


def _pylog(*args: str, timeout: float = 7200) -> dict:
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


def kafka_source_job(master: str, bootstrap: str, out: str) -> dict:
    """Run in a child: Spark's Kafka source, the topic to Parquet; {records, job_seconds, startup_seconds}."""
    sys.path.insert(0, str(TESTS))
    from pyspark.sql import SparkSession

    from support.spark_kafka import connector_jars

    t0 = time.monotonic()
    builder = (SparkSession.builder.master(master).appName("bench-kafka-source")
               .config("spark.jars", ",".join(connector_jars())).config("spark.ui.enabled", "false")
               .config("spark.sql.parquet.compression.codec", "zstd")
               .config("spark.pyspark.python", sys.executable).config("spark.executor.memory", "1536m")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1"))
    spark = builder.getOrCreate()
    spark.range(1).count()  # executors up, as `pylog spark-export` has them before its job clock
    startup = time.monotonic() - t0
    t1 = time.monotonic()
    df = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", "bench")
          .option("startingOffsets", "earliest").option("endingOffsets", "latest").option("includeHeaders", "true")
          .load().select("topic", "partition", "offset", "timestamp", "timestampType", "key", "value", "headers"))
    df.write.mode("overwrite").parquet(out)
    job = time.monotonic() - t1
    n = spark.read.parquet(out).count()
    spark.stop()
    return {"records": n, "job_seconds": job, "startup_seconds": startup}


def main(argv: list[str]) -> int:
    from bench._util import start_pylog_broker

    ap = spark_bench_parser("python -m bench spark-export", "local[1],local[2],cluster")
    ap.add_argument("--quick", action="store_true", help="200,000 records")
    ap.add_argument("--kafka-source-child", nargs=3, metavar=("MASTER", "BOOTSTRAP", "OUT"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.kafka_source_child:
        print(json.dumps(kafka_source_job(*a.kafka_source_child)))
        return 0
    if a.quick:
        a.records = 200_000
    work = work_dir(a.dir, "bench-spark-export-")
    src = work / "input.csv"
    log_dir = work / "logs"
    t0 = time.monotonic()
    if (log_dir / "meta.properties").exists():  # --dir of an earlier run: the same input again
        print(f"reusing the log dir {log_dir}", flush=True)
    else:
        make_input(src, a.records)
        _pylog("spark-ingest", str(src), "-t", "bench", "--format", "csv", "--no-csv-header", "--key-column",
               "_c0", "--value-column", "_c1", "--mode", "segments", "--log-dir", str(log_dir), "--partitions",
               "4", "--compression", "lz4", "--master", "local[2]", "--json")
        src.unlink()
        print(f"loaded {a.records:,} records in {time.monotonic() - t0:.1f} s", flush=True)
    ref_s, ref_n = reference(log_dir, work / "reference")
    shutil.rmtree(work / "reference", ignore_errors=True)
    assert ref_n == a.records, (ref_n, a.records)
    rows = [("one process (read_task + pyarrow)", ref_s, None)]
    proc, bootstrap = start_pylog_broker(["--listen", "127.0.0.1:0", "--log-dir", str(log_dir)])
    try:
        for name in (m.strip() for m in a.masters.split(",")):
            rows += _one_master(work, name, log_dir, bootstrap, a.records)
    finally:
        proc.terminate()
        proc.wait(60)
    _print_table(rows, ref_s, a.records)
    if not a.dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _one_master(work: Path, name: str, log_dir: Path, bootstrap: str, records: int) -> list:
    """The three runs on one master (a standalone cluster started for `cluster`)."""
    cluster = None
    master = name
    if name == "cluster":
        sys.path.insert(0, str(TESTS))
        from support.spark_fixtures import StandaloneCluster

        cluster = StandaloneCluster(work / "standalone", workers=2, cores=1, memory="2g").start()
        master = cluster.url
        name = "standalone 2x1"
    try:
        out = [_run(work, f"dir {name}", ["--from-dir", str(log_dir)], master, records),
               _run(work, f"broker {name}", ["-b", bootstrap], master, records),
               _kafka_source(work, name, master, bootstrap, records)]
    finally:
        if cluster is not None:
            cluster.stop()
    for row in out:
        print(f"  {row[0]}: {row[1]:.1f} s (start-up {row[2]:.1f} s)", flush=True)
    return out


def _run(work: Path, name: str, source: list, master: str, records: int) -> tuple:
    out = work / f"out-{name.replace(' ', '-').replace('[', '').replace(']', '')}"
    shutil.rmtree(out, ignore_errors=True)
    # the executors run this interpreter: no environment packed or unpacked inside the figures
    extra = (["--conf", f"spark.pyspark.python={sys.executable}", "--conf", "spark.executor.memory=1536m",
              "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1"]
             if master.startswith("spark://") else [])
    doc = _pylog("spark-export", "bench", *source, "-o", str(out), "--master", master, *extra, "--json")
    assert doc["records"] == records, (name, doc["records"])
    shutil.rmtree(out, ignore_errors=True)
    return (f"spark-export {name}", doc["job_seconds"], doc["spark_startup_seconds"])


def _kafka_source(work: Path, name: str, master: str, bootstrap: str, records: int) -> tuple:
    out = work / "out-kafka-source"
    shutil.rmtree(out, ignore_errors=True)
    res = subprocess.run([sys.executable, "-m", "bench", "spark-export", "--kafka-source-child", master, bootstrap,
                          str(out)], capture_output=True, text=True, timeout=7200,
                         cwd=str(Path(__file__).resolve().parents[1]))
    if res.returncode != 0:
        raise SystemExit(f"Spark's Kafka source on {master} failed ({res.returncode}): {res.stderr[-3000:]}")
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    assert doc["records"] == records, (name, doc["records"])
    shutil.rmtree(out, ignore_errors=True)
    return (f"Spark Kafka source {name}", doc["job_seconds"], doc["startup_seconds"])


def _print_table(rows: list, ref_s: float, records: int) -> None:
    times = {n: s for n, s, _ in rows}
    print(f"\n{records:,} records, 4 partitions, lz4, to Parquet (zstd)")
    print(f"{'run':40} {'seconds':>8} {'records/s':>12} {'vs one process':>15} {'spark start-up':>15} "
          f"{'vs Spark Kafka source':>22}")
    for name, sec, start in rows:
        kafka = None
        for where in ("local[1]", "local[2]", "standalone 2x1"):
            if name.endswith(where) and not name.startswith("Spark Kafka"):
                kafka = times.get(f"Spark Kafka source {where}")
        print(f"{name:40} {sec:8.1f} {records / sec:12,.0f} {ref_s / sec:14.2f}x "
              f"{'' if start is None else f'{start:.1f} s':>15} {'-' if kafka is None else f'{kafka / sec:.2f}x':>22}")
    for src in ("spark-export dir", "spark-export broker", "Spark Kafka source"):
        one, two = times.get(f"{src} local[1]"), times.get(f"{src} local[2]")
        if one and two:
            print(f"scaling {src} local[2] / local[1]: {one / two:.2f}x")
