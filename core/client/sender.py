"""The producer's sender: the loop on the event-loop thread that drains the accumulator.

Like the Java client's Sender: each turn it (re)acquires a producer id when
idempotence needs one, expires batches past `delivery.timeout.ms`, asks the
accumulator which leaders have a sendable batch, drains at most one batch per
partition for each ready leader (up to `max.request.size`), and sends one
Produce request per leader with at most `max.in.flight.requests.per.connection`
outstanding. Answers complete batches (callbacks first, then futures), retry
them, split them on MESSAGE_TOO_LARGE, or fail them.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time

from pylog.core.client.accumulator import ProducerBatch, RecordMetadata, expiry_error
from pylog.core.client.errors import ConnectionFailedError, ProducerClosedError
from pylog.core.client.idempotence import SEQUENCE_ERRORS, Idempotence
from pylog.core.errors import ErrorCode, KafkaError, error_for_code, error_name, is_retriable
from pylog.core.protocol import RecordsPiece
from pylog.core.records.header import HEADER_SIZE

log = logging.getLogger(__name__)

# errors after which the leader may have moved: refresh metadata before retrying
_METADATA_ERRORS = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE,
                    ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REPLICA_NOT_AVAILABLE,
                    ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.UNKNOWN_LEADER_EPOCH}


def record_metadata(b: ProducerBatch, i: int) -> RecordMetadata:
    """What the broker's answer says about record `i` of a completed batch."""
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


