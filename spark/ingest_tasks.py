"""The executor side of `pylog spark-ingest`: functions Spark tasks run on Arrow batches.

They import only pylog.core, pylog.storage, pyarrow, pyspark's TaskContext and
the standard library (executors need no click or rich). The driver side is
ingest.py.

The headers column `h` is one binary value per row: for each --headers-columns
column in order, a 4-byte big-endian length (-1 for null) and the bytes; the
names travel in the task's context.
"""
from __future__ import annotations

import os
import random
import shutil
import time
from collections import defaultdict
from pathlib import Path

STAGING_DIR = ".pylog-spark-staging"
RECORD_OVERHEAD = 21  # upper bound of a v2 record's framing (varints, attributes), for sticky switching


NULL_HEADER = b"\xff\xff\xff\xff"  # the length -1 of a null header value


def decode_headers(blob: bytes | None, names: list[str]) -> list[tuple[str, bytes | None]]:
    """Headers of one row from the binary `h` column (see the module docstring)."""
    if not blob:
        return []
    out = []
    pos = 0
    for name in names:
        n = int.from_bytes(blob[pos:pos + 4], "big")
        pos += 4
        if n == 0xFFFFFFFF:
            out.append((name, None))
        else:
            out.append((name, blob[pos:pos + n]))
            pos += n
    return out


_ENCODERS: dict = {}


def value_encoder(ctx: dict):
    """The registry encoder of --value-format (None without it), built once per executor process."""
    spec = ctx.get("value_encoding")
    if spec is None:
        return None
    key = (spec["id"], spec.get("message"))
    enc = _ENCODERS.get(key)
    if enc is None:
        from pylog.core.client.schema_registry import encoder_from_spec

        enc = _ENCODERS[key] = encoder_from_spec(spec)
    return enc


def _encode_values(values, encode):
    from pylog.core.schemas.codecs import ValueMismatch

    out = []
    for v in values:
        try:
            out.append(encode(v))
        except (ValueMismatch, ValueError) as e:
            raise RuntimeError(f"a row does not match the value schema: {e} (row: {bytes(v)[:200]!r})") from None
    return out


def _columns(batch, header_names=(), encode=None):
    """(keys, values, headers, timestamps) of an Arrow record batch as Python lists,
    headers decoded into [(name, value)] per row. Headers (h) and timestamps (t)
    are absent from the batch when the options give none."""
    n = batch.num_rows
    names = batch.schema.names
    keys = batch.column(names.index("k")).to_pylist()
    values = batch.column(names.index("v")).to_pylist()
    if encode is not None:
        values = _encode_values(values, encode)
    if "h" in names:
        headers = [decode_headers(b, header_names) for b in batch.column(names.index("h")).to_pylist()]
    else:
        headers = [None] * n
    stamps = batch.column(names.index("t")).to_pylist() if "t" in names else [None] * n
    return keys, values, headers, stamps


# ---------------------------------------------------------------- executor side: produce
PRODUCE_SCHEMA = "partition int, count long, bytes long"


def produce_task(batches, ctx: dict, acc_records, acc_bytes):
    """Send one input partition (Arrow batches) through a pylog Producer. Yields one
    Arrow batch: a row per partition with its acknowledged count, and a row with
    partition -1 holding the task's records and bytes sent."""
    import pyarrow as pa

    from pylog.core.client import Producer

    counts: dict[int, int] = defaultdict(int)
    failures = [0, None]

    def on_done(md, error):
        if error is not None:
            failures[0] += 1
            if failures[1] is None:
                failures[1] = error
        else:
            counts[md.partition] += 1

    topic = ctx["topic"]
    n = nbytes = 0
    producer = Producer(ctx["props"])
    try:
        send = producer.send
        for batch in batches:
            keys, values, headers, stamps = _columns(batch, ctx["headers"], value_encoder(ctx))
            for k, v, h, t in zip(keys, values, headers, stamps):
                send(topic, v, k, timestamp=t, headers=h or None, callback=on_done)
                nbytes += (len(k) if k else 0) + (len(v) if v else 0)
            n += len(keys)
        producer.flush()
    finally:
        producer.close()
    if failures[0]:
        e = failures[1]
        raise RuntimeError(f"{failures[0]} of {n} records were not delivered: {e.__class__.__name__}: {e}")
    if acc_records is not None:  # none through Spark Connect
        acc_records.add(n)
        acc_bytes.add(nbytes)
    parts = [-1] + sorted(counts)
    yield pa.RecordBatch.from_arrays(
        [pa.array(parts, pa.int32()), pa.array([n] + [counts[p] for p in parts[1:]], pa.int64()),
         pa.array([nbytes] + [0] * (len(parts) - 1), pa.int64())],
        names=["partition", "count", "bytes"])


# ---------------------------------------------------------------- executor side: segments
ROW_BITS = 40  # row number bits of the order column: (input task << 40) | row


