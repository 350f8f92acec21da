"""The producer's record accumulator: per-partition deques of open batches.

Records are encoded straight into their batch's bytearray as they are
appended (RecordBatch v2 record layout), after the 61 bytes reserved for the
batch header: building an uncompressed batch for the wire writes the header
there (the buffer is the batch, no copy); a compressed one is one compression
call plus a new header. The user thread appends under a
lock; the sender (on the event loop thread) drains ready batches.

Memory: `buffer.memory` bytes are shared by all open and in-flight batches;
a new batch reserves max(batch.size, record size) and gives it back when it
completes. When the pool is empty, append blocks up to `max.block.ms`.
"""
from __future__ import annotations

import collections
import threading
import time
from dataclasses import dataclass

from pylog.core.client.errors import BufferExhaustedError, KafkaTimeoutError
from pylog.core.records import compression
from pylog.core.records.batch import decode_records, encode_headers
from pylog.core.records.header import HEADER_SIZE, TRANSACTIONAL_MASK, pack_batch, seal_batch, set_producer
from pylog.core.records.varint import encode_varint
from pylog.core.client.runs import VARINT, VARINT_LIMIT, encode_frame_run, encode_run

_V = VARINT  # zig-zag varint bytes of non-negative n < 2**14 (lengths, deltas)
_VLIM = VARINT_LIMIT
RECORD_OVERHEAD_MAX = 21  # worst-case varint bytes around key and value


