"""`pylog spark-ingest`: input files -> Kafka records, through a broker or straight into segments.

Driver side: read the input as a DataFrame, project it in Spark SQL to
(key binary, value binary, headers binary, timestamp long), then
- produce mode: one pylog Producer per input task, which partitions exactly as
  the Java client (murmur2 of the key, sticky for null keys); the counts it
  acknowledged per partition are compared with the broker's end offsets.
- segments mode: each row gets its Kafka partition in Python (pylog's
  partitioner; null keys sticky per input task, switching after batch.size
  bytes), rows are shuffled on a key chosen so Spark's hash partitioning sends
  Kafka partition p to Spark task p (input order restored by sorting on the
  row's input position), and that task writes the partition with pylog's storage
  engine into a staging folder inside the log dir. After every task succeeded
  the driver moves the segment files in and lets LogManager write the
  checkpoints, snapshots and clean-shutdown marker.

Rows reach Python as Arrow record batches (`mapInArrow`), so the JVM side of a
task is a cheap columnar hand-over and a task costs about one Python core;
headers and timestamp columns are left out when the options give none. The
headers travel as one binary column (per header column: a 4-byte big-endian
length, -1 for null, then the bytes; the names are known on the driver):
Spark's Arrow conversion of an array<struct> column costs several times the
rest of the job.

The functions Spark tasks run are in ingest_tasks.py.
"""
from __future__ import annotations

import os
import re
import shutil
import time
from collections import defaultdict
from pathlib import Path

from pylog.spark.ingest_tasks import (
    PRODUCE_SCHEMA,
    WRITE_SCHEMA,
    probe_task,
    assign_partitions,
    produce_task,
    staging_root,
    write_partition_task,
)
from pylog.core.errors import DataError, UsageError
from pylog.spark.ingest_input import (
    IngestOptions,
    schema_text,
    spark_message,
    check_inputs,
    project,
    read_input,
    resolve_format,
    slim,
)

# ---------------------------------------------------------------- driver side
def _codec(name: str) -> int:
    from pylog.core.records import CODEC_IDS

    try:
        return CODEC_IDS[name]
    except KeyError:
        raise UsageError(f"unknown compression {name!r}; one of: {', '.join(CODEC_IDS)}") from None


def producer_props(opts: IngestOptions) -> dict[str, str]:
    props = {
        "bootstrap.servers": opts.bootstrap,
        "acks": opts.acks,
        "compression.type": opts.compression,
        "batch.size": str(opts.batch_size),
        "linger.ms": str(opts.linger_ms),
        "enable.idempotence": "true" if opts.idempotence else "false",
    }
    props.update(opts.producer_props)
    if props["enable.idempotence"] == "true" and props["acks"] not in ("all", "-1"):
        props["enable.idempotence"] = "false"  # acks=0/1 cannot be idempotent; Kafka turns it off the same way
    return props


def progress_accumulators(spark):
    """(records, bytes) accumulators for the progress line; (None, None) through Spark
    Connect, which has none (the tasks' result rows carry the same counts)."""
    if is_connect(spark):
        return None, None
    sc = spark.sparkContext
    return sc.accumulator(0), sc.accumulator(0)


def is_connect(spark) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")


def prepare_produce(opts: IngestOptions) -> dict:
    """Driver side, before Spark starts: producer settings, the topic (created with
    --partitions when missing) and its end offsets."""
    from pylog.core.client import Admin
    from pylog.core.client.producer import resolve_producer_config

    props = producer_props(opts)
    resolve_producer_config(props)  # bad -X values fail here, in one line, not in every task
    admin_props = {"bootstrap.servers": opts.bootstrap}
    with Admin(admin_props) as admin:
        try:
            info = admin.describe_topic(opts.topic)
        except Exception as e:
            if opts.partitions is None:
                raise DataError(f"topic {opts.topic} is not on {opts.bootstrap} ({e}); create it first "
                                f"or give --partitions N") from None
            admin.create_topic(opts.topic, opts.partitions, configs=opts.topic_configs)
            info = _wait_topic(admin, opts.topic)
        parts = sorted(info.partitions) if isinstance(info.partitions, dict) else list(range(len(info.partitions)))
        _, before = admin.offsets(opts.topic, parts)
    return {"props": props, "parts": parts, "before": before}


