"""The producer's facade: partitioner and accumulator on the caller's thread.

`Producer` is what commands and Spark tasks use: `send()` returns a
`RecordFuture`, `send_many()` appends runs of records without one, `flush()`
waits for every record sent so far, `close()` flushes and stops. The network
side is `sender.Sender` on the event loop thread; idempotence (on by default,
KIP-98/KIP-360) is `idempotence.Idempotence`.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from pylog.core.client.accumulator import (
    HEADER_SIZE,
    RECORD_OVERHEAD_MAX,
    BufferPool,
    RecordAccumulator,
    RecordMetadata,
)
from pylog.core.client.bulk import BulkSender
from pylog.core.client.cluster import NetworkClient
from pylog.core.client.errors import (
    KafkaTimeoutError,
    ProducerClosedError,
    RecordTooLargeError,
    record_too_large,
)
from pylog.core.client.loop import Closeable, LoopThread
from pylog.core.client.partitioner import StickyPartitioner, murmur2
from pylog.core.client.sender import Sender, record_metadata
from pylog.core.config import PRODUCER_CONFIGS
from pylog.core.errors import KafkaError, UsageError

if TYPE_CHECKING:
    from pylog.core.client.transactions import TransactionManager

log = logging.getLogger(__name__)

CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def resolve_producer_config(props: dict | None = None, **overrides):
    """Kafka's producer properties resolved and made consistent the way the Java client does
    (idempotence off when acks, retries or in-flight limits rule it out, unless asked for)."""
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
    if cfg["transactional.id"] is not None:
        # as the Java client: a transactional producer is idempotent
        if not cfg["transactional.id"]:
            raise UsageError("transactional.id must not be empty")
        if not cfg["enable.idempotence"]:
            if "enable.idempotence" in cfg.overridden:
                raise UsageError("Cannot set a transactional.id without also enabling idempotence.")
            raise UsageError("transactional.id requires acks=all, retries > 0 and "
                             "max.in.flight.requests.per.connection <= 5 (an idempotent producer)")
    if cfg["delivery.timeout.ms"] < cfg["linger.ms"] + cfg["request.timeout.ms"]:
        if "delivery.timeout.ms" in cfg.overridden:
            raise UsageError("delivery.timeout.ms should be equal to or larger than linger.ms + request.timeout.ms")
        cfg["delivery.timeout.ms"] = cfg["linger.ms"] + cfg["request.timeout.ms"]
    return cfg


class RecordFuture:
    """Result of one send(): `get(timeout)` returns RecordMetadata or raises the delivery error."""

    __slots__ = ("batch", "index", "_producer", "error")

    def __init__(self, producer, batch, index, error=None):
        self._producer = producer
        self.batch = batch
        self.index = index
        self.error = error

    def done(self) -> bool:
        return self.error is not None or self.batch.done

    def exception(self):
        if self.error is not None:
            return self.error
        return self.batch.error if self.batch.done else None

    def get(self, timeout: float | None = None) -> RecordMetadata:
        if self.error is not None:
            raise self.error
        b = self.batch
        if not b.done:
            self._producer.wait_batch(b, timeout)
        if b.error is not None:
            raise b.error
        return record_metadata(b, self.index)

    result = get


class Producer(Closeable):
    """A Kafka producer with the Java client's semantics and property names.

        with Producer({"bootstrap.servers": "127.0.0.1:9092"}) as p:
            p.send("orders", b"value", key=b"k").get(10)

    `send()` is thread-safe: it picks the partition (murmur2 of the key as the Java
    client does, sticky for keyless records), encodes the record into the open batch
    of that partition and returns a `RecordFuture`. A background loop thread sends
    batches (`Sender`). Idempotence is on by default (`enable.idempotence`).
    """

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
        self.max_request_size = cfg["max.request.size"]
        self.max_block = cfg["max.block.ms"] / 1000.0
        self.ignore_keys = cfg["partitioner.ignore.keys"]
        self.partition_counts = {}  # topic -> partition count, from the latest metadata
        self._closed = False
        self._sender = Sender(self)
        self._txn = None
        if cfg["transactional.id"] is not None:
            from pylog.core.client.transactions import TransactionManager  # only a transactional producer's

            self._txn = self._sender.txn = TransactionManager(
                self, self._sender, cfg["transactional.id"], cfg["transaction.timeout.ms"])
        self._bulk = BulkSender(self)
        self._loop.start_with(self._start(), stop=self._own_loop)

    @property
    def loop(self) -> LoopThread:
        """The loop thread the client's network work runs on (shared with others given `loop=`)."""
        return self._loop

    @property
    def producer_id(self) -> int:
        """The id InitProducerId gave this producer (-1 before, or without idempotence)."""
        return self._sender.idem.producer_id

    @property
    def producer_epoch(self) -> int:
        return self._sender.idem.producer_epoch

    @property
    def idempotent(self) -> bool:
        return self._sender.idem.enabled

    @property
    def transaction_state(self) -> str | None:
        """The transaction manager's state (the Java client's names), None without transactional.id."""
        return None if self._txn is None else self._txn.state.value

    # ------------------------------------------------------------------ transactions
    def _txn_manager(self) -> TransactionManager:
        if self._txn is None:
            raise UsageError("Cannot use transactional methods without enabling transactions "
                             "by setting the transactional.id configuration property")
        if self._closed:
            raise ProducerClosedError("Cannot perform operation after producer has been closed")
        return self._txn

    def init_transactions(self, timeout: float | None = None) -> None:
        """Register `transactional.id` with its coordinator: fences older producers of the id and
        finishes their open transaction. Call once before the first transaction."""
        self._txn_manager().init_transactions(timeout)

    def begin_transaction(self) -> None:
        """Start a transaction: every record sent until commit or abort belongs to it."""
        self._txn_manager().begin_transaction()

    def send_offsets_to_transaction(self, offsets: dict, group, timeout: float | None = None) -> None:
        """Commit consumer offsets ({(topic, partition): offset}) for `group` (a group id or
        ConsumerGroupMetadata, e.g. `consumer.group_metadata()`) within the transaction."""
        self._txn_manager().send_offsets_to_transaction(offsets, group, timeout)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush and commit the transaction (timeout: max.block.ms when None)."""
        self._txn_manager().commit_transaction(timeout)

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Drop unsent records and abort the transaction."""
        self._txn_manager().abort_transaction(timeout)

    # ------------------------------------------------------------------ public API
    def partitions_for(self, topic: str) -> list[int]:
        n = self.partition_counts.get(topic) or self.wait_topic(topic)
        return list(range(n))

    def _check_can_send(self) -> None:
        """Raise what refuses a send now: a closed producer, a fatal error, a transaction state."""
        if self._closed:
            raise ProducerClosedError("Cannot perform operation after producer has been closed")
        if self._sender.fatal is not None:
            raise self._sender.fatal
        if self._txn is not None:
            self._txn.check_send()

    def send(self, topic: str, value=None, key=None, *, partition: int | None = None,
             timestamp: int | None = None, headers=None, callback=None) -> RecordFuture:
        """Queue one record. Returns a RecordFuture; `callback(metadata, error)` runs on the
        I/O thread when the record is acknowledged or fails (in send order per partition)."""
        self._check_can_send()
        if isinstance(value, str):
            value = value.encode("utf-8")
        if isinstance(key, str):
            key = key.encode("utf-8")
        ts = int(time.time() * 1000) if timestamp is None else timestamp
        try:
            n = self.partition_counts.get(topic) or self.wait_topic(topic)
            size = (len(key) if key is not None else 0) + (len(value) if value is not None else 0) + RECORD_OVERHEAD_MAX
            if headers:
                headers = [(k, v.encode("utf-8") if isinstance(v, str) else v) for k, v in headers]
                size += sum(len(k) + (len(v) if v is not None else 0) + 10 for k, v in headers)
            too_large = record_too_large(size + HEADER_SIZE, self.max_request_size, self.pool.total)
            if too_large is not None:
                raise too_large
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

    def send_many(self, topic: str, values, *, keys=None, headers=None, partition: int | None = None,
                  partitions=None, timestamps=None, runs: bool = False):
        """Queue many records at once: the bulk path (the produce command, perf, Spark tasks).

        `values` is a list of bytes (or str); optional, each a list like it: `keys`,
        `headers` (each None or a list of (key, value) pairs; pass the same list object
        for headers every record shares), `partitions` (each None or an explicit
        partition), `timestamps` (each None or ms). `partition` sends every record to
        one partition. Keyed records go where the Java client puts them (murmur2),
        the rest to the sticky partition. No future is made per record.

        Returns the batches the records went into (their `.done`/`.error`/`.count` tell
        the outcome); with `runs=True`, `([(batch, indices, first)], [(index, error)])`:
        which records (indices into `values`) each batch took, as its records first,
        first + 1, ... (offset `batch.base_offset + first + j` once acknowledged), and the
        records refused at once.
        Without `runs`, a refused record raises its error."""
        self._check_can_send()
        got, failed = self._bulk.send_many(topic, values, keys, headers, partition, partitions, timestamps)
        if runs:
            return got, failed
        if failed:
            raise failed[0][1]
        batches = []
        for b, _, _ in got:
            if not batches or batches[-1] is not b:
                batches.append(b)
        return batches

    def send_frame(self, topic: str, frame, headers=None, partition: int | None = None):
        """send_many(..., runs=True) of `pylog produce`'s text lines framed where they lie in the
        read block (see BulkSender.send_frame); None when a record is too large for that path."""
        self._check_can_send()
        return self._bulk.send_frame(topic, frame, headers, partition)

    def flush(self, timeout: float | None = None) -> None:
        """Send everything queued now and wait until every one of those records completes."""
        with self.acc.lock:
            pending = list(self.acc.incomplete)
        if not pending:
            return
        self.acc.flushing += 1
        try:
            self.notify_sender(force=True)
            deadline = None if timeout is None else time.monotonic() + timeout
            for b in pending:
                if not b.done:
                    self.wait_batch(b, None if deadline is None else max(0.0, deadline - time.monotonic()))
        finally:
            self.acc.flushing -= 1

    def close(self, timeout: float | None = None) -> None:
        if self._closed:
            return
        txn = self._txn
        if txn is not None and txn.state.value in ("IN_TRANSACTION", "ABORTABLE_ERROR", "ABORTING_TRANSACTION"):
            # as the Java client: an open transaction is aborted on close, not left to time out
            try:
                txn.abort_transaction(timeout)
            except Exception as e:  # noqa: BLE001 - closing goes on; the coordinator aborts it later
                log.info("could not abort the open transaction on close: %s", e)
        try:
            self.flush(timeout)
        except KafkaTimeoutError:
            pass
        self._closed = True
        self.acc.closing = True
        self._loop.close_with(self._stop(), 10, stop=self._own_loop)

    # ------------------------------------------------------------------ user-thread internals
    def wait_topic(self, topic: str) -> int:
        t = self._loop.run(self.client.wait_for_topic(topic, self.max_block))
        self.partition_counts = dict(self.client.metadata.partition_counts)
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
                                self.notify_sender()
                            return b, i
                        self.notify_sender()
            if sticky and dq:
                # the sticky partition's batch filled up: move on (KIP-480)
                p = self.sticky.next_partition(topic, n, prev=p)
                tp = (topic, p)
                if acc.has_open_batch(tp):
                    continue
                sticky = False
            nb = acc.new_batch(topic, p, size)  # may block on buffer.memory
            index = []

            def fill(b):
                i = b.try_append(ts, key, value, headers)
                self._register(b, i, ts, explicit_ts, callback)
                index.append(i)
            if not acc.add_batch(nb, fill):
                continue  # another thread opened one meanwhile
            self.notify_sender()
            return nb, index[0]

    def notify_sender(self, force=False):
        sender = self._sender
        if sender.sleeping or force:
            sender.sleeping = False
            try:
                self._loop.call_soon(sender.wake)
            except RuntimeError:
                pass

    def wait_batch(self, b, timeout):
        deadline = None if timeout is None else time.monotonic() + timeout
        cond = self._sender.done_cond
        with cond:
            while not b.done:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise KafkaTimeoutError(f"Timeout after waiting for {int(timeout * 1000)} ms.")
                cond.wait(remaining if remaining is not None else 1.0)

    # ------------------------------------------------------------------ loop-thread internals
    async def _start(self):
        self.client.allow_auto_create = True
        try:
            await self.client.refresh_metadata([])
        except Exception as e:
            await self.client.close()
            raise e
        self.partition_counts = dict(self.client.metadata.partition_counts)
        self._sender.start()

    async def _stop(self):
        await self._sender.stop()
        await self.client.close()
