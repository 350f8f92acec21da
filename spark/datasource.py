"""`spark.read.format("pylog").load(DIR)`: Kafka log dirs as a Spark DataFrame (Spark 4's Python data source).

    from pylog.spark.datasource import register
    register(spark)
    df = (spark.read.format("pylog")
          .option("topics", "orders,payments")          # default: every topic of the dir
          .option("partitions", "0,1")                    # default: every partition
          .option("startingOffsets", '{"orders": {"0": 100}}')  # or one number for all
          .option("endingOffsets", 5000)                  # exclusive; a number or JSON as above
          .option("startingTimestamp", 1700000000000)     # the first offset with timestamp >= (ListOffsets)
          .option("endingTimestamp", 1700003600000)
          .option("isolation", "read_committed")          # the default; or read_uncommitted
          .load("/var/lib/kafka/data"))

    # the same through a Kafka-protocol cluster (pylog or Apache Kafka), Spark's Kafka option names
    df = (spark.read.format("pylog").option("kafka.bootstrap.servers", "127.0.0.1:9092")
          .option("subscribe", "orders")                  # or "topics"
          .option("kafka.security.protocol", "SSL")       # any kafka.* client property
          .option("minPartitions", 8)                     # offset ranges split into at least 8 tasks
          .load())

The columns are Spark's Kafka source's plus `leaderEpoch` (log_rows.py).
Filters on topic, partition and offset are pushed down and applied exactly at
planning (no segment outside them is opened); `timestamp >= T` moves the start
to the first offset at or after T through the time index (Spark still applies
the filter to later records whose timestamps run backwards). Pushdown needs
`spark.sql.python.filterPushdown.enabled`, which `register` switches on. One
read task per segment, or with `minPartitions` offset ranges of about equal
bytes cut at offset-index entries; the DIR must be at the same path on every
executor.
Through a cluster, the planning is ListOffsets (broker_plan.py) and each task
fetches an offset range (broker_rows.py).
"""
from __future__ import annotations

import datetime as _dt
import json
import weakref

from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    InputPartition,
    LessThan,
    LessThanOrEqual,
)

from pylog.core.errors import UsageError

NAME = "pylog"


def _ints(text) -> tuple | None:
    if text is None or str(text).strip() == "":
        return None
    try:
        return tuple(int(x) for x in str(text).split(",") if x.strip())
    except ValueError:
        raise UsageError(f"partitions: expected numbers separated by commas, got {text!r}") from None


def _int_option(options, name: str) -> int | None:
    v = options.get(name)
    if v is None or str(v).strip() == "":
        return None
    try:
        return int(v)
    except ValueError:
        raise UsageError(f"option {name}: expected a number, got {v!r}") from None


def parse_starting_offsets(text, name: str = "startingOffsets") -> tuple[int | None, dict]:
    """A number (every partition) or Spark's Kafka JSON {"topic": {"0": offset}}."""
    if text is None or str(text).strip() in ("", "earliest", "latest"):
        return None, {}
    text = str(text).strip()
    if text.lstrip("-").isdigit():
        return int(text), {}
    try:
        doc = json.loads(text)
        return None, {(t, int(p)): int(o) for t, parts in doc.items() for p, o in parts.items()}
    except (ValueError, AttributeError, TypeError):
        raise UsageError(f"{name}: expected a number or JSON such as {{\"topic\": {{\"0\": 42}}}}, "
                         f"got {text!r}") from None


def read_options(options) -> "object":
    """log_plan.ReadOptions from the data source's options (case-insensitive keys)."""
    from pylog.spark.log_plan import ReadOptions

    o = {str(k).lower(): v for k, v in options.items()}
    topics = tuple(t.strip() for t in (o.get("topics") or o.get("topic") or o.get("subscribe") or "").split(",")
                   if t.strip())
    start, per_partition = parse_starting_offsets(o.get("startingoffsets", o.get("startingoffset")))
    end, end_per_partition = parse_starting_offsets(o.get("endingoffsets", o.get("endingoffset")), "endingOffsets")
    ro = ReadOptions(topics=topics, partitions=_ints(o.get("partitions")), from_offsets=per_partition,
                     from_offset=start, until_offset=end, until_offsets=end_per_partition,
                     from_time=_int_option(o, "startingtimestamp"), until_time=_int_option(o, "endingtimestamp"),
                     isolation=str(o.get("isolation", o.get("kafka.isolation.level", "read_committed"))).lower())
    ro.check()
    return ro


def _ms(value) -> int | None:
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.timezone.utc)
        return int(value.timestamp() * 1000)
    if isinstance(value, (int, float)):
        return int(value)
    return None


