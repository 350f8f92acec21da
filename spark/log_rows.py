"""Rows of a Kafka log, read on the executors: one segment task in, Arrow record batches out.

The columns are those of Spark's own Kafka source (topic, partition, offset,
timestamp, timestampType, key, value, headers) plus each batch's leader epoch,
so a table from a log dir and one from Spark's Kafka source line up column for
column. What a consumer never sees is never a row: control batches (COMMIT and
ABORT markers) are skipped and, under READ_COMMITTED, so are the data batches
of aborted transactions (the `.txnindex` ranges the planner hands each task,
looked up per batch as the consumer does with a fetch's aborted list). Batches
are walked with the one batch walker (storage.scan.file_batches, CRC checked)
and decoded whole into Arrow column buffers (core.records.record_columns).
"""
from __future__ import annotations

import os

from pylog.core.records.header import CONTROL_MASK, TIMESTAMP_TYPE_MASK

ROWS_PER_BATCH = 1 << 16
BYTES_PER_BATCH = 64 << 20  # keys and values: int32 offsets stay far below 2 GiB

COLUMNS = ("topic", "partition", "offset", "timestamp", "timestampType", "key", "value", "headers", "leaderEpoch")
SPARK_SCHEMA = ("topic string, partition int, offset long, timestamp timestamp, timestampType int, key binary, "
                "value binary, headers array<struct<key: string, value: binary>>, leaderEpoch int")


def spark_struct():
    """SPARK_SCHEMA as a pyspark StructType built here, without asking the JVM to parse it."""
    from pyspark.sql.types import (ArrayType, BinaryType, IntegerType, LongType, StringType, StructField,
                                   StructType, TimestampType)

    header = StructType([StructField("key", StringType()), StructField("value", BinaryType())])
    return StructType([
        StructField("topic", StringType()), StructField("partition", IntegerType()),
        StructField("offset", LongType()), StructField("timestamp", TimestampType()),
        StructField("timestampType", IntegerType()), StructField("key", BinaryType()),
        StructField("value", BinaryType()), StructField("headers", ArrayType(header)),
        StructField("leaderEpoch", IntegerType()),
    ])


def arrow_schema():
    import pyarrow as pa

    return pa.schema([
        ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
        ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32()),
        ("key", pa.binary()), ("value", pa.binary()),
        ("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
        ("leaderEpoch", pa.int32()),
    ])


def to_arrow(cols, topic: str, partition: int, schema):
    """One Arrow record batch of `schema` from a record_columns.Columns."""
    import pyarrow as pa

    from pylog.spark.arrow_values import repeat

    n = len(cols)
    a = cols.arrays()
    hdr_type = schema.field("headers").type
    if a["headers"]:
        rows: list = [[]] * n
        for row, hs in a["headers"]:
            rows[row] = [{"key": k, "value": v} for k, v in hs]
        headers = pa.array(rows, type=hdr_type)
    else:  # built from buffers, as the constant columns: no conversion from Python (arrow_values.py)
        headers = pa.ListArray.from_arrays(repeat(0, pa.int32(), n + 1), pa.nulls(0, hdr_type.value_type),
                                           type=hdr_type)
    arrays = [repeat(topic, pa.string(), n), repeat(partition, pa.int32(), n),
              a["offset"], a["timestamp"].view(pa.timestamp("us", tz="UTC")), a["timestampType"], a["key"],
              a["value"], headers, a["leaderEpoch"]]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def read_task(task, rows_per_batch: int = ROWS_PER_BATCH, bytes_per_batch: int = BYTES_PER_BATCH):
    """Arrow record batches of the records of `task` (a log_plan.SegmentTask) a consumer with the
    task's isolation level would see, in offset order: decoded straight into column buffers
    (core.records.record_columns), no Python object per record."""
    from pylog.core.records.batch import RecordBatch
    from pylog.core.records.errors import CorruptRecordError, RecordCountMismatchError
    from pylog.core.records.record_columns import Columns
    from pylog.storage.aborted_ranges import AbortedRanges
    from pylog.storage.scan import file_batches
    from pylog.storage.txn_index import AbortedTxn

    schema = arrow_schema()
    aborted = AbortedRanges([AbortedTxn(pid, first, last, 0) for pid, first, last in task.aborted]) \
        if task.aborted and task.isolation == "read_committed" else None
    start, end = task.start, task.end
    cols = Columns()
    with open(task.path, "rb", buffering=0) as f:
        size = os.fstat(f.fileno()).st_size
        for buf, off, _, h in file_batches(f.fileno(), task.position, size, task.path, quiet=True):
            if h.base_offset >= end:
                break
            if h.base_offset + h.last_offset_delta < start or h.attributes & CONTROL_MASK:
                continue
            if aborted is not None and aborted.is_aborted(h):
                continue
            if h.record_count == 0:
                continue  # an empty batch the cleaner kept for a producer's sequence
            try:
                n = cols.add(RecordBatch(buf, off).records_data(), h.base_offset, h.base_timestamp,
                             h.max_timestamp if h.attributes & 0x08 else None, start, end,
                             (h.attributes & TIMESTAMP_TYPE_MASK) >> 3, h.partition_leader_epoch)
            except CorruptRecordError as e:
                raise CorruptRecordError(e.args[0], off) from None
            if n != h.record_count:
                raise RecordCountMismatchError(h.record_count, n, off)
            if len(cols) >= rows_per_batch or cols.data_bytes() >= bytes_per_batch:
                yield to_arrow(cols, task.topic, task.partition, schema)
                cols = Columns()
    if len(cols):
        yield to_arrow(cols, task.topic, task.partition, schema)
