"""`pylog spark-export`: topics of a Kafka log dir into a Parquet, Delta or Iceberg table, exactly once.

1. The table's own metadata says which offsets earlier runs exported
   (export_tables.py); a run killed between commits is rolled forward first.
2. The driver plans the log dir (log_plan.py) or asks the cluster
   (broker_plan.py, ListOffsets): per partition, from the exported offset
   (or --from) up to the last stable offset (READ_COMMITTED) or the log end,
   or --until; those exact end offsets are what this run commits, so a rerun
   starts where this one stopped whatever was appended.
3. The rows come from the `pylog` data source (datasource.py) with those
   start and end offsets per partition, read from the segment files or
   fetched from the cluster (broker_rows.py); values decoded as asked (bytes,
   UTF-8, JSON, a schema registry); --compacted keeps the latest record per
   key and drops tombstones. With raw bytes and no such transform the planned
   tasks run fused instead (datasource.run_tasks): each task reads its rows
   and writes them in the same Python worker, never through the JVM, in an
   RDD job (no SQL plan for a fresh JVM to prepare). Tasks are offset ranges of
   about equal bytes, TASKS_PER_CORE per core (log_plan.split_tasks).
4. Each task writes Parquet files (export_tables.file_writer); the driver
   commits them with the end offsets in one table commit.
"""
from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field

from pylog.core.errors import DataError, UsageError

VALUE_FORMATS = ("bytes", "utf8", "json", "registry")
# read tasks planned per core: offset ranges of about equal bytes, so no core idles while another
# finishes a long partition
TASKS_PER_CORE = 2


@dataclass
class ExportOptions:
    topics: tuple
    from_dir: str | None
    fmt: str
    output: str | None
    catalog: dict = field(default_factory=dict)
    table: str | None = None
    isolation: str = "read_committed"
    compacted: bool = False
    from_offset: int | None = None
    until_offset: int | None = None
    from_time: int | None = None
    until_time: int | None = None
    partition_by: tuple = ()
    value_format: str = "bytes"
    key_format: str = "bytes"
    value_schema: str | None = None
    bootstrap: str | None = None
    client_props: dict = field(default_factory=dict)
    registry: tuple | None = None  # (url, basic-auth user:password or None) for --value-format registry


def registry_decoder(url: str, auth: str | None, column: str = "value"):
    """The mapInArrow function decoding `column` from the registry's wire format to JSON text on the
    executors (schemas fetched by id once per task); values not in the wire format become UTF-8 text."""

    def decode(batches):
        import pyarrow as pa

        from pylog.core.client.schema_registry import Deserializer, RegistryClient, is_framed

        dec = Deserializer(RegistryClient(url, auth))
        for b in batches:
            i = b.schema.get_field_index(column)
            vals = [None if v is None else json.dumps(dec.decode(v), sort_keys=True) if is_framed(v)
                    else v.decode("utf-8", "replace") for v in b.column(i).to_pylist()]
            cols = list(b.columns)
            cols[i] = pa.array(vals, pa.string())
            yield pa.RecordBatch.from_arrays(cols, schema=b.schema.set(i, pa.field(column, pa.string())))

    return decode


def _parallelism(spark) -> int:
    try:
        return int(spark.sparkContext.defaultParallelism)
    except Exception:  # Spark Connect has no SparkContext
        return int(spark.conf.get("spark.default.parallelism", "2") or 2)


def _plan_and_read(spark, opts: ExportOptions, ro):
    """(partition plans, reader with every option but the offsets, load argument); no reader for a
    fused export: its rows never pass through Spark SQL, and a fresh JVM's first `spark.read` (the
    session's SQL state) is about a second of driver time before the first task."""
    from pylog.spark.datasource import register

    tasks = TASKS_PER_CORE * _parallelism(spark)
    reader = None
    if not _fused(opts):  # registering starts Spark's Python data source lookup (seconds of CPU)
        register(spark)
        reader = spark.read.format("pylog").option("isolation", opts.isolation).option("minPartitions", tasks)
    if opts.bootstrap:
        from pylog.spark.broker_plan import ClusterSource, plan_cluster

        plans = plan_cluster(ClusterSource(opts.bootstrap, opts.client_props), ro, tasks)
        if reader is not None:
            reader = reader.option("kafka.bootstrap.servers", opts.bootstrap)
            for k, v in opts.client_props.items():
                reader = reader.option(f"kafka.{k}", v)
        return plans, reader, ()
    from pylog.spark.log_plan import plan_log_dir

    plans = plan_log_dir(opts.from_dir, ro, tasks)
    missing = set(opts.topics) - {p.topic for p in plans}
    if missing:
        raise DataError(f"topic {', '.join(sorted(missing))} has no partition folder in {opts.from_dir}")
    return plans, reader, (opts.from_dir,)


