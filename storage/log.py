"""One partition's log: its segments, producer state and leader-epoch cache.

Append path (as leader), batch-shaped: one header walk with CRC checks over
the client's buffer, every check before any byte is written, offsets and the
leader epoch patched into the headers in place, then a single write into the
active segment. Records are decoded only for a compacted topic's key check
and for record-level timestamp lookups.
"""
from __future__ import annotations

import bisect
import logging
import os
import random
import threading
import time
from pathlib import Path
from typing import Callable, NamedTuple

from pylog.core.errors import DataError, OffsetOutOfRangeError
from pylog.core.records.batch import RecordBatch
from pylog.core.records.header import (
    LOG_OVERHEAD,
    TIMESTAMP_TYPE_MASK,
    iter_headers,
    patch_append_fields,
    set_log_append_time,
)
from pylog.storage import log_validator
from pylog.storage.log_loader import LogLoader
from pylog.storage.log_retention import LogRetention
from pylog.storage.producer_state import ProducerStateManager
from pylog.storage.segment import LogSegment
from pylog.storage.txn_index import AbortedTxn

log = logging.getLogger(__name__)

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3


class AppendInfo(NamedTuple):
    """What an append did: the offsets assigned, max timestamp, LogAppendTime (-1 for CreateTime), log start
    offset, record count, whether it was a duplicate (nothing written) and the bytes written."""
    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time: int
    log_start_offset: int
    record_count: int
    duplicate: bool
    bytes: int


class FetchSlice(NamedTuple):
    """A range of a segment file for a fetch: (fd, position, length) for os.sendfile, and the first batch's
    base offset."""
    fd: int
    position: int
    length: int
    first_offset: int

    def read_bytes(self) -> bytes:
        """The slice's bytes (for callers that cannot sendfile)."""
        if self.length == 0:
            return b""
        return os.pread(self.fd, self.length, self.position)


def _inline(fn: Callable[[], None]) -> None:
    fn()