@dataclass(slots=True, eq=False, repr=False)
class RecordMetadata:
    """Where an acknowledged record was stored (the Java client's RecordMetadata)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    serialized_key_size: int = -1
    serialized_value_size: int = -1

    def __repr__(self):
        return f"RecordMetadata({self.topic}-{self.partition}@{self.offset}, ts={self.timestamp})"


class ProducerBatch:
    __slots__ = (
        "topic", "partition", "buf", "count", "base_ts", "max_ts", "created", "limit", "full",
        "callbacks", "timestamps", "done", "base_offset", "log_append_time", "error", "attempts",
        "retry_at", "base_sequence", "producer_id", "producer_epoch", "wire", "reserved", "codec",
        "in_retry", "first_index", "offsets", "done_at", "transactional",
    )

    def __init__(self, topic, partition, limit, codec, now, reserved):
        self.topic = topic
        self.partition = partition
        self.buf = bytearray(HEADER_SIZE)  # the header's room, then the records
        self.count = 0
        self.base_ts = None
        self.max_ts = -1
        self.created = now
        self.limit = HEADER_SIZE + limit  # bytes of header + records before the batch is full
        self.full = False
        self.callbacks = None  # [(index, callback)] in send order
        self.timestamps = None
        self.done = False
        self.base_offset = -1
        self.log_append_time = -1
        self.error = None
        self.attempts = 0
        self.retry_at = 0.0
        self.base_sequence = -1
        self.producer_id = -1
        self.producer_epoch = -1
        self.wire = None  # the built batch: buf itself, or header + compressed records
        self.reserved = reserved
        self.codec = codec
        self.in_retry = False
        self.first_index = 0
        self.done_at = 0.0
        self.offsets = None  # per-record offsets once a split batch completes
        self.transactional = False  # written by a transactional producer: the batch header says so

    def __repr__(self):
        return f"<Batch {self.topic}-{self.partition} n={self.count} seq={self.base_sequence}>"

    def try_append(self, ts, key, value, headers) -> int:
        """Encode one record into the batch; -1 if it does not fit (the batch is then full)."""
        buf = self.buf
        od = self.count
        if self.base_ts is None:
            self.base_ts = ts
        tsd = ts - self.base_ts
        tsd_b = _V[tsd] if 0 <= tsd < 16384 else encode_varint(tsd)
        od_b = _V[od] if od < 16384 else encode_varint(od)
        if key is None:
            kpart = b"\x01"
        else:
            kl = len(key)
            kpart = (_V[kl] if kl < 16384 else encode_varint(kl)) + key
        if value is None:
            vpart = b"\x01"
        else:
            vl = len(value)
            vpart = (_V[vl] if vl < 16384 else encode_varint(vl)) + value
        h_b = encode_headers(headers) if headers else b"\x00"
        n = 1 + len(tsd_b) + len(od_b) + len(kpart) + len(vpart) + len(h_b)
        if od and len(buf) + n + 5 > self.limit:
            self.full = True
            return -1
        buf += _V[n] if n < 16384 else encode_varint(n)
        buf += b"\x00"
        buf += tsd_b
        buf += od_b
        buf += kpart
        buf += vpart
        buf += h_b
        if ts > self.max_ts:
            self.max_ts = ts
        self.count = od + 1
        if len(buf) >= self.limit:
            self.full = True
        return od

    def append_many(self, ts, values) -> int:
        """Keyless, headerless records with one timestamp: the bulk path. Returns how many fit."""
        buf = self.buf
        od = self.count
        if self.base_ts is None:
            self.base_ts = ts
        tsd = ts - self.base_ts
        tsd_b = b"\x00" + (_V[tsd] if 0 <= tsd < 16384 else encode_varint(tsd))
        limit = self.limit
        size = len(buf)
        taken = 0
        V = _V
        for value in values:
            vl = len(value)
            od_b = V[od] if od < 16384 else encode_varint(od)
            vl_b = V[vl] if vl < 16384 else encode_varint(vl)
            n = len(tsd_b) + len(od_b) + 1 + len(vl_b) + vl + 1
            head = V[n] if n < 16384 else encode_varint(n)
            size += len(head) + n
            if od and size > limit:
                self.full = True
                break
            buf += b"".join((head, tsd_b, od_b, b"\x01", vl_b, value, b"\x00"))
            od += 1
            taken += 1
        self.count = od
        if ts > self.max_ts:
            self.max_ts = ts
        if len(buf) >= limit:
            self.full = True
        return taken

    def append_run(self, ts, values, start=0, stop=None, keys=None, headers=b"\x00",
                   value_lens=None, key_lens=None) -> int:
        """Append records values[start:stop] with one timestamp, as many as fit: the bulk
        path (`pylog.core.client.runs.encode_run`, which says what the arguments hold).
        Each record must encode to less than 16384 bytes. Returns how many were taken."""
        stop = len(values) if stop is None else stop
        return self._append_encoded(ts, stop > start, encode_run, values, start, stop, keys, headers,
                                    value_lens, key_lens)

    def append_frame(self, ts, data, offsets, idx, start, stop, headers=b"\x00") -> int:
        """append_run of framed records (`pylog produce`'s text lines where they lie in the read
        block: `pylog.core.client.runs.encode_frame_run` says what the arguments hold)."""
        return self._append_encoded(ts, stop > start, encode_frame_run, data, offsets, idx, start, stop, headers)

    def _append_encoded(self, ts, some, encode, *args) -> int:
        od = self.count
        room = self.limit - len(self.buf) - 5
        if not some or od + 1 >= _VLIM or (room <= 0 and od):
            self.full = self.full or some
            return 0
        if self.base_ts is None:
            self.base_ts = ts
        n, full = encode(self.buf, od, ts - self.base_ts, room, *args)
        if full:
            self.full = True
        if not n:
            return 0
        if ts > self.max_ts:
            self.max_ts = ts
        self.count = od + n
        if len(self.buf) >= self.limit:
            self.full = True
        return n

    def size(self) -> int:
        return len(self.buf)

    def build(self) -> bytearray:
        """The wire form (compressed once; retries reuse it)."""
        if self.wire is not None:
            return self.wire
        count = self.count
        fields = dict(
            attributes=self.codec | (TRANSACTIONAL_MASK if self.transactional else 0),
            last_offset_delta=count - 1, base_timestamp=self.base_ts if self.base_ts is not None else -1,
            max_timestamp=self.max_ts, record_count=count, producer_id=self.producer_id,
            producer_epoch=self.producer_epoch, base_sequence=self.base_sequence,
        )
        if self.codec == 0:
            seal_batch(self.buf, **fields)  # no record is appended once a batch is drained
            self.wire = self.buf
        else:
            payload = compression.compress(self.codec, memoryview(self.buf)[HEADER_SIZE:])
            self.wire = pack_batch(payload, mutable=True, **fields)
        return self.wire

    def set_producer(self, pid, epoch, seq):
        self.producer_id, self.producer_epoch, self.base_sequence = pid, epoch, seq
        if self.wire is not None:  # patch the built header in place, then its CRC
            set_producer(self.wire, 0, len(self.wire), pid, epoch, seq)

    def records(self):
        """(timestamp, key, value, headers) of every record: used to split a batch."""
        recs = decode_records(bytes(memoryview(self.buf)[HEADER_SIZE:]), 0, self.base_ts or 0)
        return [(r.timestamp, r.key, r.value, r.headers) for r in recs]


class BufferPool:
    """Counts bytes of buffer.memory in use; blocks allocators up to max.block.ms."""

    def __init__(self, total: int, batch_size: int):
        self.total = total
        self.available = total
        self.batch_size = batch_size
        self._cond = threading.Condition(threading.Lock())
        self.waiters = 0

    def allocate(self, size: int, max_block_s: float) -> int:
        with self._cond:
            if self.available >= size:
                self.available -= size
                return size
            deadline = time.monotonic() + max_block_s
            self.waiters += 1
            try:
                while self.available < size:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        raise BufferExhaustedError(
                            f"Failed to allocate {size} bytes within the configured max blocking time "
                            f"{int(max_block_s * 1000)} ms. Total memory: {self.total} bytes. Available memory: "
                            f"{self.available} bytes. Poolable size: {self.batch_size} bytes")
                    self._cond.wait(remaining)
                self.available -= size
                return size
            finally:
                self.waiters -= 1

    def release(self, size: int):
        if size:
            with self._cond:
                self.available += size
                self._cond.notify_all()


class RecordAccumulator:
    def __init__(self, config, pool: BufferPool, codec: int):
        self.batch_size = max(1, config["batch.size"])
        self.linger = config["linger.ms"] / 1000.0
        self.delivery_timeout = config["delivery.timeout.ms"] / 1000.0
        self.retry_backoff = config["retry.backoff.ms"] / 1000.0
        self.max_block = config["max.block.ms"] / 1000.0
        self.codec = codec
        self.pool = pool
        self.lock = threading.Lock()
        self.deques: dict[tuple, collections.deque] = {}
        self.flushing = 0
        self.closing = False
        self.incomplete: set = set()  # batches not yet done (for flush)
        self._drain_index: dict[int, int] = {}
        self.transactional = bool(config["transactional.id"])

    def new_batch(self, topic, partition, record_size) -> ProducerBatch:
        """Reserve memory (may block, outside the lock) and create a batch."""
        size = max(self.batch_size, record_size + HEADER_SIZE)
        reserved = self.pool.allocate(size, self.max_block)
        b = ProducerBatch(topic, partition, max(self.batch_size, record_size), self.codec,
                          time.monotonic(), reserved)
        b.transactional = self.transactional
        return b

    def has_open_batch(self, tp) -> bool:
        """`tp` has a batch that can take more records."""
        with self.lock:
            dq = self.deques.get(tp)
            return bool(dq) and not dq[-1].full

    def add_batch(self, batch, fill=None) -> bool:
        """Queue a batch from new_batch() as its partition's open batch, `fill(batch)` run
        first under the lock; False (and its memory given back) when another thread opened
        one meanwhile."""
        tp = (batch.topic, batch.partition)
        with self.lock:
            dq = self.deques.get(tp)
            if dq and not dq[-1].full:
                self.pool.release(batch.reserved)
                return False
            if fill is not None:
                fill(batch)
            if dq is None:
                dq = self.deques[tp] = collections.deque()
            dq.append(batch)
            self.incomplete.add(batch)
        return True

    def has_undrained(self) -> bool:
        return any(self.deques.values())

    def ready(self, metadata, now, muted, idle_check=None):
        """Nodes with a sendable batch, the seconds until the next batch may become
        ready, and topics whose leader is unknown."""
        ready_nodes = set()
        next_delay = None
        unknown = set()
        exhausted = self.pool.waiters > 0
        with self.lock:
            for (topic, p), dq in self.deques.items():
                if not dq:
                    continue
                b = dq[0]
                if not b.count:
                    continue  # opened by send_many, its records not appended yet: never sent empty
                leader = metadata.leader_for(topic, p)
                if leader < 0:
                    unknown.add(topic)
                    continue
                if leader in ready_nodes or (topic, p) in muted:
                    continue
                if b.in_retry and b.retry_at > now:
                    wait = b.retry_at - now
                else:
                    if b.full or len(dq) > 1 or exhausted or self.flushing or self.closing:
                        ready_nodes.add(leader)
                        continue
                    wait = b.created + self.linger - now
                    if wait <= 0:
                        ready_nodes.add(leader)
                        continue
                if next_delay is None or wait < next_delay:
                    next_delay = wait
        return ready_nodes, next_delay, unknown

    def drain(self, metadata, node, max_size, muted, assign_seq) -> list:
        """At most one batch per partition led by `node`, up to max_size bytes in total."""
        out = []
        total = 0
        now = time.monotonic()
        with self.lock:
            tps = [tp for tp, dq in self.deques.items() if dq and metadata.leader_for(*tp) == node]
            if not tps:
                return out
            start = self._drain_index.get(node, 0) % len(tps)
            self._drain_index[node] = start + 1
            for tp in tps[start:] + tps[:start]:
                if tp in muted:
                    continue
                dq = self.deques[tp]
                b = dq[0]
                if not b.count or (b.in_retry and b.retry_at > now):
                    continue
                size = b.size()
                if out and total + size > max_size:
                    break
                if assign_seq is not None and not assign_seq(b):
                    continue
                dq.popleft()
                b.full = True
                total += size
                out.append(b)
        return out

    def reenqueue(self, batch, now, by_sequence: bool):
        """A retried batch goes back to the front of its deque (sequence order when idempotent)."""
        batch.in_retry = True
        batch.retry_at = now + self.retry_backoff
        with self.lock:
            dq = self.deques.setdefault((batch.topic, batch.partition), collections.deque())
            if by_sequence and batch.base_sequence >= 0:
                i = 0
                while i < len(dq) and 0 <= dq[i].base_sequence < batch.base_sequence:
                    i += 1
                dq.insert(i, batch)
            else:
                # retried batches go first, oldest first, so a partition keeps its order
                i = 0
                while i < len(dq) and dq[i].in_retry and dq[i].created <= batch.created:
                    i += 1
                dq.insert(i, batch)

    def expired(self, now) -> list:
        """Batches (not in flight) whose delivery.timeout.ms has passed."""
        out = []
        limit = self.delivery_timeout
        with self.lock:
            for dq in self.deques.values():
                while dq and now - dq[0].created >= limit:
                    out.append(dq.popleft())
                # later batches in the same deque are younger; but retried ones at the
                # front are older, handled above
        return out

    def abort_all(self) -> list:
        with self.lock:
            out = [b for dq in self.deques.values() for b in dq]
            for dq in self.deques.values():
                dq.clear()
        return out


def expiry_error(batch, now) -> KafkaTimeoutError:
    return KafkaTimeoutError(
        f"Expiring {batch.count} record(s) for {batch.topic}-{batch.partition}:"
        f"{int((now - batch.created) * 1000)} ms has passed since batch creation")
