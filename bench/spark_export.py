"""Benchmark: `pylog spark-export` to Parquet from a log dir (--from-dir) and through a broker (-b),
against Spark's own Kafka source (spark-sql-kafka-0-10) reading the same topic from the same broker
into the same Parquet, on local[1], local[2] and a two-worker standalone cluster.

    python -m bench spark-export [--records 10000000 | --quick] [--dir DIR]
                                 [--masters local[1],local[2],cluster] [--paths dir,broker,kafka] [--warm]
                                 [--stock-daemon] [--cold-rounds N]

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
Each run is a fresh process; its job time excludes Spark's start-up (reported beside it). That
first job is cold: a fresh driver JVM compiles and loads as it plans, a fresh Python worker imports.
With --warm every run does the same job twice in its process (the first into a scratch output) and
the table shows both: cold (the first, what one `pylog spark-export` costs) and warm (the second).
--paths picks the runs (dir = the offline path alone, the quickest way to the scaling figures).
For pylog's rows the export's own timeline (its tasks' clocks, `timeline` in --json) gives F, the
wall time outside the tasks, and T, the tasks' CPU seconds in their workers; the expected
local[2]/local[1] scaling from local[1]'s figures is (F + T) / (F + T/2), what two free cores give.
`cluster` is a standalone Master and two Workers (1 core, 2 GB each) from pyspark's
spark-class on loopback (tests/support/spark_fixtures.StandaloneCluster).
--stock-daemon adds, beside each local dir run, the same export with Spark's own Python daemon
(pyspark.daemon: workers importing pyspark and pylog from zips) instead of pylog's
(spark/local_daemon.py), interleaved so both meet the same load.
--cold-rounds N makes the cold figure a measurement: each run on a local master N times in all,
each a fresh process (its first job cold), the first round the table's own run and every later
one interleaved (round 2 local[2] first, round 3 local[1] first, ...) so both masters meet the same
load; it prints per run the median, min and max, and the scaling of the medians beside the
per-round ratios (bench/spark_export_rounds.py).
The reference row is one process: the planner and `log_rows.read_task` over every
segment, pyarrow writing one Parquet file per segment.
Goals: the dir path at least 2x Spark's Kafka source; local[2]/local[1] at least 1.6x.
"""
from __future__ import annotations

import argparse
import json
import os
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

    from pylog.spark.log_plan import ReadOptions, plan_log_dir
    from pylog.spark.log_rows import read_task

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


def kafka_source_job(master: str, bootstrap: str, out: str, warm: bool = False) -> dict:
    """Run in a child: Spark's Kafka source, the topic to Parquet; {records, job_seconds, startup_seconds}
    (and warm_seconds: the same job again in the same session, when `warm`)."""
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
    doc = {"startup_seconds": startup}
    for key, dest in ([("job_seconds", out + "-cold"), ("warm_seconds", out)] if warm else [("job_seconds", out)]):
        t1 = time.monotonic()
        df = (spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", "bench")
              .option("startingOffsets", "earliest").option("endingOffsets", "latest").option("includeHeaders", "true")
              .load().select("topic", "partition", "offset", "timestamp", "timestampType", "key", "value", "headers"))
        df.write.mode("overwrite").parquet(dest)
        doc[key] = time.monotonic() - t1
    doc["records"] = spark.read.parquet(out).count()
    spark.stop()
    return doc


def export_twice_job(args: list[str]) -> dict:
    """Run in a child: `pylog spark-export ARGS -o OUT` twice in one process and session, the first
    into OUT-cold; {"cold": its --json document, "warm": the second's}."""
    import contextlib
    import io

    from pylog.cli.main import main as pylog_main
    from pylog.spark import session

    out = args[args.index("-o") + 1]
    session.KEEP_SESSION = True
    docs = []
    for dest in (out + "-cold", out):
        shutil.rmtree(dest, ignore_errors=True)  # a fresh table each time: an export only appends what is new
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            try:
                pylog_main([a if a != out else dest for a in args])
            except SystemExit as e:  # pylog's main exits with the command's status
                if e.code:
                    raise
        docs.append(json.loads(buf.getvalue()))
        if dest != out:
            shutil.rmtree(dest, ignore_errors=True)
    session.KEEP_SESSION = False
    session.stop_session()
    return {"cold": docs[0], "warm": docs[1]}