def run_produce(spark, df, opts: IngestOptions, progress_factory, prep: dict) -> dict:
    from pylog.core.client import Admin

    props, parts, before = prep["props"], prep["parts"], prep["before"]
    admin_props = {"bootstrap.servers": opts.bootstrap}
    acc_records, acc_bytes = progress_accumulators(spark)
    ctx = {"topic": opts.topic, "props": props, "headers": list(opts.headers_columns),
           "value_encoding": opts.value_encoding}
    df = slim(df, opts)
    if opts.tasks:
        df = df.repartition(opts.tasks)
    t0 = time.monotonic()
    with progress_factory("produce", acc_records, acc_bytes):
        results = df.mapInArrow(lambda it: produce_task(it, ctx, acc_records, acc_bytes), PRODUCE_SCHEMA).collect()
    elapsed = time.monotonic() - t0
    acked: dict[int, int] = defaultdict(int)
    tasks = records = nbytes = 0
    for r in results:
        if r["partition"] < 0:
            tasks += 1
            records += r["count"]
            nbytes += r["bytes"]
        else:
            acked[r["partition"]] += r["count"]
    with Admin(admin_props) as admin:
        _, after = admin.offsets(opts.topic, parts)
    rows = []
    mismatched = 0
    for p in parts:
        delta = after[p] - before[p]
        ok = delta == acked.get(p, 0)
        mismatched += not ok
        rows.append({"partition": p, "acknowledged": acked.get(p, 0), "end_offset_before": before[p],
                     "end_offset_after": after[p], "end_offset_delta": delta, "match": ok})
    return {
        "mode": "produce",
        "topic": opts.topic,
        "bootstrap": opts.bootstrap,
        "records": records,
        "bytes": nbytes,
        "tasks": tasks,
        "job_seconds": elapsed,
        "delivery": "at-least-once (a retried Spark task sends its whole input split again)",
        "partitions": rows,
        "partitions_mismatched": mismatched,
    }


def _wait_topic(admin, topic: str, timeout: float = 10.0):
    deadline = time.monotonic() + timeout
    while True:
        try:
            return admin.describe_topic(topic)
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _prepare_log_dir(opts: IngestOptions) -> dict:
    """Phase 1 (driver): create the topic in DIR with LogManager, check the partitions."""
    from pylog.core.config import BROKER_CONFIGS
    from pylog.storage import LogManager

    lm = LogManager([opts.log_dir], BROKER_CONFIGS.resolve({}))
    lm.startup()
    try:
        info = lm.topics.get(opts.topic)
        created = False
        if info is None:
            if opts.partitions is None:
                raise UsageError(f"topic {opts.topic} does not exist in {opts.log_dir}: give --partitions N "
                                 f"to create it")
            info = lm.create_topic(opts.topic, opts.partitions, opts.topic_configs)
            created = True
        elif opts.partitions is not None and opts.partitions != info.num_partitions:
            raise UsageError(f"topic {opts.topic} has {info.num_partitions} partitions in {opts.log_dir}, "
                             f"not {opts.partitions}")
        elif opts.topic_configs:
            raise UsageError(f"topic {opts.topic} already exists in {opts.log_dir}: --topic-config applies only "
                             f"when the topic is created")
        starts, epochs, busy = {}, {}, []
        for p in range(info.num_partitions):
            lg = lm.get_log(opts.topic, p)
            starts[p] = lg.log_end_offset
            epochs[p] = lg.latest_epoch
            if lg.log_end_offset > 0 or lg.size_bytes > 0:
                busy.append(p)
        if busy and not opts.append:
            raise DataError(f"partition{'s' if len(busy) > 1 else ''} {', '.join(map(str, busy))} of "
                            f"{opts.topic} in {opts.log_dir} already hold data; use --append to add to them")
        return {
            "num_partitions": info.num_partitions,
            "topic_id": info.topic_id,
            "overrides": dict(info.overrides),
            "start_offsets": starts,
            "epochs": epochs,
            "created": created,
        }
    finally:
        lm.shutdown()


_SEGMENT_SUFFIXES = (".index", ".timeindex", ".txnindex", ".log")  # .log last: an index without its log is dropped


def _install_partition(staged: Path, real: Path, keep_epochs: bool) -> None:
    """Move a staged partition's segment files into the real partition folder."""
    bases = sorted(f.name[:-4] for f in staged.iterdir() if f.name.endswith(".log"))
    for base in bases:
        old_log = real / f"{base}.log"
        if old_log.exists():
            if old_log.stat().st_size:
                raise DataError(f"{old_log} already holds data; not overwriting it")
            for suf in _SEGMENT_SUFFIXES:  # the empty active segment the new data starts at
                (real / f"{base}{suf}").unlink(missing_ok=True)
        for suf in _SEGMENT_SUFFIXES:
            src = staged / f"{base}{suf}"
            if src.exists():
                os.replace(src, real / src.name)
    if not keep_epochs and (staged / "leader-epoch-checkpoint").exists():
        os.replace(staged / "leader-epoch-checkpoint", real / "leader-epoch-checkpoint")