class Log(LogLoader, LogRetention):
    """A partition's log in `dir` (named `<topic>-<partition>`)."""

    def __init__(
        self,
        dir: str | os.PathLike,
        config,
        *,
        topic: str | None = None,
        partition: int | None = None,
        topic_id=None,
        log_start_offset: int = 0,
        recovery_point: int = 0,
        had_clean_shutdown: bool = True,
        producer_id_expiration_ms: int = 86400000,
        clock: Callable[[], float] = time.time,
        background: Callable[[Callable[[], None]], None] | None = None,
        fsync: bool = True,
        new: bool = False,
    ):
        self.dir = Path(dir)
        if not new:
            self.dir.mkdir(parents=True, exist_ok=True)
        if topic is None or partition is None:
            t, _, p = self.dir.name.rpartition("-")
            topic, partition = t, int(p)
        self.topic = topic
        self.partition = partition
        self._tp = f"{topic}-{partition}"  # names the partition in append errors
        self.topic_id = topic_id
        self.config = config
        self._clock = clock
        self._background = background or _inline
        self._fsync = fsync
        self.lock = threading.RLock()
        self.warnings: list[str] = []
        self.recovery_notes: list[str] = []  # what recovery cut (also in warnings), summed up by the log manager
        self.recovery_dropped = 0  # bytes recovery cut off
        self.segments: list[LogSegment] = []
        self._bases: list[int] = []
        self.pending_deletes: list[tuple[int, LogSegment]] = []
        self.log_start_offset = log_start_offset
        self.recovery_point = recovery_point
        self.high_watermark = 0
        self.unflushed_messages = 0
        self.last_flush_ms = self._now_ms()
        self.recovered = False
        self.closed = False
        self.producer_state = ProducerStateManager(self.dir, producer_id_expiration_ms, fsync=fsync, empty=new)
        if new:
            self._load_new()  # a partition created just now: its dir was made empty, nothing to load
        else:
            self._load(had_clean_shutdown)

    # ---- helpers ----
    @property
    def clock(self):
        """The log's time source (seconds), shared with its segments and the cleaner."""
        return self._clock

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    def replace_segments(self, idx: int, count: int, new: LogSegment) -> None:
        """The cleaner's swap: segments idx..idx+count-1 become `new` (the caller holds the lock)."""
        self.segments[idx:idx + count] = [new]
        self._bases[idx:idx + count] = [new.base_offset]

    def _jitter(self) -> int:
        jitter = self.config["segment.jitter.ms"]
        if jitter <= 0:
            return 0
        return random.randrange(min(jitter, self.config["segment.ms"]))

    def _new_segment(self, base_offset: int, suffix: str = "") -> LogSegment:
        return LogSegment(
            self.dir, base_offset,
            index_interval_bytes=self.config["index.interval.bytes"],
            max_index_size=self.config["segment.index.bytes"],
            roll_jitter_ms=self._jitter(), suffix=suffix, clock=self._clock,
        )

    def _warn(self, msg: str) -> None:
        self.warnings.append(msg)
        log.warning(msg)

    @property
    def active_segment(self) -> LogSegment:
        """The segment appends go to (always the last)."""
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        """The offset the next appended record gets."""
        return self.segments[-1].next_offset

    @property
    def last_stable_offset(self) -> int:
        """The offset below which every transaction is decided: the first offset of the oldest open
        transaction, else the high watermark (Kafka's LSO; READ_COMMITTED fetches stop here)."""
        first = self.producer_state.first_unstable_offset()
        hw = self.high_watermark
        return hw if first is None or first > hw else first

    @property
    def latest_epoch(self) -> int | None:
        """The newest leader epoch in the epoch cache, or None."""
        return self.epoch_cache.latest_epoch

    @property
    def size_bytes(self) -> int:
        """Bytes of all segment files."""
        return sum(s.size for s in self.segments)

    @property
    def is_compacted(self) -> bool:
        """True when cleanup.policy includes compact."""
        return "compact" in self.config["cleanup.policy"]

    def _segment_for(self, offset: int) -> int:
        """Index of the segment whose range holds offset (floor by base offset)."""
        return max(0, bisect.bisect_right(self._bases, offset) - 1)

    def update_config(self, config) -> None:
        """Apply new topic configs (AlterConfigs); later appends and retention use them."""
        with self.lock:
            self.config = config

    # ---- append ----
    def append_as_leader(self, buf, leader_epoch: int, *, now_ms: int | None = None) -> AppendInfo:
        """Validate the client's batches (storage.log_validator: every check before a byte is written),
        re-encode them when compression.type asks for another codec, answer duplicates of an idempotent
        producer with their original offsets, then assign offsets and the leader epoch in place and write
        everything with one write into the active segment (rolling first when due). Raises the Kafka
        error the produce response carries."""
        with self.lock:
            if self.closed:
                raise DataError(f"log {self.dir} is closed")
            now = int(self._clock() * 1000) if now_ms is None else now_ms  # _now_ms, inline on the hot path
            cfg = self.config
            mv = memoryview(buf)
            total = len(mv)
            tp = self._tp
            checked = log_validator.validate_fast(mv, total, now, cfg, tp)
            if checked is None:
                # something is unusual (or a compacted topic): the full walk raises the precise error
                checked = log_validator.validate(mv, total, now, cfg, tp)
            batches, count, max_ts, has_pid = checked
            if not batches:
                return AppendInfo(-1, -1, -1, -1, self.log_start_offset, 0, False, 0)
            codec = None if cfg["compression.type"] == "producer" else log_validator.target_codec(cfg)
            if codec is not None:
                redone = log_validator.recompress(mv, batches, codec, tp)
                if redone is not None:  # compression.type differs from the producer's codec
                    buf, batches = redone
                    mv = memoryview(buf)
                    total = len(buf)
            # producer state: duplicates answer with the original offsets, nothing is written
            psm = self.producer_state
            if has_pid:
                results = psm.check_batches([(h, mv, p) for p, h in batches])
                for dup in results:
                    if dup is not None:
                        return AppendInfo(dup.first_offset, dup.last_offset, dup.timestamp, -1,
                                          self.log_start_offset, dup.offset_delta + 1, True, 0)
            return self._write(mv, batches, total, count, max_ts, has_pid, leader_epoch, now,
                               cfg["message.timestamp.type"] == "LogAppendTime")

    def append_internal(self, buf, leader_epoch: int, *, now_ms: int | None = None) -> AppendInfo:
        """Append batches the broker built itself (transaction markers, coordinator records, a
        transactional offset commit): no client checks, no sequence checks (Kafka's COORDINATOR
        origin), offsets and the leader epoch assigned as for a client append."""
        with self.lock:
            if self.closed:
                raise DataError(f"log {self.dir} is closed")
            now = self._now_ms() if now_ms is None else now_ms
            mv = memoryview(buf)
            total = len(mv)
            batches = list(iter_headers(mv, 0, total, verify_crc=False))
            count = sum(h.record_count for _, h in batches)
            max_ts = max((h.max_timestamp for _, h in batches), default=-1)
            has_pid = any(h.producer_id >= 0 for _, h in batches)
            return self._write(mv, batches, total, count, max_ts, has_pid, leader_epoch, now, False)

    def _write(self, mv, batches, total, count, max_ts, has_pid, leader_epoch, now, log_append) -> AppendInfo:
        """The write half of an append (lock held): offsets, epoch, segment write, producer state,
        the .txnindex entry of an ABORT marker, the high watermark."""
        cfg = self.config
        psm = self.producer_state
        if log_append:
            max_ts = now
        seg = self.segments[-1]  # the active segment
        first = seg.next_offset  # the log end offset
        if seg.should_roll(total, max_ts, first + count - 1, now, cfg["segment.bytes"], cfg["segment.ms"]):
            seg = self._roll(now)
        # assign offsets and stamp epoch (both outside the CRC), then LogAppendTime (re-CRC)
        patched, next_offset = patch_append_fields(mv, batches, first, leader_epoch)
        if log_append:
            for i, (p, h) in enumerate(patched):
                set_log_append_time(mv, p, h.batch_length + LOG_OVERHEAD, now)
                patched[i] = (p, h._replace(max_timestamp=now, attributes=h.attributes | TIMESTAMP_TYPE_MASK))
        seg.append(mv, patched, total)
        if has_pid:
            for p, h in patched:
                if h.producer_id >= 0:
                    done = psm.update(h, mv, p)
                    if done is not None and done.is_aborted:
                        self._index_abort(seg, done)
        else:
            psm.update_map_end_offset(next_offset)
        if leader_epoch >= 0 and leader_epoch != self.epoch_cache.latest_epoch:
            self.epoch_cache.assign(leader_epoch, first)
        self.high_watermark = next_offset
        self.unflushed_messages += count
        if self.unflushed_messages >= cfg["flush.messages"]:
            self.flush()
        return tuple.__new__(AppendInfo, (first, next_offset - 1, max_ts, now if log_append else -1,
                                          self.log_start_offset, count, False, total))  # no NamedTuple __new__

    def _index_abort(self, seg: LogSegment, done) -> None:
        """Kafka's .txnindex entry for an aborted transaction: its range and the LSO after the marker."""
        first = self.producer_state.first_unstable_offset()
        seg.txn_index.append(AbortedTxn(done.producer_id, done.first_offset, done.last_offset,
                                        done.last_offset + 1 if first is None else first))

    # ---- roll ----
    def roll(self, now_ms: int | None = None) -> LogSegment:
        """Start a new active segment at the log end offset (no-op when the active one is empty)."""
        with self.lock:
            return self._roll(self._now_ms() if now_ms is None else now_ms)

    def _roll(self, now_ms: int) -> LogSegment:
        old = self.active_segment
        new_base = self.log_end_offset
        if old.size == 0:
            return old  # nothing to roll away from
        self.producer_state.update_map_end_offset(new_base)
        self.producer_state.take_snapshot(new_base)
        old.on_become_inactive()
        seg = self._new_segment(new_base)
        if seg.size:  # a leftover file with that name: start it afresh
            os.ftruncate(seg.fd, 0)
            seg.size = 0
        self.segments.append(seg)
        self._bases.append(new_base)
        # Older segments are flushed in the background; the recovery point follows.
        self._background(lambda: self.flush(new_base))
        return seg

    # ---- flush ----
    def flush(self, up_to: int | None = None) -> None:
        """fsync segments holding offsets below up_to (default: all) and move the recovery point."""
        with self.lock:
            if self.closed:
                return
            target = self.log_end_offset if up_to is None else min(up_to, self.log_end_offset)
            if target <= self.recovery_point and up_to is not None:
                return
            # an older segment ends where the next begins (its own tail is read lazily)
            ends = self._bases[1:] + [self.segments[-1].next_offset]
            segs = [s for s, end in zip(self.segments, ends)
                    if s.base_offset < target and end > self.recovery_point or s.unflushed]
        for s in segs:
            if s.fd >= 0 and self._fsync:
                s.flush()
            else:
                s.unflushed = False
        with self.lock:
            if target > self.recovery_point:
                self.recovery_point = target
            if up_to is None or target >= self.log_end_offset:
                self.unflushed_messages = 0
            self.last_flush_ms = self._now_ms()

    def flush_if_due(self, now_ms: int) -> bool:
        """flush.ms policy."""
        if self.unflushed_messages and now_ms - self.last_flush_ms >= self.config["flush.ms"]:
            self.flush()
            return True
        return False

    # ---- read ----
    def read(self, offset: int, max_bytes: int, *, upper_bound: int | None = None,
             min_one_batch: bool = True, partial_tail: bool = False) -> FetchSlice:
        """Whole batches from the one holding `offset`, at most max_bytes (but at least one batch when
        min_one_batch) and never past the high watermark (or upper_bound): a FetchSlice for sendfile.
        partial_tail: the budget's byte slice instead, ending in a partial batch as Kafka's (Fetch).
        Raises OffsetOutOfRangeError outside [log start, log end]."""
        with self.lock:
            leo = self.log_end_offset
            if offset < self.log_start_offset or offset > leo:
                raise OffsetOutOfRangeError(
                    f"offset {offset} is out of range for partition {self.topic}-{self.partition}: "
                    f"log start offset {self.log_start_offset}, log end offset {leo}")
            bound = self.high_watermark if upper_bound is None else min(upper_bound, leo)
            if offset >= bound:
                return FetchSlice(self.active_segment.fd, self.active_segment.size, 0, offset)
            i = self._segment_for(offset)
            while i < len(self.segments):
                seg = self.segments[i]
                max_pos = None
                if seg.next_offset > bound:
                    bp = seg.translate_offset(bound)
                    # the batch holding `bound` is not yet committed: stop before it
                    max_pos = seg.size if bp is None else bp.position
                res = seg.read(offset, max_bytes, max_pos, min_one_batch, partial_tail)
                if res is not None:
                    pos, length, first = res
                    return FetchSlice(seg.fd, pos, length, first)
                i += 1  # offset past this segment's data (e.g. a gap): the next segment
            return FetchSlice(self.active_segment.fd, self.active_segment.size, 0, offset)

    def aborted_transactions(self, start: int, upper: int) -> list:
        """Aborted transactions overlapping [start, upper), from the .txnindex of the segment holding
        start onwards (Kafka's collectAbortedTransactions): a READ_COMMITTED fetch hands them to the
        client, which drops those producers' records up to their ABORT markers."""
        with self.lock:
            out = []
            for seg in self.segments[self._segment_for(start):]:
                if not seg.txn_index.has_entries:
                    continue
                found = seg.txn_index.collect_aborted(start, upper)
                out.extend(found)
                if any(t.last_stable_offset >= upper for t in found):
                    break  # later segments' aborts all began at or after upper
            return out

    # ---- lookups ----
    def offset_for_timestamp(self, ts: int) -> tuple[int, int, int] | None:
        """ListOffsets: (offset, timestamp, leader epoch) of the first record at or after `ts`;
        EARLIEST/LATEST/MAX_TIMESTAMP sentinels as Kafka's; None when no record qualifies."""
        with self.lock:
            cache = self.epoch_cache
            if ts == EARLIEST_TIMESTAMP:
                e = cache.epoch_for_offset(self.log_start_offset)
                return self.log_start_offset, -1, -1 if e is None else e
            if ts == LATEST_TIMESTAMP:
                e = cache.latest_epoch
                return self.high_watermark, -1, -1 if e is None else e
            if ts == MAX_TIMESTAMP:
                best = None
                for seg in self.segments:
                    if seg.max_timestamp_so_far >= 0 and (best is None or seg.max_timestamp_so_far > best.max_timestamp_so_far):
                        best = seg
                if best is None:
                    return None
                target = best.max_timestamp_so_far
                bp = best.translate_offset(best.offset_of_max_timestamp)
                return self._first_record_at_or_after(best, bp.position, target, self.log_start_offset, exact=True)
            if ts < 0:
                return None
            for seg in self.segments:
                if seg.next_offset <= self.log_start_offset or seg.largest_timestamp < ts:
                    continue
                found = seg.find_offset_by_timestamp(ts, self.log_start_offset)
                if found is None:
                    continue
                return self._first_record_at_or_after(seg, found[2], ts, self.log_start_offset)
            return None

    def _first_record_at_or_after(self, seg: LogSegment, position: int, ts: int, start_offset: int,
                                  exact: bool = False) -> tuple[int, int, int] | None:
        """Decode the batch at position: its first record (offset >= start) with
        timestamp >= ts (== ts when exact)."""
        for p, h in seg.batches(position):
            if h.max_timestamp < ts or h.last_offset < start_offset:
                continue
            raw = seg.read_batch_bytes(p, h.batch_length + LOG_OVERHEAD)
            for rec in RecordBatch(raw, 0).records():
                if rec.offset < start_offset:
                    continue
                if (rec.timestamp == ts) if exact else (rec.timestamp >= ts):
                    return rec.offset, rec.timestamp, h.partition_leader_epoch
        return None

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch: (epoch, end offset) as Kafka's leader-epoch cache answers it."""
        with self.lock:
            return self.epoch_cache.end_offset_for(epoch, self.log_end_offset)

    # ---- lifecycle ----
    def take_snapshot(self) -> None:
        """Write a producer-state snapshot at the log end offset."""
        with self.lock:
            self.producer_state.update_map_end_offset(self.log_end_offset)
            self.producer_state.take_snapshot(self.log_end_offset)

    def close(self) -> None:
        """Close every segment (trimming the active one's indexes); the log cannot be used after."""
        with self.lock:
            if self.closed:
                return
            for seg in self.segments:
                if seg is self.active_segment:
                    seg.close_active()
                seg.close()
            for _, seg in self.pending_deletes:
                seg.close_handlers()
            self.closed = True

    def delete(self) -> None:
        """Remove the whole partition folder (topic deletion)."""
        import shutil

        with self.lock:
            for seg in self.segments:
                seg.close_handlers()
            for _, seg in self.pending_deletes:
                seg.close_handlers()
            self.closed = True
            shutil.rmtree(self.dir, ignore_errors=True)

    def __repr__(self) -> str:
        return (f"Log({self.topic}-{self.partition}, start={self.log_start_offset}, end={self.log_end_offset}, "
                f"segments={len(self.segments)})")
