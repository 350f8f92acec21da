"""Benchmark: spark-ingest (both modes) and spark-compaction on
local[1], local[2] and a two-worker standalone cluster, against single-process
pylog equivalents.

    python -m bench spark [--records 10000000] [--dir DIR] [--masters local[1],local[2],cluster]

`cluster` starts a standalone Master and two Workers (1 core, 2 GB each) with
pyspark's spark-class on loopback (tests/spark_fixtures.StandaloneCluster);
the executors run this interpreter (--conf spark.pyspark.python), so no
environment is packed or unpacked inside the figures.

Input: N records of 100 bytes of payload (key 10 bytes "key-NNNNNN" over
N/10 distinct keys, value 90 bytes) as CSV lines `key,value` (no header).
- spark-ingest --mode segments into a fresh log dir (topic compacted, 4 partitions);
- spark-ingest --mode produce to a `pylog broker start` subprocess (4 partitions);
- spark-compaction of the segments-mode log dir;
each in a fresh process per master (one SparkSession per master, so the
Spark start-up is measured once per master and excluded from the job times).
Baselines, each one process: `pylog produce --input FILE --key-separator ,`
to the same broker; `pylog compact --dry-run` (the cleaner computing the same
prediction) and a plain decode scan of every record of the same log.
Scaling = job time on local[1] / job time on local[2] (target >= 1.6).
"Start-up included" = the session's start-up + the job: what one command costs.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PARTITIONS = 4


def make_input(path: Path, n: int) -> None:
    keys = max(1, n // 10)
    filler = "v" * 80
    with open(path, "w") as f:
        chunk = []
        for i in range(n):
            chunk.append(f"key-{i % keys:06d},{i:010d}{filler}\n")
            if len(chunk) == 10000:
                f.writelines(chunk)
                chunk = []
        f.writelines(chunk)


def _pylog(*args: str, timeout: float = 900) -> dict:
    res = subprocess.run([sys.executable, "-m", "pylog.cli", *args], capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise SystemExit(f"pylog {' '.join(args[:2])} failed ({res.returncode}): {res.stderr[-2000:]}")
    try:
        return json.loads(res.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return {}


def worker(master: str, src: str, work: str, bootstrap: str) -> dict:
    """One master in this process: one SparkSession, three jobs."""
    from pylog.spark import session
    from pylog.spark.compaction_report import run_compaction_report
    from pylog.spark.ingest import IngestOptions, run_ingest

    conf = {}
    if master.startswith("spark://"):
        conf = {"spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1",
                "spark.executor.memory": "1536m", "spark.pyspark.python": sys.executable}
    t0 = time.monotonic()
    run = session.open_session(session.SessionSettings(master=master, app_name=f"bench {master}", conf=conf))
    startup = time.monotonic() - t0
    out = {"master": master, "startup_seconds": startup}
    tag = re.sub(r"[^A-Za-z0-9]+", "", master.split("//")[-1].split(":")[0] if "//" in master else master)
    nothing = lambda *a, **k: __import__("contextlib").nullcontext()  # noqa: E731

    def jobs(input_path: str, name: str) -> dict:
        common = dict(inputs=[input_path], fmt="csv", csv_header=False, key_column="_c0", value_column="_c1",
                      batch_size=65536, partitions=PARTITIONS)
        log_dir = os.path.join(work, f"{name}-{tag}")
        shutil.rmtree(log_dir, ignore_errors=True)
        res = {}
        doc = run_ingest(run.spark, IngestOptions(
            topic="bench", mode="segments", log_dir=log_dir,
            topic_configs={"cleanup.policy": "compact", "segment.bytes": str(8 << 20)}, **common), nothing)
        res["segments"] = {"job_seconds": doc["job_seconds"], "records": doc["records"]}
        doc = run_ingest(run.spark, IngestOptions(topic=f"{name}-{tag}", mode="produce", bootstrap=bootstrap,
                                                  linger_ms=5, **common), nothing)
        res["produce"] = {"job_seconds": doc["job_seconds"], "records": doc["records"],
                          "mismatched": doc["partitions_mismatched"]}
        doc = run_compaction_report(run.spark, log_dir, progress_factory=None)
        res["compaction"] = {"job_seconds": doc["job_seconds"], "records": doc["totals"]["records"],
                             "records_after": doc["totals"]["records_after"],
                             "bytes_after": doc["totals"]["bytes_after"]}
        return res

    # the JVM's first jobs run interpreted and load classes: a small warm-up round,
    # counted with the start-up, so the job times show the steady state
    t0 = time.monotonic()
    jobs(os.path.join(work, "warmup.csv"), "warmup")
    out["warmup_seconds"] = time.monotonic() - t0
    out.update(jobs(src, "segments"))
    session.stop_session()
    return out


def scan_baseline(log_dir: str) -> tuple[float, int]:
    from pylog.spark.compaction import find_partitions, list_segments, segment_rows

    t0 = time.perf_counter()
    n = 0
    _, parts = find_partitions(log_dir)
    for topic, part, folder in parts:
        for base in list_segments(folder):
            for _ in segment_rows({"topic": topic, "partition": part, "base": base,
                                   "path": str(folder / f"{base:020d}.log")}):
                n += 1
    return time.perf_counter() - t0, n


def spark_bench_parser(prog: str, masters: str) -> argparse.ArgumentParser:
    """The options every Spark benchmark takes: --records, --dir (kept), --masters."""
    ap = argparse.ArgumentParser(prog=prog)
    ap.add_argument("--records", type=int, default=10_000_000)
    ap.add_argument("--dir", default=None)
    ap.add_argument("--masters", default=masters)
    return ap


def work_dir(given: str | None, prefix: str) -> Path:
    """--dir, else a new temporary folder."""
    work = Path(given or tempfile.mkdtemp(prefix=prefix))
    work.mkdir(parents=True, exist_ok=True)
    return work


def main(argv: list[str]) -> int:
    ap = spark_bench_parser("python -m bench spark", "local[1],local[2],cluster")
    ap.add_argument("--worker", nargs=4, metavar=("MASTER", "SRC", "WORK", "BOOTSTRAP"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        print(json.dumps(worker(*args.worker)))
        return 0
    work = work_dir(args.dir, "pylog-bench-spark-")
    src = work / "input.csv"
    t0 = time.monotonic()
    make_input(src, args.records)
    make_input(work / "warmup.csv", 20000)
    print(f"input: {args.records:,} records, {src.stat().st_size / 1e6:.0f} MB CSV ({time.monotonic() - t0:.1f} s)",
          flush=True)
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from support.broker_fixtures import BrokerProcess

    broker = BrokerProcess(work / "broker-data").start()
    cluster = None
    try:
        results = {}
        for name in args.masters.split(","):
            master = name
            if name == "cluster":
                from support.spark_fixtures import StandaloneCluster

                cluster = StandaloneCluster(work / "standalone", workers=2, cores=1, memory="2g").start()
                master = cluster.url
            res = subprocess.run([sys.executable, "-m", "bench", "spark", "--worker", master, str(src), str(work),
                                  broker.bootstrap], capture_output=True, text=True, timeout=3600,
                                 cwd=str(Path(__file__).resolve().parents[1]))
            if cluster is not None:
                cluster.stop()
                cluster = None
            if res.returncode != 0:
                print(res.stderr[-3000:], file=sys.stderr)
                return 1
            master = name if name != "cluster" else "standalone 2x1 core"
            results[master] = json.loads(res.stdout.strip().splitlines()[-1])
            r = results[master]
            print(f"{master}: start-up {r['startup_seconds']:.1f} s + warm-up {r['warmup_seconds']:.1f} s, segments {r['segments']['job_seconds']:.1f} s, "
                  f"produce {r['produce']['job_seconds']:.1f} s, compaction {r['compaction']['job_seconds']:.1f} s",
                  flush=True)
        _pylog("topics", "create", "bench-single", "--partitions", str(PARTITIONS), "-b", broker.bootstrap)
        t = time.monotonic()
        _pylog("produce", "bench-single", "--input", str(src), "--key-separator", ",", "--batch-size", "65536",
               "-b", broker.bootstrap, "--json")
        produce_single = time.monotonic() - t
    finally:
        broker.stop()
        if cluster is not None:
            cluster.stop()
    seg_dir = str(work / "segments-local2")
    t = time.monotonic()
    dry = _pylog("compact", seg_dir, "--dry-run", "--json")
    compact_single = time.monotonic() - t
    scan_s, scanned = scan_baseline(seg_dir)
    n = args.records
    print()
    print(f"{'job':28} {'seconds':>9} {'records/s':>11}")
    rows = [("pylog produce (1 process)", produce_single), ("pylog compact --dry-run", compact_single),
            ("plain decode scan (1 proc)", scan_s)]
    for master, r in results.items():
        rows += [(f"spark-ingest segments {master}", r["segments"]["job_seconds"]),
                 (f"spark-ingest produce {master}", r["produce"]["job_seconds"]),
                 (f"spark-compaction {master}", r["compaction"]["job_seconds"])]
    for name, s in rows:
        print(f"{name:28} {s:9.1f} {n / s:11,.0f}")
    ms = list(results)
    print()
    print("| job | " + " | ".join(f"{m} s (start-up incl.)" for m in ms) + " | local[1]/local[2] |")
    print("|---|" + "---|" * (len(ms) + 1))
    for job in ("segments", "produce", "compaction"):
        cells = [f"{results[m][job]['job_seconds']:.1f} ({results[m][job]['job_seconds'] + results[m]['startup_seconds']:.1f})"
                 for m in ms]
        ratio = "-"
        if "local[1]" in results and "local[2]" in results:
            ratio = f"{results['local[1]'][job]['job_seconds'] / results['local[2]'][job]['job_seconds']:.2f}x"
        print(f"| spark-{'ingest --mode ' + job if job != 'compaction' else 'compaction'} | " + " | ".join(cells)
              + f" | {ratio} |")
    print("spark start-up (session / warm-up round on 20k records): " + ", ".join(
        f"{m} {r['startup_seconds']:.1f} s / {r['warmup_seconds']:.1f} s" for m, r in results.items()))
    pred = results[ms[-1]]["compaction"]
    print(f"prediction: {pred['records_after']:,} records after compaction; compact --dry-run removes "
          f"{dry['totals']['records_removed']:,} of {scanned:,} (= {scanned - dry['totals']['records_removed']:,} left)")
    os.system("uptime")
    print(f"(work dir {work})")
    return 0