def shuffle_keys(spark, n: int) -> list[int]:
    """For each Kafka partition p, a long that Spark's hash partitioning into n parts
    (pmod(murmur3 hash, n), as `repartition(n, col)` places rows) sends to part p."""
    from pyspark.sql import functions as F

    found: dict[int, int] = {}
    limit = 64 * n
    while len(found) < n:
        for r in spark.range(0, limit).select("id", F.expr(f"pmod(hash(id), {n})").alias("p")).collect():
            found.setdefault(r["p"], r["id"])
        limit *= 8
    return [found[p] for p in range(n)]


def prepare_segments(opts: IngestOptions) -> dict:
    """Driver side, before Spark starts: the log dir, the topic and its partitions."""
    if not opts.log_dir:
        raise UsageError("--mode segments needs --log-dir DIR")
    prep = {"codec": _codec(opts.compression)}
    Path(opts.log_dir).mkdir(parents=True, exist_ok=True)
    prep.update(_prepare_log_dir(opts))
    return prep


def run_segments(spark, df, opts: IngestOptions, progress_factory, prep: dict, say=None) -> dict:
    from pylog.core.config import BROKER_CONFIGS
    from pylog.storage import LogManager
    from pylog.storage.lock import DirLock

    codec = prep["codec"]
    n = prep["num_partitions"]
    acc_records, acc_bytes = progress_accumulators(spark)
    ctx = {
        "value_encoding": opts.value_encoding,
        "headers": list(opts.headers_columns),
        "topic": opts.topic,
        "log_dir": os.path.abspath(opts.log_dir),
        "start_offsets": prep["start_offsets"],
        "overrides": prep["overrides"],
        "codec": codec,
        "batch_size": opts.batch_size,
        # the epoch the partition already has, so its leader-epoch cache stays valid
        "leader_epoch": max([e for e in prep["epochs"].values() if e is not None] or [0]),
    }
    batch_size = opts.batch_size
    lock = DirLock(opts.log_dir).acquire()  # no broker may open DIR while tasks write
    staging = staging_root(opts.log_dir)
    t0 = time.monotonic()
    try:
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir()
        check_shared_dir(spark, opts.log_dir, say)
        sks = shuffle_keys(spark, n)
        df = slim(df, opts)
        hnames = list(opts.headers_columns)
        keyed = df.mapInArrow(lambda it: assign_partitions(it, n, batch_size, sks, hnames),
                              "p int, sk long, o long, " + schema_text(df))
        # one Spark task per Kafka partition, its rows back in input order
        shuffled = keyed.repartition(n, "sk").sortWithinPartitions("o").drop("sk", "o")
        with progress_factory("segments", acc_records, acc_bytes):
            results = [r.asDict() for r in shuffled.mapInArrow(
                lambda it: write_partition_task(it, ctx, acc_records, acc_bytes), WRITE_SCHEMA).collect()]
        elapsed = time.monotonic() - t0
        for r in sorted(results, key=lambda r: r["partition"]):
            if r["records"]:
                p = r["partition"]
                _install_partition(staging / f"{opts.topic}-{p}", Path(opts.log_dir) / f"{opts.topic}-{p}",
                                   keep_epochs=prep["epochs"][p] is not None)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
        lock.release()
    # checkpoints, producer snapshots and the clean-shutdown marker, written by the storage engine
    lm = LogManager([opts.log_dir], BROKER_CONFIGS.resolve({}))
    lm.startup()
    try:
        ends = {p: lm.get_log(opts.topic, p).log_end_offset for p in range(n)}
    finally:
        lm.shutdown()
    parts = []
    by_p = {r["partition"]: r for r in results}
    for p in range(n):
        r = by_p.get(p, {"records": 0, "bytes": 0})
        parts.append({"partition": p, "records": r["records"], "bytes": r["bytes"],
                      "start_offset": prep["start_offsets"][p], "end_offset": ends[p],
                      "match": ends[p] - prep["start_offsets"][p] == r["records"]})
    return {
        "mode": "segments",
        "topic": opts.topic,
        "log_dir": os.path.abspath(opts.log_dir),
        "topic_created": prep["created"],
        "topic_id": str(prep["topic_id"]),
        "records": sum(r["records"] for r in results),
        "bytes": sum(r["bytes"] for r in results),
        "tasks": n,
        "job_seconds": elapsed,
        "delivery": "exactly once (each task rewrites its partition's staging folder; files are moved in only "
                    "after every task succeeded)",
        "partitions": parts,
        "partitions_mismatched": sum(not p["match"] for p in parts),
    }