def cluster_source(options):
    """broker_plan.ClusterSource from `kafka.bootstrap.servers` and the other `kafka.*` options, or None."""
    from pylog.spark.broker_plan import ClusterSource

    o = {str(k): v for k, v in options.items()}
    props = {k[len("kafka."):]: str(v) for k, v in o.items() if k.lower().startswith("kafka.")}
    props.pop("isolation.level", None)  # the reader's isolation option decides
    bootstrap = props.pop("bootstrap.servers", None) or o.get("bootstrap.servers")
    return ClusterSource(str(bootstrap), props) if bootstrap else None


class SegmentPartition(InputPartition):
    def __init__(self, task):
        super().__init__(task)
        self.task = task


class PylogReader(DataSourceReader):
    def __init__(self, path: str | None, options):
        self.path = path
        self.source = cluster_source(options)
        self.min_tasks = _int_option({str(k).lower(): v for k, v in options.items()}, "minpartitions") or 1
        self.opts = read_options(options)
        self.topic_in: set | None = None
        self.partition_in: set | None = None

    def pushFilters(self, filters):
        o = self.opts
        for f in filters:
            col = f.attribute[0] if len(getattr(f, "attribute", ())) == 1 else None
            if not hasattr(f, "value"):
                yield f
                continue
            if col == "topic" and isinstance(f, (EqualTo, In)):
                vals = {f.value} if isinstance(f, EqualTo) else set(f.value)
                self.topic_in = vals if self.topic_in is None else self.topic_in & vals
            elif col == "partition" and isinstance(f, (EqualTo, In)) and all(
                    isinstance(v, int) for v in ([f.value] if isinstance(f, EqualTo) else f.value)):
                vals = {f.value} if isinstance(f, EqualTo) else set(f.value)
                self.partition_in = vals if self.partition_in is None else self.partition_in & vals
            elif col == "offset" and isinstance(f.value, int) and isinstance(
                    f, (EqualTo, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)):
                lo = {EqualTo: f.value, GreaterThan: f.value + 1, GreaterThanOrEqual: f.value}.get(type(f))
                hi = {EqualTo: f.value + 1, LessThan: f.value, LessThanOrEqual: f.value + 1}.get(type(f))
                if lo is not None:
                    o.from_offset = max(o.from_offset or 0, lo)
                    o.from_offsets = {k: max(v, lo) for k, v in o.from_offsets.items()}
                if hi is not None:
                    o.until_offset = hi if o.until_offset is None else min(o.until_offset, hi)
            elif col == "timestamp" and isinstance(f, (GreaterThan, GreaterThanOrEqual)) and _ms(f.value) is not None:
                ms = _ms(f.value) + (1 if isinstance(f, GreaterThan) else 0)
                o.from_time = ms if o.from_time is None else max(o.from_time, ms)
                yield f  # records after the start may still be older: Spark filters those
            else:
                yield f

    def plans(self):
        from pylog.spark.log_plan import plan_log_dir

        o = self.opts
        if self.topic_in is not None:
            o.topics = tuple(sorted(self.topic_in & set(o.topics))) if o.topics else tuple(sorted(self.topic_in))
            if not o.topics:
                return []
        if self.partition_in is not None:
            o.partitions = tuple(sorted(self.partition_in & set(o.partitions))) if o.partitions else \
                tuple(sorted(self.partition_in))
            if not o.partitions:
                return []
        if self.source is not None:
            from pylog.spark.broker_plan import plan_cluster

            return plan_cluster(self.source, o, self.min_tasks)
        return plan_log_dir(self.path, o, self.min_tasks)

    def partitions(self):
        tasks = [SegmentPartition(t) for p in self.plans() for t in p.tasks]
        return tasks or [InputPartition(None)]

    def read(self, partition):
        task = getattr(partition, "task", None)
        if task is None:
            return iter(())
        if hasattr(task, "bootstrap"):
            from pylog.spark.broker_rows import read_fetch_task

            return read_fetch_task(task)
        from pylog.spark.log_rows import read_task

        return read_task(task)


class PylogDataSource(DataSource):
    """Kafka log dirs (pylog's or Apache Kafka's) as a DataFrame: see the module's docstring."""

    @classmethod
    def name(cls) -> str:
        return NAME

    def schema(self):
        from pylog.spark.log_rows import SPARK_SCHEMA

        return SPARK_SCHEMA

    def reader(self, schema):
        path = self.options.get("path")
        if not path and cluster_source(self.options) is None:
            raise UsageError('spark.read.format("pylog") needs a log dir, .load(DIR), or a cluster, '
                             '.option("kafka.bootstrap.servers", SERVERS)')
        return PylogReader(path, self.options)