def assign_partitions(batches, num_partitions: int, batch_size: int, shuffle_keys: list[int], header_names=()):
    """Arrow batches of (p, sk, o, k, v[, h][, t]): each input row with its Kafka partition p,
    the shuffle key sk that Spark's hash partitioning sends to Spark partition p, and
    its input position o (input task, row number) to restore the order after the shuffle.

    Keyed rows: pylog's murmur2 partitioner (the Java client's choice). Keyless
    rows: a sticky partition per input task that moves on once batch.size bytes
    went to it, as the Java client's sticky partitioner moves on when a batch is
    full. Seeded by the input task index so a retried task makes the same
    choices (a Spark shuffle needs deterministic map output)."""
    import pyarrow as pa
    from pyspark import TaskContext

    from pylog.core.client.partitioner import StickyPartitioner, partition_for_key

    index = TaskContext.get().partitionId()
    random.seed(index * 7919 + num_partitions)
    sticky = StickyPartitioner()
    current = None
    filled = 0
    # keys repeat in most inputs; murmur2 in Python is the costly part
    memo: dict[bytes, int] = {}
    row = index << ROW_BITS
    for batch in batches:
        n = batch.num_rows
        keys = batch.column(batch.schema.names.index("k")).to_pylist()
        parts = [0] * n
        values = headers = None
        for i, k in enumerate(keys):
            if k is not None:
                p = memo.get(k)
                if p is None:
                    if len(memo) >= 1 << 20:
                        memo.clear()
                    p = memo[k] = partition_for_key(k, num_partitions)
            else:
                if values is None:
                    _, values, headers, _ = _columns(batch, header_names)
                if current is None:
                    current = sticky.partition("t", num_partitions)
                p = current
                v = values[i]
                filled += (len(v) if v else 0) + RECORD_OVERHEAD + \
                    sum(len(a) + len(b or b"") for a, b in headers[i] or ())
                if filled >= batch_size:
                    current = sticky.next_partition("t", num_partitions, prev=current)
                    filled = 0
            parts[i] = p
        yield pa.RecordBatch.from_arrays(
            [pa.array(parts, pa.int32()), pa.array([shuffle_keys[p] for p in parts], pa.int64()),
             pa.array(range(row, row + n), pa.int64()), *batch.columns],
            names=["p", "sk", "o", *batch.schema.names])
        row += n


def staging_root(log_dir: str) -> Path:
    return Path(log_dir) / STAGING_DIR


WRITE_SCHEMA = "partition int, records long, bytes long, end_offset long"


def write_partition_task(batches, ctx: dict, acc_records, acc_bytes):
    """Write one Kafka partition's rows (Arrow batches of (p, k, v[, h][, t]), in input
    order) into its staging folder; yields one summary row."""
    import pyarrow as pa
    from pyspark import TaskContext

    from pylog.core.config import BROKER_CONFIGS, TOPIC_CONFIGS, topic_defaults_from_broker
    from pylog.core.records import BatchBuilder
    from pylog.storage import Log

    def summary(records, nbytes, end):
        return pa.RecordBatch.from_arrays(
            [pa.array([kp], pa.int32()), pa.array([records], pa.int64()), pa.array([nbytes], pa.int64()),
             pa.array([end], pa.int64())], names=["partition", "records", "bytes", "end_offset"])

    kp = TaskContext.get().partitionId()
    topic = ctx["topic"]
    start = ctx["start_offsets"][kp]
    pdir = staging_root(ctx["log_dir"]) / f"{topic}-{kp}"
    # a retried task starts again from nothing: the staging folder is its own
    shutil.rmtree(pdir, ignore_errors=True)
    batches = (b for b in batches if b.num_rows)
    first = next(batches, None)
    if first is None:
        yield summary(0, 0, start)
        return
    config = TOPIC_CONFIGS.resolve(ctx["overrides"], base=topic_defaults_from_broker(BROKER_CONFIGS.resolve({})))
    log = Log(pdir, config, topic=topic, partition=kp, log_start_offset=start)
    codec = ctx["codec"]
    batch_size = ctx["batch_size"]
    epoch = ctx["leader_epoch"]
    now = int(time.time() * 1000)
    n = nbytes = 0
    try:
        def all_batches():
            yield first
            yield from batches

        b = BatchBuilder(codec=codec)
        for batch in all_batches():
            ps = batch.column(0)
            if ps.null_count or ps.to_pylist().count(kp) != batch.num_rows:
                raise RuntimeError(f"task {kp} got rows of another Kafka partition (shuffle key mismatch)")
            keys, values, headers, stamps = _columns(batch, ctx["headers"], value_encoder(ctx))
            for k, v, h, t in zip(keys, values, headers, stamps):
                if b.record_count and b.size_in_bytes() + len(k or b"") + len(v or b"") + RECORD_OVERHEAD > batch_size:
                    log.append_as_leader(bytearray(b.build()), epoch)
                    b = BatchBuilder(codec=codec)
                b.append(now if t is None else t, k, v, h or ())
                nbytes += (len(k) if k else 0) + (len(v) if v else 0)
            n += len(keys)
        if b.record_count:
            log.append_as_leader(bytearray(b.build()), epoch)
        log.flush()
        end = log.log_end_offset
    finally:
        log.close()
    if acc_records is not None:
        acc_records.add(n)
        acc_bytes.add(nbytes)
    yield summary(n, nbytes, end)


# ---------------------------------------------------------------- shared log dir (segments on a cluster)
def probe_task(batches, marker: str):
    """Per row: the executor's host and whether it sees `marker` (is the log dir shared?)."""
    import socket

    import pyarrow as pa

    for batch in batches:
        n = batch.num_rows
        seen = os.path.exists(marker)
        yield pa.RecordBatch.from_arrays([pa.array([socket.gethostname()] * n), pa.array([seen] * n)],
                                         names=["host", "seen"])
