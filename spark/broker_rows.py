"""Rows of a topic read through the Kafka protocol, on the executors: one offset range in, Arrow batches out.

A `broker_plan.FetchTask` is read with Fetch requests to the partition's
leader (pylog's client, `NetworkClient`, on a loop thread of the task), one
request in flight while the previous answer is decoded. Each answer is walked
as the consumer walks it (`fetch_records.scan_records`: CRCs checked, control
batches hidden, and under read_committed the batches of the answer's aborted
transactions dropped), and every kept batch becomes rows with the same
column buffers as segment files (`record_columns.Columns`): the columns and values are
those of a read from the log dir, byte for byte.
"""
from __future__ import annotations

import asyncio
import time

from pylog.spark.log_rows import BYTES_PER_BATCH, ROWS_PER_BATCH, arrow_schema, to_arrow
from pylog.core.errors import DataError

RETRIES = 20
EMPTY_WAIT_S = 60.0  # a range below the planned end that stays empty this long is an error


async def _fetch(client, task, offset: int, cfg: dict) -> dict:
    """One partition's part of a Fetch answer at `offset`, retried across leader changes."""
    from pylog.core.client.errors import ConnectionFailedError, KafkaTimeoutError, NoBrokersAvailableError
    from pylog.core.client.fetcher import REFRESH_ERRORS
    from pylog.core.errors import ErrorCode, error_name

    delay = cfg["retry.backoff.ms"] / 1000.0
    last = None
    for _ in range(RETRIES):
        leader = client.metadata.leader_for(task.topic, task.partition)
        if leader < 0:
            await client.refresh_metadata({task.topic}, allow_auto_create=False)
            leader = client.metadata.leader_for(task.topic, task.partition)
        if leader >= 0:
            pi = client.metadata.partition_info(task.topic, task.partition)
            body = {"replica_id": -1, "max_wait_ms": cfg["fetch.max.wait.ms"], "min_bytes": 1,
                    "max_bytes": cfg["fetch.max.bytes"], "isolation_level": 1 if task.isolation == "read_committed"
                    else 0, "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
                    "topics": [{"topic": task.topic, "partitions": [{
                        "partition": task.partition, "current_leader_epoch": pi.leader_epoch if pi else -1,
                        "fetch_offset": offset, "log_start_offset": -1,
                        "partition_max_bytes": cfg["max.partition.fetch.bytes"]}]}]}
            try:
                resp = await client.request(leader, "Fetch", body,
                                            timeout=cfg["request.timeout.ms"] / 1000.0 + 1.0)
                parts = [p for t in resp.get("responses", []) for p in t.get("partitions", [])
                         if p.get("partition_index") == task.partition]
                code = resp.get("error_code", 0) or (parts[0].get("error_code", 0) if parts else 0)
                if not code and parts:
                    return parts[0]
                if code == ErrorCode.OFFSET_OUT_OF_RANGE:
                    raise DataError(f"{task.topic}-{task.partition}: offset {offset} is no longer in the log "
                                    f"(retention moved its start); rerun to plan again")
                if code and code not in REFRESH_ERRORS:
                    raise DataError(f"Fetch {task.topic}-{task.partition} at {offset}: {error_name(code)}")
                last = error_name(code) if code else "no answer for the partition"
            except (OSError, asyncio.TimeoutError, ConnectionFailedError, KafkaTimeoutError,
                    NoBrokersAvailableError) as e:
                last = f"{e.__class__.__name__}: {e}"
        await asyncio.sleep(delay)
        delay = min(delay * 2, 2.0)
        await client.refresh_metadata({task.topic}, allow_auto_create=False)
    raise DataError(f"cannot fetch {task.topic}-{task.partition} from {task.bootstrap}: {last}")


def _add_batch(cols, b, start: int, end: int) -> None:
    """The records in [start, end) of one kept batch into `cols` (record_columns.Columns)."""
    from pylog.core.records.errors import RecordCountMismatchError
    from pylog.core.records.header import TIMESTAMP_TYPE_MASK

    h = b.header
    if getattr(h, "magic", 2) == 2:
        if h.record_count == 0:
            return
        n = cols.add(b.records_data(), h.base_offset, h.base_timestamp, h.max_timestamp if h.attributes & 0x08
                     else None, start, end, (h.attributes & TIMESTAMP_TYPE_MASK) >> 3, h.partition_leader_epoch)
        if n != h.record_count:
            raise RecordCountMismatchError(h.record_count, n, b.position)
        return
    recs = [r for r in b.records() if start <= r.offset < end]
    cols.add_records(recs, h.timestamp_type if h.magic == 1 else -1, -1)


def read_fetch_task(task, rows_per_batch: int = ROWS_PER_BATCH):
    """Arrow record batches of the records of `task` (a broker_plan.FetchTask) a consumer with the
    task's isolation level would read, in offset order."""
    from pylog.core.client.cluster import NetworkClient
    from pylog.core.client.consumer import resolve_consumer_config
    from pylog.core.client.fetch_records import scan_records
    from pylog.core.client.loop import LoopThread
    from pylog.spark.broker_plan import ClusterSource
    from pylog.core.records.record_columns import Columns

    schema = arrow_schema()
    cfg = resolve_consumer_config(ClusterSource(task.bootstrap, dict(task.props)).client_props())
    tp = f"{task.topic}-{task.partition}"
    loop = LoopThread("pylog-spark-fetch")
    client = NetworkClient(cfg)
    client.allow_auto_create = False
    read_committed = task.isolation == "read_committed"
    try:
        pos, cols = task.start, Columns()
        pending = loop.submit(_fetch(client, task, pos, cfg))
        empty_since = None
        while pos < task.end:
            p = pending.result()
            data = p.get("records") or b""
            parts, next_offset, _ = scan_records(tp, data, pos, check_crcs=True, read_committed=read_committed,
                                                 aborted=p.get("aborted_transactions"))
            if next_offset <= pos and not parts:
                if data and len(data) >= cfg["max.partition.fetch.bytes"]:
                    raise DataError(f"{tp}: the batch at offset {pos} is larger than max.partition.fetch.bytes "
                                    f"({cfg['max.partition.fetch.bytes']}); set -X max.partition.fetch.bytes=")
                empty_since = empty_since or time.monotonic()
                if time.monotonic() - empty_since > EMPTY_WAIT_S:
                    raise DataError(f"{tp}: nothing to fetch at offset {pos}, below the planned end {task.end} "
                                    f"(high watermark {p.get('high_watermark')})")
            else:
                empty_since = None
            start = pos
            pos = max(pos, next_offset)
            if pos < task.end:
                pending = loop.submit(_fetch(client, task, pos, cfg))  # in flight while this one is decoded
            for b, _ in parts:
                if getattr(b.header, "base_offset", getattr(b.header, "offset", 0)) >= task.end:
                    break
                _add_batch(cols, b, start, task.end)
                if len(cols) >= rows_per_batch or cols.data_bytes() >= BYTES_PER_BATCH:
                    yield to_arrow(cols, task.topic, task.partition, schema)
                    cols = Columns()
        if len(cols):
            yield to_arrow(cols, task.topic, task.partition, schema)
    finally:
        loop.close_with(client.close(), 5)
