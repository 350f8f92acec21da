"""The producer: partitioner + accumulator on the caller's thread, the sender on
the event loop thread.

`Producer` is the synchronous facade (commands, Spark tasks): `send()` returns
a `RecordFuture`, `flush()` waits for every record sent so far, `close()`
flushes and stops. Idempotence (on by default) follows KIP-98/KIP-360:
InitProducerId, sequences per partition assigned when a batch is first
drained and advanced by its record count, retried batches re-sent in sequence
order, an epoch bump after OUT_OF_ORDER_SEQUENCE_NUMBER / UNKNOWN_PRODUCER_ID on
the first unacknowledged batch, DUPLICATE_SEQUENCE_NUMBER taken as success.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time

from pylog.core.client.accumulator import (
    HEADER_SIZE,
    RECORD_OVERHEAD_MAX,
    BufferPool,
    ProducerBatch,
    RecordAccumulator,
    RecordMetadata,
    expiry_error,
)
from pylog.core.client.cluster import NetworkClient
from pylog.core.client.errors import (
    ConnectionFailedError,
    KafkaTimeoutError,
    ProducerClosedError,
    RecordTooLargeError,
)
from pylog.core.client.loop import LoopThread
from pylog.core.client.partitioner import StickyPartitioner, murmur2
from pylog.core.config import PRODUCER_CONFIGS
from pylog.core.errors import ERROR_NAMES, KafkaError, UsageError, error_for_code, is_retriable

log = logging.getLogger(__name__)

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
# errors after which the leader may have moved: refresh metadata before retrying
_METADATA_ERRORS = {3, 5, 6, 9, 74, 75}


def resolve_producer_config(props: dict | None = None, **overrides):
    props = dict(props or {})
    props.update({k: str(v) for k, v in overrides.items()})
    cfg = PRODUCER_CONFIGS.resolve(props)
    if cfg["enable.idempotence"]:
        if cfg["acks"] not in ("all", "-1"):
            if "enable.idempotence" in cfg.overridden:
                raise UsageError("enable.idempotence=true requires acks=all")
            cfg["enable.idempotence"] = False
        if cfg["max.in.flight.requests.per.connection"] > 5:
            if "enable.idempotence" in cfg.overridden:
                raise UsageError("enable.idempotence=true requires max.in.flight.requests.per.connection <= 5")
            cfg["enable.idempotence"] = False
        if cfg["retries"] == 0 and "enable.idempotence" in cfg.overridden:
            raise UsageError("enable.idempotence=true requires retries > 0")
        elif cfg["retries"] == 0:
            cfg["enable.idempotence"] = False
    if cfg["transactional.id"]:
        raise UsageError("transactional.id: transactions are not supported by pylog's producer")
    if cfg["delivery.timeout.ms"] < cfg["linger.ms"] + cfg["request.timeout.ms"]:
        if "delivery.timeout.ms" in cfg.overridden:
            raise UsageError("delivery.timeout.ms should be equal to or larger than linger.ms + request.timeout.ms")
        cfg["delivery.timeout.ms"] = cfg["linger.ms"] + cfg["request.timeout.ms"]
    return cfg


class RecordFuture:
    """Result of one send(): `get(timeout)` returns RecordMetadata or raises the delivery error."""

    __slots__ = ("_batch", "_index", "_producer", "_error")

    def __init__(self, producer, batch, index, error=None):
        self._producer = producer
        self._batch = batch
        self._index = index
        self._error = error

    def done(self) -> bool:
        return self._error is not None or self._batch.done

    def exception(self):
        if self._error is not None:
            return self._error
        return self._batch.error if self._batch.done else None

    def get(self, timeout: float | None = None) -> RecordMetadata:
        if self._error is not None:
            raise self._error
        b = self._batch
        if not b.done:
            self._producer._wait_batch(b, timeout)
        if b.error is not None:
            raise b.error
        return _metadata(b, self._index)

    result = get


def _metadata(b: ProducerBatch, i: int) -> RecordMetadata:
    if b.log_append_time >= 0:
        ts = b.log_append_time
    elif b.timestamps is not None:
        ts = b.timestamps[i]
    else:
        ts = b.base_ts if b.base_ts is not None else -1
    if b.offsets is not None:
        off = b.offsets[i]
    else:
        off = b.base_offset + i if b.base_offset >= 0 else -1
    return RecordMetadata(b.topic, b.partition, off, ts)


class _PartitionState:
    __slots__ = ("next_seq", "inflight", "resync", "last_acked")

    def __init__(self):
        self.next_seq = 0
        self.inflight = []  # sequenced batches in flight, sequence order
        self.resync = False
        self.last_acked = -1  # sequence of the last acknowledged record


class Producer:
    """A Kafka producer. Thread-safe `send()`; the network runs on a background loop thread."""

    def __init__(self, props: dict | None = None, *, loop: LoopThread | None = None, **overrides):
        cfg = resolve_producer_config(props, **overrides)
        self.config = cfg
        self._own_loop = loop is None
        self._loop = loop or LoopThread("pylog-producer")
        self.client = NetworkClient(cfg)
        self.codec = CODECS[cfg["compression.type"]]
        self.pool = BufferPool(cfg["buffer.memory"], cfg["batch.size"])
        self.acc = RecordAccumulator(cfg, self.pool, self.codec)
        self.sticky = StickyPartitioner()
        self.acks = -1 if cfg["acks"] in ("all", "-1") else int(cfg["acks"])
        self.idempotent = bool(cfg["enable.idempotence"])
        self.max_request_size = cfg["max.request.size"]
        self.max_block = cfg["max.block.ms"] / 1000.0
        self.ignore_keys = cfg["partitioner.ignore.keys"]
        self.max_in_flight = cfg["max.in.flight.requests.per.connection"]
        self.retries = cfg["retries"]
        self.request_timeout = cfg["request.timeout.ms"] / 1000.0
        self.delivery_timeout = cfg["delivery.timeout.ms"] / 1000.0
        self._counts = {}  # topic -> partition count, from the latest metadata
        self._done_cond = threading.Condition(threading.Lock())
        self._closed = False
        self.producer_id = -1
        self.producer_epoch = -1
        self._need_bump = False
        self._bump_unsupported = False
        self._pstate: dict[tuple, _PartitionState] = {}
        self._muted: set = set()
        self._wakeup: asyncio.Event | None = None
        self._sleeping = True
        self._sender_task = None
        self._md_task = None
        self._last_md_request = 0.0
        self._inflight_requests = 0
        self._fatal: BaseException | None = None
        try:
            self._loop.run(self._start())
        except BaseException:
            if self._own_loop:
                self._loop.stop()
            raise

    # ------------------------------------------------------------------ public API
    def partitions_for(self, topic: str) -> list[int]:
        n = self._counts.get(topic) or self._wait_topic(topic)
        return list(range(n))

    def send(self, topic: str, value=None, key=None, *, partition: int | None = None,
             timestamp: int | None = None, headers=None, callback=None) -> RecordFuture:
        """Queue one record. Returns a RecordFuture; `callback(metadata, error)` runs on the
        I/O thread when the record is acknowledged or fails (in send order per partition)."""
        if self._closed:
            raise ProducerClosedError("Cannot perform operation after producer has been closed")
        if self._fatal is not None:
            raise self._fatal
        if isinstance(value, str):
            value = value.encode("utf-8")
        if isinstance(key, str):
            key = key.encode("utf-8")
        ts = int(time.time() * 1000) if timestamp is None else timestamp
        try:
            n = self._counts.get(topic) or self._wait_topic(topic)
            size = (len(key) if key is not None else 0) + (len(value) if value is not None else 0) + RECORD_OVERHEAD_MAX
            if headers:
                headers = [(k, v.encode("utf-8") if isinstance(v, str) else v) for k, v in headers]
                size += sum(len(k) + (len(v) if v is not None else 0) + 10 for k, v in headers)
            if size + HEADER_SIZE > self.max_request_size:
                raise RecordTooLargeError(
                    f"The message is {size + HEADER_SIZE} bytes when serialized which is larger than "
                    f"{self.max_request_size}, which is the value of the max.request.size configuration.")
            if size + HEADER_SIZE > self.pool.total:
                raise RecordTooLargeError(
                    f"The message is {size + HEADER_SIZE} bytes when serialized which is larger than the total "
                    f"memory buffer you have configured with the buffer.memory configuration.")
            if partition is not None:
                if not 0 <= partition < n:
                    raise KafkaError(f"Invalid partition given with record: {partition} is not in the range "
                                     f"[0...{n}] of topic {topic}.")
                p = partition
                sticky = False
            elif key is not None and not self.ignore_keys:
                p = (murmur2(key) & 0x7FFFFFFF) % n
                sticky = False
            else:
                p = self.sticky.partition(topic, n)
                sticky = True
            batch, index = self._append(topic, p, ts, key, value, headers, size, sticky, n,
                                        timestamp is not None, callback)
        except (KafkaTimeoutError, RecordTooLargeError, KafkaError) as e:
            if callback is not None:
                callback(None, e)
            return RecordFuture(self, None, 0, e)
        return RecordFuture(self, batch, index)

    def send_many(self, topic: str, values, *, partition: int | None = None) -> list:
        """Bulk path for keyless, headerless values (perf tests, Spark tasks): fills batches
        directly. Returns the batches, whose `.done`/`.error`/`.count` tell the outcome."""
        if self._closed:
            raise ProducerClosedError("Cannot perform operation after producer has been closed")
        n = self._counts.get(topic) or self._wait_topic(topic)
        values = [v.encode("utf-8") if isinstance(v, str) else v for v in values]
        for v in values:
            if len(v) + RECORD_OVERHEAD_MAX + HEADER_SIZE > self.max_request_size:
                raise RecordTooLargeError(
                    f"The message is {len(v) + RECORD_OVERHEAD_MAX + HEADER_SIZE} bytes when serialized which is "
                    f"larger than {self.max_request_size}, which is the value of the max.request.size configuration.")
        batches = []
        pos = 0
        total = len(values)
        acc = self.acc
        while pos < total:
            p = partition if partition is not None else self.sticky.partition(topic, n)
            tp = (topic, p)
            ts = int(time.time() * 1000)
            with acc.lock:
                dq = acc.deques.get(tp)
                b = dq[-1] if dq else None
                took = 0
                if b is not None and not b.full:
                    took = b.append_many(ts, values[pos:pos + 2048] if pos or total > 2048 else values)
                    pos += took
                    if took and (not batches or batches[-1] is not b):
                        batches.append(b)
            if pos >= total:
                break
            if took == 0 or b is None or b.full:
                if b is not None and b.full:
                    self._notify_sender()
                    if partition is None:
                        self.sticky.next_partition(topic, n, prev=p)
                        p = self.sticky.partition(topic, n)
                        tp = (topic, p)
                with acc.lock:
                    dq = acc.deques.get(tp)
                    if dq and not dq[-1].full:
                        continue
                nb = acc.new_batch(topic, p, len(values[pos]) + RECORD_OVERHEAD_MAX)
                with acc.lock:
                    acc.deques.setdefault(tp, collections.deque()).append(nb)
                    acc.incomplete.add(nb)
                self._notify_sender()
        return batches

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now and wait until every one of those records completes."""
        with self.acc.lock:
            pending = list(self.acc.incomplete)
        if not pending:
            return
        self.acc.flushing += 1
        try:
            self._notify_sender(force=True)
            deadline = None if timeout is None else time.monotonic() + timeout
            for b in pending:
                if not b.done:
                    self._wait_batch(b, None if deadline is None else max(0.0, deadline - time.monotonic()))
        finally:
            self.acc.flushing -= 1

    def close(self, timeout: float | None = None) -> None:
        if self._closed:
            return
        try:
            self.flush(timeout)
        except KafkaTimeoutError:
            pass
        self._closed = True
        self.acc.closing = True
        try:
            self._loop.run(self._stop(), timeout=10)
        except Exception:
            pass
        if self._own_loop:
            self._loop.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ------------------------------------------------------------------ user-thread internals
    def _wait_topic(self, topic: str) -> int:
        t = self._loop.run(self.client.wait_for_topic(topic, self.max_block))
        self._counts = dict(self.client.metadata.partition_counts)
        return len(t.partitions)

    @staticmethod
    def _register(b, i, ts, explicit_ts, callback):
        """Per-record timestamp and callback, under the accumulator lock: once the lock is
        released the sender may drain and complete the batch."""
        if explicit_ts or b.timestamps is not None:
            if b.timestamps is None:
                b.timestamps = [b.base_ts] * i
            b.timestamps.append(ts)
        if callback is not None:
            if b.callbacks is None:
                b.callbacks = []
            b.callbacks.append((i, callback))

    def _append(self, topic, p, ts, key, value, headers, size, sticky, n, explicit_ts=False, callback=None):
        acc = self.acc
        tp = (topic, p)
        while True:
            with acc.lock:
                dq = acc.deques.get(tp)
                if dq:
                    b = dq[-1]
                    if not b.full:
                        i = b.try_append(ts, key, value, headers)
                        if i >= 0:
                            if explicit_ts or callback is not None or b.timestamps is not None or ts != b.base_ts:
                                self._register(b, i, ts, explicit_ts or ts != b.base_ts, callback)
                            if b.full:
                                self._notify_sender()
                            return b, i
                        self._notify_sender()
            if sticky and dq:
                # the sticky partition's batch filled up: move on (KIP-480)
                p = self.sticky.next_partition(topic, n, prev=p)
                tp = (topic, p)
                with acc.lock:
                    dq = acc.deques.get(tp)
                    if dq and not dq[-1].full:
                        continue
                sticky = False
            nb = acc.new_batch(topic, p, size)  # may block on buffer.memory
            with acc.lock:
                dq = acc.deques.get(tp)
                if dq and not dq[-1].full:
                    self.pool.release(nb.reserved)  # someone else opened one meanwhile
                    continue
                i = nb.try_append(ts, key, value, headers)
                self._register(nb, i, ts, explicit_ts, callback)
                if dq is None:
                    dq = acc.deques[tp] = collections.deque()
                dq.append(nb)
                acc.incomplete.add(nb)
            self._notify_sender()
            return nb, i

    def _notify_sender(self, force=False):
        if self._sleeping or force:
            self._sleeping = False
            try:
                self._loop.call_soon(self._wake)
            except RuntimeError:
                pass

    def _wake(self):
        if self._wakeup is not None:
            self._wakeup.set()

    def _wait_batch(self, b, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._done_cond:
            while not b.done:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise KafkaTimeoutError(f"Timeout after waiting for {int(timeout * 1000)} ms.")
                self._done_cond.wait(remaining if remaining is not None else 1.0)

    # ------------------------------------------------------------------ loop-thread internals
    async def _start(self):
        self._wakeup = asyncio.Event()
        self.client.allow_auto_create = True
        try:
            await self.client.refresh_metadata([])
        except Exception as e:
            await self.client.close()
            raise e
        self._counts = dict(self.client.metadata.partition_counts)
        self._sender_task = asyncio.get_running_loop().create_task(self._run())

    async def _stop(self):
        self.acc.closing = True
        self._wake()
        if self._sender_task is not None:
            try:
                await asyncio.wait_for(self._sender_task, 5)
            except Exception:
                self._sender_task.cancel()
        for b in self.acc.abort_all():
            self._complete(b, ProducerClosedError("Producer is closed forcefully."))
        await self.client.close()

    def _complete(self, b: ProducerBatch, error=None, base_offset=-1, log_append_time=-1):
        if b.done:
            return
        b.base_offset = base_offset
        b.log_append_time = log_append_time
        b.error = error
        b.done_at = time.monotonic()
        # callbacks first, then the futures (as the Java client): a future that reports
        # done has had its callback run
        if b.callbacks:
            for i, cb in b.callbacks:
                try:
                    cb(None if error else _metadata(b, i), error)
                except Exception:
                    log.exception("producer callback raised")
        b.done = True
        with self.acc.lock:
            self.acc.incomplete.discard(b)
        self.pool.release(b.reserved)
        b.reserved = 0
        with self._done_cond:
            self._done_cond.notify_all()

    def _maybe_refresh_metadata(self, force=False):
        now = time.monotonic()
        if self._md_task is not None and not self._md_task.done():
            return
        if not force and self.client.metadata_age() < self.config["metadata.max.age.ms"] / 1000.0:
            return
        if now - self._last_md_request < self.config["retry.backoff.ms"] / 1000.0:
            return
        self._last_md_request = now

        async def refresh():
            try:
                await self.client.refresh_metadata()
                self._counts = dict(self.client.metadata.partition_counts)
            except Exception as e:
                log.debug("metadata refresh failed: %s", e)
            self._wake()

        self._md_task = asyncio.get_running_loop().create_task(refresh())

    async def _init_producer_id(self) -> bool:
        """One InitProducerId attempt (KIP-360 epoch bump when we already have an id).
        False when it should be retried later; the sender loop keeps expiring batches meanwhile."""
        body = {"transactional_id": None, "transaction_timeout_ms": -1}
        bump = self.producer_id >= 0 and not self._bump_unsupported
        try:
            conn = await self.client._any_connection()
            if bump and conn.version("InitProducerId") >= 3:
                body["producer_id"] = self.producer_id
                body["producer_epoch"] = self.producer_epoch
            resp = await conn.request("InitProducerId", body)
        except Exception as e:
            log.debug("InitProducerId failed: %s", e)
            return False
        code = resp.get("error_code", 0)
        if code:
            if is_retriable(code) or code in (14, 15, 16, 51):
                return False
            if bump and code in (59, 47, 49, 35, 42):
                self._bump_unsupported = True  # cannot bump: take a fresh id next time
                return False
            self._fatal = error_for_code(code, f"InitProducerId failed: {ERROR_NAMES.get(code, code)}")
            raise self._fatal
        self.producer_id = resp["producer_id"]
        self.producer_epoch = resp["producer_epoch"]
        self._bump_unsupported = False
        self._reset_sequences()
        return True

    def _reset_sequences(self):
        """After a new id or epoch, every partition starts again at sequence 0; queued batches
        that already had sequences are renumbered in order."""
        with self.acc.lock:
            for tp, ps in self._pstate.items():
                seq = 0
                dq = self.acc.deques.get(tp) or ()
                for b in dq:
                    if b.base_sequence >= 0:
                        b.set_producer(self.producer_id, self.producer_epoch, seq)
                        seq += b.count
                ps.next_seq = seq
                ps.last_acked = -1
                ps.inflight.clear()
                ps.resync = False
        self._muted.clear()
        self._need_bump = False

    def _assign_seq(self, b: ProducerBatch) -> bool:
        tp = (b.topic, b.partition)
        ps = self._pstate.get(tp)
        if ps is None:
            ps = self._pstate[tp] = _PartitionState()
        if b.base_sequence < 0:
            b.set_producer(self.producer_id, self.producer_epoch, ps.next_seq)
            ps.next_seq = (ps.next_seq + b.count) & 0x7FFFFFFF
        ps.inflight.append(b)
        ps.inflight.sort(key=lambda x: x.base_sequence)
        return True

    async def _run(self):
        loop = asyncio.get_running_loop()
        acc = self.acc
        while True:
            try:
                pid_failed = False
                if self.idempotent and (self.producer_id < 0 or self._need_bump) and self._inflight_requests == 0:
                    if acc.has_undrained() or not acc.closing:
                        pid_failed = not await self._init_producer_id()
                now = time.monotonic()
                for b in acc.expired(now):
                    if b.base_sequence >= 0:
                        self._need_bump = True
                    self._complete(b, expiry_error(b, now))
                if acc.closing and not acc.has_undrained() and self._inflight_requests == 0:
                    return
                md = self.client.metadata
                muted = self._muted
                ready, delay, unknown = acc.ready(md, now, muted)
                if unknown:
                    self.client.add_topics(unknown)
                    self._maybe_refresh_metadata(force=True)
                else:
                    self._maybe_refresh_metadata()
                blocked = self.idempotent and (self.producer_id < 0 or self._need_bump)
                for node in ([] if blocked else ready):
                    conn = self.client.connection_if_ready(node)
                    if conn is None:
                        self._connect_soon(node)
                        continue
                    if conn.in_flight >= self.max_in_flight:
                        continue
                    batches = acc.drain(md, node, self.max_request_size, muted,
                                        self._assign_seq if self.idempotent else None)
                    if batches:
                        self._inflight_requests += 1
                        loop.create_task(self._send_produce(conn, node, batches))
                self._wakeup.clear()
                self._sleeping = True
                timeout = 0.5 if delay is None else max(0.0005, min(delay, 0.5))
                if ready and not blocked:
                    timeout = min(timeout, 0.05)
                if pid_failed:
                    timeout = max(timeout, self.config["retry.backoff.ms"] / 1000.0)
                try:
                    await asyncio.wait_for(self._wakeup.wait(), timeout)
                except asyncio.TimeoutError:
                    pass
                self._sleeping = False
            except asyncio.CancelledError:
                raise
            except Exception as e:
                if self._fatal is not None:
                    for b in acc.abort_all():
                        self._complete(b, self._fatal)
                    if acc.closing:
                        return
                    await asyncio.sleep(0.1)
                    continue
                log.exception("sender loop error: %s", e)
                await asyncio.sleep(0.1)

    def _connect_soon(self, node):
        if node in self.client._connecting:
            return

        async def connect():
            try:
                await self.client.connection(node)
            except Exception as e:
                log.debug("connect to node %s failed: %s", node, e)
                self._maybe_refresh_metadata(force=True)
                await asyncio.sleep(self.client.backoff_remaining(node))
            self._wake()

        asyncio.get_running_loop().create_task(connect())

    async def _send_produce(self, conn, node, batches):
        by_topic: dict[str, list] = {}
        for b in batches:
            b.attempts += 1
            by_topic.setdefault(b.topic, []).append({"index": b.partition, "records": b.build()})
        body = {
            "transactional_id": None,
            "acks": self.acks,
            "timeout_ms": int(self.request_timeout * 1000),
            "topic_data": [{"name": t, "partition_data": parts} for t, parts in by_topic.items()],
        }
        try:
            resp = await conn.request("Produce", body, expect_response=self.acks != 0)
        except asyncio.CancelledError:
            raise
        except Exception as e:
            self._inflight_requests -= 1
            if isinstance(e, ConnectionFailedError):
                self.client._note_failure(node)
            for b in batches:
                self._handle_error(b, e, retriable=True, metadata=True)
            self._wake()
            return
        self._inflight_requests -= 1
        if self.acks == 0:
            for b in batches:
                self._done_inflight(b)
                self._complete(b, None, -1)
            self._wake()
            return
        results = {}
        for t in resp.get("responses", []):
            for p in t.get("partition_responses", []):
                results[(t["name"], p["index"])] = p
        for b in batches:
            r = results.get((b.topic, b.partition))
            if r is None:
                self._handle_error(b, KafkaError("partition missing from produce response"), retriable=True)
                continue
            code = r.get("error_code", 0)
            if code == 0 or (code == 46 and self.idempotent):
                self._done_inflight(b, acked=True)
                self._complete(b, None, r.get("base_offset", -1), r.get("log_append_time_ms", -1))
            else:
                msg = r.get("error_message")
                err = error_for_code(code, f"{ERROR_NAMES.get(code, code)}: {msg}" if msg else None)
                self._handle_error(b, err, code=code)
        self._wake()

    def _done_inflight(self, b, acked=False):
        if b.base_sequence < 0:
            return
        tp = (b.topic, b.partition)
        ps = self._pstate.get(tp)
        if ps is None:
            return
        try:
            ps.inflight.remove(b)
        except ValueError:
            pass
        if acked and b.producer_epoch == self.producer_epoch and b.producer_id == self.producer_id:
            last = b.base_sequence + b.count - 1
            if last > ps.last_acked:
                ps.last_acked = last
        if ps.resync and not ps.inflight:
            ps.resync = False
            self._muted.discard(tp)

    def _handle_error(self, b, err, code=None, retriable=None, metadata=False):
        now = time.monotonic()
        tp = (b.topic, b.partition)
        ps = self._pstate.get(tp)
        if code is None:
            code = getattr(err, "code", -1)
        if code == 10 and b.count > 1:
            # MESSAGE_TOO_LARGE: split the batch, no retry spent (the sequence range is reused)
            self._split(b, now)
            return
        if retriable is None:
            retriable = is_retriable(code)
        head = ps is None or b.base_sequence == ps.last_acked + 1
        if self.idempotent and code in (45, 59):
            retriable = True
            if head and b.producer_epoch == self.producer_epoch:
                self._need_bump = True
            b.attempts -= 1  # a sequence resync is not a delivery attempt
        if metadata or code in _METADATA_ERRORS:
            self._maybe_refresh_metadata(force=True)
        expired = now - b.created >= self.delivery_timeout
        if retriable and not expired and b.attempts <= self.retries:
            if ps is not None and b.base_sequence >= 0:
                self._resend_later(ps, tp, b)
            self.acc.reenqueue(b, now, self.idempotent)
            return
        self._done_inflight(b)
        if b.base_sequence >= 0:
            self._need_bump = True  # a sequence gap: start a new epoch
        if expired:
            err = expiry_error(b, now) if not isinstance(err, KafkaError) or retriable else err
        self._complete(b, err)

    def _resend_later(self, ps, tp, b):
        """`b` leaves the in-flight list to be sent again. While batches sent before it are
        still in flight the partition is muted, so the resend waits for their answers and
        goes out in sequence order; with none left, nothing holds it back."""
        try:
            ps.inflight.remove(b)
        except ValueError:
            pass
        if ps.inflight:
            ps.resync = True
            self._muted.add(tp)
        else:
            ps.resync = False
            self._muted.discard(tp)

    def _split(self, b, now):
        records = b.records()
        tp = (b.topic, b.partition)
        ps = self._pstate.get(tp)
        if ps is not None:
            self._resend_later(ps, tp, b)
        target = max(1, min(self.acc.batch_size, max(1, len(b.buf) // 2)))
        pieces = []
        cur = None
        for i, (ts, k, v, h) in enumerate(records):
            if cur is None or cur.try_append(ts, k, v, h) < 0:
                cur = ProducerBatch(b.topic, b.partition, target, b.codec, b.created, 0)
                cur.first_index = i
                cur.try_append(ts, k, v, h)
                pieces.append(cur)
        seq = b.base_sequence
        for piece in pieces:
            piece.full = True
            if seq >= 0:
                piece.set_producer(b.producer_id, b.producer_epoch, seq)
                seq += piece.count
        # the original batch completes when all pieces have (futures point at it)
        parent = b
        remaining = [len(pieces)]
        base = [None]
        errors = []

        parent.offsets = [-1] * parent.count

        def piece_done(piece, error, base_offset, lat):
            if error is not None:
                errors.append(error)
            elif base_offset >= 0:
                for j in range(piece.count):
                    parent.offsets[piece.first_index + j] = base_offset + j
            if piece.first_index == 0:
                base[0] = base_offset
            remaining[0] -= 1
            if remaining[0] == 0:
                parent.reserved = parent.reserved
                self._complete(parent, errors[0] if errors else None,
                               base[0] if base[0] is not None else -1, lat)

        for piece in pieces:
            piece.callbacks = None
            piece_cb = _PieceHook(piece, piece_done)
            piece.callbacks = [(-1, piece_cb)]
        with self.acc.lock:
            self.acc.incomplete.update(pieces)
            dq = self.acc.deques.setdefault(tp, collections.deque())
            for piece in reversed(pieces):
                piece.in_retry = True
                piece.retry_at = now
                dq.appendleft(piece)
        if self.idempotent:
            # keep sequence order in the deque
            with self.acc.lock:
                items = sorted(dq, key=lambda x: (x.base_sequence < 0, x.base_sequence))
                dq.clear()
                dq.extend(items)


class _PieceHook:
    """Completion hook of a split piece: reports to the original batch."""

    __slots__ = ("piece", "fn")

    def __init__(self, piece, fn):
        self.piece = piece
        self.fn = fn

    def __call__(self, md, error):
        p = self.piece
        self.fn(p, error, p.base_offset, p.log_append_time)