def _columns(df, opts: ExportOptions, spark):
    """The exported columns: values decoded, the `date` column when partitioning by it."""
    from pyspark.sql import functions as F

    if opts.compacted:
        from pyspark.sql import Window

        w = Window.partitionBy("topic", "partition", "key").orderBy(F.col("offset").desc())
        df = (df.where(F.col("key").isNotNull()).withColumn("_n", F.row_number().over(w))
              .where((F.col("_n") == 1) & F.col("value").isNotNull()).drop("_n"))
    if opts.key_format == "utf8":
        df = df.withColumn("key", F.col("key").cast("string"))
    if opts.value_format == "utf8":
        df = df.withColumn("value", F.col("value").cast("string"))
    elif opts.value_format == "registry":
        from pyspark.sql.types import StringType, StructField, StructType

        schema = StructType([StructField(f.name, StringType(), True) if f.name == "value" else f
                             for f in df.schema.fields])
        df = df.mapInArrow(registry_decoder(*opts.registry), schema)
    elif opts.value_format == "json":
        schema = opts.value_schema
        if not schema:
            sample = df.where(F.col("value").isNotNull()).select(F.col("value").cast("string")).limit(1).collect()
            if not sample:
                schema = "map<string,string>"
            else:
                schema = spark.range(1).select(F.schema_of_json(F.lit(sample[0][0]))).collect()[0][0]
        df = df.withColumn("value", F.from_json(F.col("value").cast("string"), schema))
    if "date" in opts.partition_by:
        df = df.withColumn("date", F.to_date("timestamp"))
    for c in opts.partition_by:
        if c not in df.columns:
            raise UsageError(f"--partition-by {c}: no such column (columns: {', '.join(df.columns)}, date)")
    return df


def _server_plans_without_deps() -> bool:
    """Through Spark Connect with a shipped environment, the server plans a Python data source
    with its own Python, which the environment does not reach: plan here, read by mapInArrow."""
    from pylog.spark.session import live_run

    run = live_run()
    return bool(run and run.connect and run.executor_python and run.executor_python.how == "shipped")


def _fused(opts: ExportOptions) -> bool:
    """Whether each read task writes its own rows (read and write fused in one Python worker, the
    rows never crossing into the JVM and back): raw bytes, no Spark-side transform."""
    return (not opts.compacted and opts.value_format == "bytes"
            and opts.key_format == "bytes" and "date" not in opts.partition_by)


def light_driver_jvm(settings, opts: ExportOptions) -> None:
    """A fused export's JVM plans and schedules but never touches a row: on a local master it runs
    with the client compiler alone (-XX:TieredStopAtLevel=1), which cuts the JVM's CPU from its
    start to the first task by half or more (the server compiler's threads, busy compiling code
    that runs once). A -XX:...Tiered... option given in spark.driver.extraJavaOptions or
    SPARK_SUBMIT_OPTS wins."""
    import os

    from pylog.spark.session import remote_url

    master = settings.master or ""
    if not _fused(opts) or not master.startswith("local") or remote_url(settings):
        return
    key = "spark.driver.extraJavaOptions"
    given = settings.conf.get(key, "")
    if "Tiered" in f"{given} {os.environ.get('SPARK_SUBMIT_OPTS', '')}":
        return
    settings.conf[key] = f"{given} -XX:TieredStopAtLevel=1".strip()


def _cast_into(writer, schema):
    """`writer` (export_tables.file_writer) over batches cast to the table's Arrow schema, which is
    what Spark would hand it (list item names and all)."""

    def per_task(batches):
        import pyarrow as pa

        return writer(c for b in batches for c in pa.Table.from_batches([b]).cast(schema).to_batches())

    return per_task


FILE_KEYS = ("path", "rows", "bytes", "partition_values")


def task_timeline(rows: list, t0: float, t_job: float, wall_minus_mono: float) -> dict:
    """Where a fused job's time went, from its tasks' own clocks: before the job (table, planning),
    from the job's submission to its first task, the tasks (first start to last end), after the
    last task, and the tasks' CPU seconds in their workers (what one core would need for them)."""
    if not rows:
        return {"tasks": 0}
    first, last = min(r["task_start"] for r in rows), max(r["task_end"] for r in rows)
    job = t_job + wall_minus_mono
    return {"tasks": len(rows), "before_job_seconds": round(t_job - t0, 3),
            "to_first_task_seconds": round(first - job, 3), "tasks_seconds": round(last - first, 3),
            "after_tasks_seconds": round(time.time() - last, 3),
            "task_cpu_seconds": round(sum(r["task_cpu"] for r in rows), 3)}