_GLOB = re.compile(r"[*?\[]")


def expand_inputs(inputs) -> list[str]:
    """Inputs with quoted globs expanded here (sorted), as the shell would have;
    a glob that matches nothing is an error naming it. URLs (s3a://...) go to Spark as given."""
    out: list[str] = []
    for p in inputs:
        p = str(p)
        if "://" in p or not _GLOB.search(p) or os.path.exists(p):
            out.append(p)
            continue
        import glob

        found = sorted(glob.glob(os.path.expanduser(p)))
        if not found:
            raise UsageError(f"input {p} matches no file")
        out.extend(found)
    return out


def prepare_ingest(opts: IngestOptions) -> dict:
    """Everything that can be checked without Spark: inputs, format, options and
    the target (broker topic or log dir). Returned for run_ingest."""
    check_inputs(opts.inputs)
    prep = {"fmt": resolve_format(opts.inputs, opts.fmt)}
    if opts.mode == "produce":
        prep.update(prepare_produce(opts))
    elif opts.mode == "segments":
        prep.update(prepare_segments(opts))
    else:
        raise UsageError(f"unknown mode {opts.mode}")
    return prep


def run_ingest(spark, opts: IngestOptions, progress_factory, prep: dict | None = None, run=None, say=None) -> dict:
    if prep is None:
        prep = prepare_ingest(opts)
    fmt = prep["fmt"]
    try:
        df = project(read_input(spark, opts, fmt), opts, fmt)
        if opts.mode == "produce":
            doc = run_produce(spark, df, opts, progress_factory, prep)
        else:
            doc = run_segments(spark, df, opts, progress_factory, prep, say)
    except (UsageError, DataError):
        raise
    except Exception as e:
        if e.__class__.__module__.startswith(("pyspark", "py4j")):
            raise job_failed(e) from None
        raise
    doc["format"] = fmt
    doc["inputs"] = list(opts.inputs)
    return doc


def check_shared_dir(spark, log_dir: str, say=None) -> None:
    """On a cluster, --log-dir must be one folder the driver and every executor share:
    a marker file the driver writes must be visible to tasks (checked before the
    writing tasks run). Local masters share it by construction."""
    master = "remote" if is_connect(spark) else spark.sparkContext.master
    if master.startswith("local"):
        return
    import uuid

    marker = staging_root(os.path.abspath(log_dir)) / f"probe-{uuid.uuid4().hex}"
    marker.write_text("pylog\n")
    try:
        n = 4 if is_connect(spark) else max(2, 2 * spark.sparkContext.defaultParallelism)
        rows = spark.range(0, n, 1, n).mapInArrow(lambda it: probe_task(it, str(marker)),
                                                  "host string, seen boolean").collect()
    finally:
        marker.unlink(missing_ok=True)
    blind = sorted({r["host"] for r in rows if not r["seen"]})
    if blind:
        raise DataError(f"--log-dir {os.path.abspath(log_dir)} is not visible to the executors on "
                        f"{', '.join(blind)}: --mode segments on a cluster needs a folder the driver and every "
                        f"executor reach at the same path (a shared mount)")
    if say:
        say(f"log dir {os.path.abspath(log_dir)}: shared with the executors (checked)")


def job_failed(e: BaseException) -> DataError:
    """The one-line error for a failed Spark job."""
    from pylog.spark.session import live_run
    from pylog.spark.shipenv import missing_module_hint

    run = live_run()
    executor_python, connect = (run.executor_python, run.connect) if run else (None, False)
    line = _task_error(e)
    hint = missing_module_hint(line, executor_python, connect) or missing_module_hint(str(e), executor_python, connect)
    return DataError(f"Spark job failed: {hint or line}")


def _task_error(e: BaseException) -> str:
    """The useful line of a failed Spark job: the Python exception raised in the task,
    or Spark's own error message."""
    msg = str(e)
    lines = [ln.strip() for ln in msg.splitlines() if ln.strip()]
    for ln in reversed(lines):
        if ("Error: " in ln or "Exception: " in ln) and not ln.startswith(("at ", "File ", "org.apache.spark")):
            return ln[:400]
    return spark_message(e)