def tasks_frame(spark, plans, per_task=None, schema=None):
    """The rows of `plans` (planned here, by log_plan.plan_log_dir or broker_plan.plan_cluster) as a DataFrame without the
    data source API: spark.range with one row, one Spark partition, per segment task, each read
    by mapInArrow (log_rows.read_task). For a Spark Connect server whose own Python (which plans a
    data source) lacks pylog's dependencies while its executors run a shipped environment, and for
    `spark-export`'s fused tasks: with `per_task` (Arrow batches in, Arrow batches of `schema` out)
    each task's rows go straight into it in the same Python worker, never through the JVM."""
    import pickle

    from pylog.spark.log_rows import SPARK_SCHEMA

    tasks = [pickle.dumps(t) for p in plans for t in p.tasks]
    if not tasks:
        return spark.createDataFrame([], schema or SPARK_SCHEMA)

    def read(batches):
        import pickle as _pickle

        from pylog.spark.broker_rows import read_fetch_task
        from pylog.spark.log_rows import read_task

        for b in batches:
            for i in b.column("id").to_pylist():
                task = _pickle.loads(tasks[i])
                rows = read_fetch_task(task) if hasattr(task, "bootstrap") else read_task(task)
                yield from (rows if per_task is None else per_task(rows))

    return spark.range(0, len(tasks), 1, len(tasks)).mapInArrow(read, schema or SPARK_SCHEMA)


def run_tasks(spark, plans, per_task, schema) -> list[dict]:
    """Run `per_task` (Arrow batches of one task's rows in, Arrow batches of `schema` out) over each
    task of `plans` and return its output rows as dicts, each with the task's `task_start`,
    `task_end` (epoch seconds) and `task_cpu` (its worker's CPU seconds). On a classic session the
    job is an RDD of task numbers: no SQL plan, code generation or Arrow exchange for the JVM to
    prepare, which on a fresh JVM is seconds of driver work before the first task; through Spark
    Connect (no RDDs) it is tasks_frame."""
    import pickle

    tasks = [pickle.dumps(t) for p in plans for t in p.tasks]
    if not tasks:
        return []

    def timed(rows):
        import time as _time

        import pyarrow as pa

        from pylog.spark.arrow_values import repeat

        t0, c0 = _time.time(), _time.process_time()
        out = [b for b in per_task(rows) if b.num_rows]
        extra = {"task_start": t0, "task_end": _time.time(), "task_cpu": _time.process_time() - c0}
        for b in out:
            yield pa.RecordBatch.from_arrays(list(b.columns) + [repeat(v, pa.float64(), b.num_rows)
                                                                for v in extra.values()],
                                             names=list(b.schema.names) + list(extra))

    try:
        sc = spark.sparkContext
    except Exception:  # Spark Connect
        sc = None
    if sc is None:
        timed_schema = f"{schema}, task_start double, task_end double, task_cpu double"
        return [r.asDict() for r in tasks_frame(spark, plans, timed, timed_schema).collect()]

    def run(numbers):
        import pickle as _pickle

        from pylog.spark.broker_rows import read_fetch_task
        from pylog.spark.log_rows import read_task

        for i in numbers:
            task = _pickle.loads(tasks[i])
            for b in timed(read_fetch_task(task) if hasattr(task, "bootstrap") else read_task(task)):
                yield from b.to_pylist()

    return sc.parallelize(range(len(tasks)), len(tasks)).mapPartitions(run).collect()


# the SparkContexts whose Python workers have been started (start_workers)
_WARM_CONTEXTS: "weakref.WeakSet" = weakref.WeakSet()


def _warm(_):
    import pyarrow.compute  # noqa: F401 - the imports are the point
    import pyarrow.parquet  # noqa: F401

    from pylog.spark import arrow_values, broker_rows, export_tables, log_rows  # noqa: F401
    return iter(())


def warm_workers(sc) -> None:
    """Start `sc`'s Python workers now, one per task slot, each importing what a task needs
    (pyarrow, Parquet, pylog's task modules), and wait for them. A failure is left to the first
    real job, which reports what is wrong with the executors."""
    n = max(1, int(sc.defaultParallelism))
    try:
        sc.parallelize(range(n), n).mapPartitions(_warm).count()
    except Exception:  # noqa: BLE001 - see above
        return
    _WARM_CONTEXTS.add(sc)


def start_workers(spark):
    """Start the executors' Python workers in the background (warm_workers), while the driver goes
    on planning; Spark then runs the job's tasks on those idle workers. The thread (join it before
    the session stops), or None when there is nothing to start: through Spark Connect (no
    SparkContext), or when the session's start-up already started them."""
    import threading

    try:
        sc = spark.sparkContext
    except Exception:  # Spark Connect
        return None
    if sc in _WARM_CONTEXTS:
        return None
    thread = threading.Thread(target=warm_workers, args=(sc,), name="pylog-spark-start-workers", daemon=True)
    thread.start()
    return thread


def register(spark) -> None:
    """Make `spark.read.format("pylog")` available in `spark` (and let it push filters down)."""
    spark.conf.set("spark.sql.python.filterPushdown.enabled", "true")
    spark.dataSource.register(PylogDataSource)