def run_export(spark, opts: ExportOptions, progress_factory=None, say=None) -> dict:
    """Export once; the summary document."""
    from pylog.spark.export_tables import FILES_SCHEMA, file_writer, offsets_to_json, open_table
    from pylog.spark.log_plan import ReadOptions

    say = say or (lambda line: None)
    t0 = time.monotonic()
    workers = None
    if _fused(opts):  # the Python workers start while the driver plans, unless the session started them
        from pylog.spark.datasource import start_workers

        workers = start_workers(spark)
    table = open_table(opts.fmt, opts.output, opts.catalog, opts.table)
    recovered = table.recover()
    prior = table.prior_offsets()
    if opts.compacted and table.exists():
        raise UsageError(f"--compacted writes a snapshot of the latest values: {table.where()} already holds "
                         f"a table, give a new --output")
    ro = ReadOptions(topics=tuple(opts.topics), from_offsets={}, from_offset=opts.from_offset,
                     until_offset=opts.until_offset, from_time=opts.from_time, until_time=opts.until_time,
                     isolation=opts.isolation)
    for key, off in prior.items():
        ro.from_offsets[key] = max(off, opts.from_offset or 0)
    plans, reader, load_args = _plan_and_read(spark, opts, ro)
    ends = {(p.topic, p.partition): p.end for p in plans}
    starts = {(p.topic, p.partition): p.start for p in plans}
    run_id = time.strftime("%Y%m%dT%H%M%S") + "-" + uuid.uuid4().hex[:8]
    fused = _fused(opts)
    if fused:  # the schema only (built here, not by a query): the rows never leave the worker reading them
        from pylog.spark.log_rows import spark_struct

        df = None
        schema = spark_struct()
    elif not opts.bootstrap and _server_plans_without_deps():
        from pylog.spark.datasource import tasks_frame

        df = tasks_frame(spark, plans)
    else:
        df = (reader.option("topics", ",".join(sorted({p.topic for p in plans})))
              .option("startingOffsets", offsets_to_json(starts)).option("endingOffsets", offsets_to_json(ends))
              .load(*load_args))
    if df is not None:
        df = _columns(df, opts, spark)
        schema = df.schema
    from pyspark.sql.pandas.types import to_arrow_schema

    arrow_schema = to_arrow_schema(schema, timezone="UTC")
    if opts.fmt == "iceberg":
        table.create(arrow_schema, list(opts.partition_by))
    root, rel = table.data_dir(run_id)
    writer = file_writer(root, rel, list(opts.partition_by), table.keep_partition_columns, run_id)
    todo = sum(ends[k] - starts[k] for k in ends)
    files: list[dict] = []
    timeline = None
    if todo > 0:
        from contextlib import nullcontext

        ctx = progress_factory("export", None, None) if progress_factory else nullcontext()
        with ctx:
            t_job = time.monotonic()
            if fused:
                from pylog.spark.datasource import run_tasks

                rows = run_tasks(spark, plans, _cast_into(writer, arrow_schema), FILES_SCHEMA)
                timeline = task_timeline(rows, t0, t_job, time.time() - time.monotonic())
            else:
                rows = [r.asDict() for r in df.mapInArrow(writer, FILES_SCHEMA).collect()]
        files = [{k: r[k] for k in FILE_KEYS} for r in rows if r["path"]]
    if workers is not None and todo > 0:
        workers.join()
    t_commit = time.monotonic()
    version = table.version()
    committed = False
    if files:
        offsets = dict(prior)
        offsets.update(ends)
        version = table.commit(run_id, files, offsets, arrow_schema, list(opts.partition_by))
        committed = True
    per_part = []
    for p in plans:
        key = (p.topic, p.partition)
        per_part.append({"topic": p.topic, "partition": p.partition, "start": starts[key], "end": ends[key],
                         "offsets": ends[key] - starts[key], "log_start_offset": p.log_start,
                         "log_end_offset": p.log_end, "last_stable_offset": p.stable_end,
                         "read_tasks": len(p.tasks)})
        if not opts.bootstrap:
            per_part[-1]["segments_read"] = len(p.tasks)
    return {"format": opts.fmt, "output": table.where(), "from_dir": opts.from_dir,
            "bootstrap_servers": opts.bootstrap, "topics": sorted({p.topic for p in plans}), "isolation": opts.isolation, "compacted": opts.compacted,
            "partition_by": list(opts.partition_by), "value_format": opts.value_format,
            "records": sum(f["rows"] for f in files), "files": len(files),
            "bytes": sum(f["bytes"] for f in files), "committed": committed, "table_version": version,
            "run_id": run_id, "rolled_forward_files": recovered, "resumed": bool(prior),
            "partitions": per_part, "job_seconds": round(time.monotonic() - t0, 3),
            "timeline": timeline and {**timeline, "commit_seconds": round(time.monotonic() - t_commit, 3)}}


def parse_time_or_offset(text: str | None, what: str) -> tuple[int | None, int | None]:
    """(offset, epoch ms) from --from/--until: a number is an offset; an ISO-8601 time or
    @EPOCH_MS is a time."""
    if text is None:
        return None, None
    t = text.strip()
    if t.startswith("@") and t[1:].isdigit():
        return None, int(t[1:])
    if t.isdigit():
        return int(t), None
    from datetime import datetime, timezone

    try:
        dt = datetime.fromisoformat(t.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"{what} expects an offset, @EPOCH_MS or an ISO-8601 time, got {text!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return None, int(dt.timestamp() * 1000)


def json_doc(doc: dict) -> str:
    return json.dumps(doc, sort_keys=True)