def main(argv: list[str]) -> int:
    from bench._util import start_pylog_broker

    ap = spark_bench_parser("python -m bench spark-export", "local[1],local[2],cluster")
    ap.add_argument("--quick", action="store_true", help="200,000 records")
    ap.add_argument("--paths", default="dir,broker,kafka",
                    help="which runs: dir (from the log dir), broker (pylog through the broker), kafka "
                         "(Spark's own Kafka source)")
    ap.add_argument("--warm", action="store_true", help="each run's job twice in its process: cold and warm")
    ap.add_argument("--stock-daemon", action="store_true",
                    help="beside each dir run, the same with Spark's own Python daemon (pyspark.daemon) instead of "
                         "pylog's local one (rows 'spark-export dir-stock ...'), interleaved")
    ap.add_argument("--cold-rounds", type=int, default=1, metavar="N",
                    help="each local run's cold job N times in all, fresh processes, masters interleaved: "
                         "median, spread and the scaling of medians (default 1: one sample)")
    ap.add_argument("--kafka-source-child", nargs=4, metavar=("MASTER", "BOOTSTRAP", "OUT", "WARM"),
                    help=argparse.SUPPRESS)
    ap.add_argument("--export-child", metavar="ARGS_JSON", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.kafka_source_child:
        m, b, o, w = a.kafka_source_child
        print(json.dumps(kafka_source_job(m, b, o, w == "1")))
        return 0
    if a.export_child:
        print(json.dumps(export_twice_job(json.loads(a.export_child))))
        return 0
    if a.quick:
        a.records = 200_000
    paths = {p.strip() for p in a.paths.split(",") if p.strip()}
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
    rows = [{"name": "one process (read_task + pyarrow)", "job": ref_s}]
    proc, bootstrap = start_pylog_broker(["--listen", "127.0.0.1:0", "--log-dir", str(log_dir)])
    paths |= {"dir-stock"} if a.stock_daemon else set()
    masters = [m.strip() for m in a.masters.split(",") if m.strip()]
    try:
        for name in masters:
            rows += _one_master(work, name, log_dir, bootstrap, a.records, paths, a.warm)
        if a.cold_rounds > 1:
            from bench.spark_export_rounds import cold_rounds

            samples = cold_rounds(rows, a.cold_rounds, [m for m in masters if m.startswith("local")],
                                  lambda name, master: _path_runs(work, name, master, log_dir, bootstrap,
                                                                  a.records, paths, False))
    finally:
        proc.terminate()
        proc.wait(60)
    _print_table(rows, ref_s, a.records)
    if a.cold_rounds > 1:
        from bench.spark_export_rounds import print_rounds

        print_rounds(samples, a.cold_rounds)
    if not a.dir:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def _one_master(work: Path, name: str, log_dir: Path, bootstrap: str, records: int, paths: set, warm: bool) -> list:
    """The runs on one master (a standalone cluster started for `cluster`)."""
    cluster = None
    master = name
    if name == "cluster":
        sys.path.insert(0, str(TESTS))
        from support.spark_fixtures import StandaloneCluster

        cluster = StandaloneCluster(work / "standalone", workers=2, cores=1, memory="2g").start()
        master = cluster.url
        name = "standalone 2x1"
    try:
        out = _path_runs(work, name, master, log_dir, bootstrap, records, paths, warm)
    finally:
        if cluster is not None:
            cluster.stop()
    for row in out:
        tl = row.get("timeline") or {}
        print(f"  {row['name']}: {row['job']:.1f} s" + (f", warm {row['warm']:.1f} s" if "warm" in row else "")
              + f" (start-up {row['startup']:.1f} s)" + (f" timeline {tl}" if tl else ""), flush=True)
    return out


def _path_runs(work: Path, name: str, master: str, log_dir: Path, bootstrap: str, records: int, paths: set,
               warm: bool) -> list:
    """The rows of `paths` on one running master (`name` as the rows call it)."""
    out = []
    if "dir" in paths:
        out.append(_run(work, f"dir {name}", ["--from-dir", str(log_dir)], master, records, warm))
    if "dir-stock" in paths and name.startswith("local"):
        out.append(_run(work, f"dir-stock {name}", ["--from-dir", str(log_dir), "--conf",
                                                    "spark.python.daemon.module=pyspark.daemon"], master, records, warm))
    if "broker" in paths:
        out.append(_run(work, f"broker {name}", ["-b", bootstrap], master, records, warm))
    if "kafka" in paths:
        out.append(_kafka_source(work, name, master, bootstrap, records, warm))
    return out


def _run(work: Path, name: str, source: list, master: str, records: int, warm: bool) -> dict:
    out = work / f"out-{name.replace(' ', '-').replace('[', '').replace(']', '')}"
    shutil.rmtree(out, ignore_errors=True)
    # the executors run this interpreter: no environment packed or unpacked inside the figures
    extra = (["--conf", f"spark.pyspark.python={sys.executable}", "--conf", "spark.executor.memory=1536m",
              "--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1"]
             if master.startswith("spark://") else [])
    args = ["spark-export", "bench", *source, "-o", str(out), "--master", master, *extra, "--json"]
    if warm:
        res = subprocess.run([sys.executable, "-m", "bench", "spark-export", "--export-child", json.dumps(args)],
                             capture_output=True, text=True, timeout=7200, cwd=str(Path(__file__).resolve().parents[1]))
        if res.returncode != 0:
            raise SystemExit(f"spark-export {name} failed ({res.returncode}): {res.stderr[-3000:]}")
        both = json.loads(res.stdout.strip().splitlines()[-1])
        doc, warm_doc = both["cold"], both["warm"]
        assert warm_doc["records"] == records, (name, warm_doc["records"])
    else:
        doc, warm_doc = _pylog(*args), None
    assert doc["records"] == records, (name, doc["records"])
    shutil.rmtree(out, ignore_errors=True)
    row = {"name": f"spark-export {name}", "job": doc["job_seconds"], "startup": doc["spark_startup_seconds"],
           "timeline": doc.get("timeline"), "load": os.getloadavg()[0]}
    if warm_doc:
        row["warm"], row["warm_timeline"] = warm_doc["job_seconds"], warm_doc.get("timeline")
    return row


def _kafka_source(work: Path, name: str, master: str, bootstrap: str, records: int, warm: bool) -> dict:
    out = work / "out-kafka-source"
    shutil.rmtree(out, ignore_errors=True)
    res = subprocess.run([sys.executable, "-m", "bench", "spark-export", "--kafka-source-child", master, bootstrap,
                          str(out), "1" if warm else "0"], capture_output=True, text=True, timeout=7200,
                         cwd=str(Path(__file__).resolve().parents[1]))
    if res.returncode != 0:
        raise SystemExit(f"Spark's Kafka source on {master} failed ({res.returncode}): {res.stderr[-3000:]}")
    doc = json.loads(res.stdout.strip().splitlines()[-1])
    assert doc["records"] == records, (name, doc["records"])
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(str(out) + "-cold", ignore_errors=True)
    row = {"name": f"Spark Kafka source {name}", "job": doc["job_seconds"], "startup": doc["startup_seconds"]}
    if "warm_seconds" in doc:
        row["warm"] = doc["warm_seconds"]
    return row


def expected_scaling(timeline: dict | None, job: float) -> tuple | None:
    """(F, T, expected local[2]/local[1]) from a local[1] run: F the job's wall time outside its
    tasks, T the tasks' CPU seconds (on one core the tasks' wall time is about that)."""
    if not timeline or not timeline.get("tasks"):
        return None
    t = timeline["task_cpu_seconds"]
    f = max(0.0, job - timeline["tasks_seconds"])
    return f, t, (f + t) / (f + t / 2)


def _print_table(rows: list, ref_s: float, records: int) -> None:
    warm = any("warm" in r for r in rows)
    print(f"\n{records:,} records, 4 partitions, lz4, to Parquet (zstd)")
    print(f"{'run':40} {'seconds':>8} {'records/s':>12} {'vs one process':>15} {'spark start-up':>15} "
          f"{'vs Spark Kafka source':>22}" + (f" {'warm s':>8} {'warm records/s':>15} {'warm vs Kafka':>14}" if warm else ""))
    by = {r["name"]: r for r in rows}
    for r in rows:
        name, sec, start = r["name"], r["job"], r.get("startup")
        kafka = None
        for where in ("local[1]", "local[2]", "standalone 2x1"):
            if name.endswith(where) and not name.startswith("Spark Kafka"):
                kafka = by.get(f"Spark Kafka source {where}")
        vs = "-" if kafka is None else f"{kafka['job'] / sec:.2f}x"
        line = (f"{name:40} {sec:8.1f} {records / sec:12,.0f} {ref_s / sec:14.2f}x "
                f"{'' if start is None else f'{start:.1f} s':>15} {vs:>22}")
        if warm and "warm" in r:
            w = r["warm"]
            kw = f"{kafka['warm'] / w:.2f}x" if kafka and "warm" in kafka else "-"
            line += f" {w:8.1f} {records / w:15,.0f} {kw:>14}"
        print(line)
    for src in ("spark-export dir", "spark-export dir-stock", "spark-export broker", "Spark Kafka source"):
        one, two = by.get(f"{src} local[1]"), by.get(f"{src} local[2]")
        if one and two:
            print(f"scaling {src} local[2] / local[1]: {one['job'] / two['job']:.2f}x"
                  + (f" (warm {one['warm'] / two['warm']:.2f}x)" if "warm" in one and "warm" in two else ""))
        for key, tl in (("cold", "timeline"), ("warm", "warm_timeline")):
            est = expected_scaling(one.get(tl), one.get("job" if key == "cold" else "warm", 0.0)) if one else None
            if est:
                f, t, x = est
                print(f"  {src} local[1] {key}: F {f:.1f} s outside the tasks, T {t:.1f} s of task CPU "
                      f"({one[tl]['tasks']} tasks): expected local[2]/local[1] on two free cores {x:.2f}x")