class Sender:
    """Moves batches from the accumulator to the brokers and completes them."""

    def __init__(self, producer):
        cfg = producer.config
        self.config = cfg
        self.producer = producer  # for the partition counts it caches from metadata
        self.acc = producer.acc
        self.pool = producer.pool
        self.client = producer.client
        self.idem = Idempotence(bool(cfg["enable.idempotence"]))
        self.acks = -1 if cfg["acks"] in ("all", "-1") else int(cfg["acks"])
        self.max_request_size = cfg["max.request.size"]
        self.max_in_flight = cfg["max.in.flight.requests.per.connection"]
        self.retries = cfg["retries"]
        self.request_timeout = cfg["request.timeout.ms"] / 1000.0
        self.delivery_timeout = cfg["delivery.timeout.ms"] / 1000.0
        self.done_cond = threading.Condition(threading.Lock())  # notified as batches complete
        self.fatal: BaseException | None = None
        self._wakeup: asyncio.Event | None = None
        self.sleeping = True
        self._task = None
        self._md_task = None
        self._last_md_request = 0.0
        self._inflight_requests = 0
        self.txn = None  # the TransactionManager of a transactional producer
        self.transactional_id = cfg["transactional.id"]

    # ------------------------------------------------------------------ lifecycle
    def start(self):
        """Start the loop (called on the loop thread)."""
        self._wakeup = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self):
        """Let the loop finish what it has (it returns once the accumulator is empty
        and nothing is in flight), then fail whatever is left."""
        self.acc.closing = True
        self.wake()
        if self._task is not None:
            try:
                await asyncio.wait_for(self._task, 5)
            except Exception:
                self._task.cancel()
        for b in self.acc.abort_all():
            self.complete(b, ProducerClosedError("Producer is closed forcefully."))

    def wake(self):
        """Run the loop's next turn now (loop thread)."""
        if self._wakeup is not None:
            self._wakeup.set()

    def complete(self, b: ProducerBatch, error=None, base_offset=-1, log_append_time=-1):
        """Finish a batch: record the outcome, run its callbacks, release its memory."""
        if b.done:
            return
        b.base_offset = base_offset
        b.log_append_time = log_append_time
        b.error = error
        b.done_at = time.monotonic()
        if error is not None and self.txn is not None:
            self.txn.batch_failed(error)  # before anyone waiting on the batch sees it done
        # callbacks first, then the futures (as the Java client): a future that reports
        # done has had its callback run
        if b.callbacks:
            for i, cb in b.callbacks:
                try:
                    cb(None if error else record_metadata(b, i), error)
                except Exception:
                    log.exception("producer callback raised")
        b.done = True
        with self.acc.lock:
            self.acc.incomplete.discard(b)
        self.pool.release(b.reserved)
        b.reserved = 0
        with self.done_cond:
            self.done_cond.notify_all()

    # ------------------------------------------------------------------ the loop
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
                self.producer.partition_counts = dict(self.client.metadata.partition_counts)
            except Exception as e:
                log.debug("metadata refresh failed: %s", e)
            self.wake()

        self._md_task = asyncio.get_running_loop().create_task(refresh())

    async def _init_producer_id(self) -> bool:
        try:
            return await self.idem.init_producer_id(self.client, self.acc)
        except KafkaError as e:
            self.fatal = e
            raise

    async def _run(self):
        loop = asyncio.get_running_loop()
        acc = self.acc
        idem = self.idem
        while True:
            try:
                pid_failed = False
                if idem.blocked() and self._inflight_requests == 0 and self.txn is None:
                    if acc.has_undrained() or not acc.closing:
                        pid_failed = not await self._init_producer_id()
                now = time.monotonic()
                for b in acc.expired(now):
                    if b.base_sequence >= 0:
                        idem.need_bump = True
                    self.complete(b, expiry_error(b, now))
                if acc.closing and not acc.has_undrained() and self._inflight_requests == 0:
                    return
                md = self.client.metadata
                muted = idem.muted
                if self.txn is not None:
                    muted = self.txn.sender_mute(acc, muted)
                ready, delay, unknown = acc.ready(md, now, muted)
                if unknown:
                    self.client.add_topics(unknown)
                    self._maybe_refresh_metadata(force=True)
                else:
                    self._maybe_refresh_metadata()
                blocked = idem.blocked()
                for node in ([] if blocked else ready):
                    conn = self.client.connection_if_ready(node)
                    if conn is None:
                        self._connect_soon(node)
                        continue
                    if conn.in_flight >= self.max_in_flight:
                        continue
                    batches = acc.drain(md, node, self.max_request_size, muted,
                                        idem.assign_seq if idem.enabled else None)
                    if batches:
                        self._inflight_requests += 1
                        loop.create_task(self._send_produce(conn, node, batches))
                self._wakeup.clear()
                self.sleeping = True
                timeout = 0.5 if delay is None else max(0.0005, min(delay, 0.5))
                if ready and not blocked:
                    timeout = min(timeout, 0.05)
                if pid_failed:
                    timeout = max(timeout, self.config["retry.backoff.ms"] / 1000.0)
                try:
                    await asyncio.wait_for(self._wakeup.wait(), timeout)
                except asyncio.TimeoutError:
                    pass
                self.sleeping = False
            except asyncio.CancelledError:
                raise
            except Exception as e:
                if self.fatal is not None:
                    for b in acc.abort_all():
                        self.complete(b, self.fatal)
                    if acc.closing:
                        return
                    await asyncio.sleep(0.1)
                    continue
                log.exception("sender loop error: %s", e)
                await asyncio.sleep(0.1)

    def _connect_soon(self, node):
        if node in self.client.connecting:
            return

        async def connect():
            try:
                await self.client.connection(node)
            except Exception as e:
                log.debug("connect to node %s failed: %s", node, e)
                self._maybe_refresh_metadata(force=True)
                await asyncio.sleep(self.client.backoff_remaining(node))
            self.wake()

        asyncio.get_running_loop().create_task(connect())

    async def _send_produce(self, conn, node, batches):
        by_topic: dict[str, list] = {}
        for b in batches:
            b.attempts += 1
            # the batch goes to the socket from its own buffer (encode_request_parts)
            by_topic.setdefault(b.topic, []).append({"index": b.partition, "records": RecordsPiece(b.build())})
        body = {
            "transactional_id": self.transactional_id,
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
                self.client.note_failure(node)
            for b in batches:
                self._handle_error(b, e, retriable=True, metadata=True)
            self.wake()
            return
        self._inflight_requests -= 1
        if self.acks == 0:
            for b in batches:
                self.idem.done_inflight(b)
                self.complete(b, None, -1)
            self.wake()
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
            if code == ErrorCode.NONE or (code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER and self.idem.enabled):
                self.idem.done_inflight(b, acked=True)
                self.complete(b, None, r.get("base_offset", -1), r.get("log_append_time_ms", -1))
            else:
                msg = r.get("error_message")
                err = error_for_code(code, f"{error_name(code)}: {msg}" if msg else None)
                self._handle_error(b, err, code=code)
        self.wake()

    def _handle_error(self, b, err, code=None, retriable=None, metadata=False):
        now = time.monotonic()
        idem = self.idem
        if code is None:
            code = getattr(err, "code", ErrorCode.UNKNOWN_SERVER_ERROR)
        if code == ErrorCode.MESSAGE_TOO_LARGE and b.count > 1:
            # split the batch, no retry spent (the sequence range is reused)
            self._split(b, now)
            return
        if retriable is None:
            retriable = is_retriable(code)
        if idem.enabled and code in SEQUENCE_ERRORS:
            retriable = True
            if idem.is_head(b) and b.producer_epoch == idem.producer_epoch:
                idem.need_bump = True
            b.attempts -= 1  # a sequence resync is not a delivery attempt
        if metadata or code in _METADATA_ERRORS:
            self._maybe_refresh_metadata(force=True)
        expired = now - b.created >= self.delivery_timeout
        if retriable and not expired and b.attempts <= self.retries:
            if b.base_sequence >= 0:
                idem.resend_later(b)
            self.acc.reenqueue(b, now, idem.enabled)
            return
        idem.done_inflight(b)
        if b.base_sequence >= 0:
            idem.need_bump = True  # a sequence gap: start a new epoch
        if expired:
            err = expiry_error(b, now) if not isinstance(err, KafkaError) or retriable else err
        self.complete(b, err)

    def _split(self, b, now):
        """MESSAGE_TOO_LARGE on a batch of several records: re-send them as smaller batches
        with the same sequence range; the original batch completes when all pieces have."""
        records = b.records()
        tp = (b.topic, b.partition)
        self.idem.resend_later(b)
        target = max(1, min(self.acc.batch_size, max(1, (b.size() - HEADER_SIZE) // 2)))
        pieces = []
        cur = None
        for i, (ts, k, v, h) in enumerate(records):
            if cur is None or cur.try_append(ts, k, v, h) < 0:
                cur = ProducerBatch(b.topic, b.partition, target, b.codec, b.created, 0)
                cur.transactional = b.transactional
                cur.first_index = i
                cur.try_append(ts, k, v, h)
                pieces.append(cur)
        seq = b.base_sequence
        for piece in pieces:
            piece.full = True
            if seq >= 0:
                piece.set_producer(b.producer_id, b.producer_epoch, seq)
                seq += piece.count
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
                self.complete(parent, errors[0] if errors else None,
                              base[0] if base[0] is not None else -1, lat)

        for piece in pieces:
            piece.callbacks = [(-1, _PieceHook(piece, piece_done))]
        with self.acc.lock:
            self.acc.incomplete.update(pieces)
            dq = self.acc.deques.setdefault(tp, collections.deque())
            for piece in reversed(pieces):
                piece.in_retry = True
                piece.retry_at = now
                dq.appendleft(piece)
        if self.idem.enabled:
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
