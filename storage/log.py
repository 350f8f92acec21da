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
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, NamedTuple

from pylog.core.errors import (
    CorruptMessageError,
    DataError,
    InvalidRecordError,
    InvalidTimestampError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    RecordListTooLargeError,
    UnsupportedForMessageFormatError,
)
from crc32c import crc32c

from pylog.core.records.batch import RecordBatch
from pylog.core.records.errors import (
    CrcMismatchError,
    InvalidMagicError,
    RecordFormatError,
)
from pylog.core.records.header import (
    APPEND_PATCH_STRUCT,
    ATTRIBUTES_OFFSET,
    CONTROL_MASK,
    HEADER_STRUCT,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    BatchHeader,
    iter_headers,
    set_log_append_time,
)
from pylog.storage.index_file import CorruptIndexError
from pylog.storage.leader_epoch import LEADER_EPOCH_CHECKPOINT, LeaderEpochFileCache, read_leader_epoch_checkpoint
from pylog.storage.producer_state import ProducerStateManager
from pylog.storage.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    SWAP_END_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    LogSegment,
    segment_path,
)

log = logging.getLogger(__name__)

_BATCH_HEADER = HEADER_STRUCT
# baseOffset, batchLength (unchanged) and partitionLeaderEpoch, written with one pack_into
_PATCH = APPEND_PATCH_STRUCT
_new_tuple = tuple.__new__

EARLIEST_TIMESTAMP = -2
LATEST_TIMESTAMP = -1
MAX_TIMESTAMP = -3


class AppendInfo(NamedTuple):
    first_offset: int
    last_offset: int
    max_timestamp: int
    log_append_time: int
    log_start_offset: int
    record_count: int
    duplicate: bool
    bytes: int


class FetchSlice(NamedTuple):
    fd: int
    position: int
    length: int
    first_offset: int

    def read_bytes(self) -> bytes:
        if self.length == 0:
            return b""
        return os.pread(self.fd, self.length, self.position)


def _inline(fn: Callable[[], None]) -> None:
    fn()


class Log:
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
    ):
        self.dir = Path(dir)
        self.dir.mkdir(parents=True, exist_ok=True)
        if topic is None or partition is None:
            t, _, p = self.dir.name.rpartition("-")
            topic, partition = t, int(p)
        self.topic = topic
        self.partition = partition
        self.topic_id = topic_id
        self.config = config
        self._clock = clock
        self._background = background or _inline
        self._fsync = fsync
        self.lock = threading.RLock()
        self.warnings: list[str] = []
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
        self.producer_state = ProducerStateManager(self.dir, producer_id_expiration_ms, fsync=fsync)
        self._load(had_clean_shutdown)

    # ---- helpers ----
    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

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
        return self.segments[-1]

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def last_stable_offset(self) -> int:
        return self.high_watermark

    @property
    def latest_epoch(self) -> int | None:
        return self.epoch_cache.latest_epoch

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def is_compacted(self) -> bool:
        return "compact" in self.config["cleanup.policy"]

    def _segment_for(self, offset: int) -> int:
        """Index of the segment whose range holds offset (floor by base offset)."""
        return max(0, bisect.bisect_right(self._bases, offset) - 1)

    def update_config(self, config) -> None:
        with self.lock:
            self.config = config

    # ---- loading and recovery ----
    def _load(self, had_clean_shutdown: bool) -> None:
        swaps = self._remove_temp_files()
        for base in sorted(swaps):
            self._complete_swap(base)
        for p in self.dir.glob("*" + SWAP_END_SUFFIX):
            p.unlink()  # the cleaner's swap hints are spent (or orphaned) once swaps are done
        bases = []
        for p in self.dir.iterdir():
            name = p.name
            if name.endswith(LOG_SUFFIX) and name[:-4].isdigit():
                bases.append(int(name[:-4]))
            elif (name.endswith(INDEX_SUFFIX) or name.endswith(TIME_INDEX_SUFFIX) or name.endswith(TXN_INDEX_SUFFIX)):
                stem = name.split(".")[0]
                if stem.isdigit() and not (self.dir / (stem + LOG_SUFFIX)).exists():
                    p.unlink()  # an index without its log: Kafka deletes it too
        bases.sort()
        epoch_ok = self._load_epoch_cache()
        self._txn_index_rebuild: set[int] = set()
        recover_from = None
        if not had_clean_shutdown and bases:
            i = max(0, bisect.bisect_right(bases, self.recovery_point) - 1)
            recover_from = bases[i]
        for base in bases:
            seg = self._new_segment(base)
            self.segments.append(seg)
            self._bases.append(base)
        i = 0
        while i < len(self.segments):
            seg = self.segments[i]
            needs = recover_from is not None and seg.base_offset >= recover_from
            if not needs:
                try:
                    seg.sanity_check()
                    seg.load_tail()
                    if i + 1 < len(self.segments) and seg.next_offset > self.segments[i + 1].base_offset:
                        raise CorruptIndexError(f"segment {seg.log_path.name} overlaps the next one")
                except CorruptIndexError as e:
                    self._warn(f"{e}; rebuilding the indexes of {seg.log_path}")
                    needs = True
            if needs:
                if self._recover_segment(i):
                    break  # later segments were deleted
            i += 1
        if not self.segments:
            seg = self._new_segment(self.log_start_offset)
            self.segments.append(seg)
            self._bases.append(seg.base_offset)
        leo = self.log_end_offset
        self.active_segment.resize_indexes(self.config["segment.index.bytes"])
        self.log_start_offset = max(self.log_start_offset, self.segments[0].base_offset)
        if self.log_start_offset > leo:
            self.log_start_offset = leo
        if not epoch_ok:
            self._rebuild_epoch_cache()
        self.epoch_cache.truncate_from_end(leo)
        self.epoch_cache.truncate_from_start(self.log_start_offset)
        self._load_producer_state()
        if self._txn_index_rebuild:
            self._rebuild_txn_indexes(self._txn_index_rebuild)
        self.recovery_point = leo
        self.high_watermark = leo

    def _rebuild_txn_indexes(self, bases: set[int]) -> None:
        """Rebuild the .txnindex of recovered segments that hold end-transaction markers.

        Each ABORT marker's entry needs the transaction's first offset and the
        last stable offset at the marker (the first offset of the earliest other
        open transaction, else the marker's offset + 1), so producer state is
        replayed from the log start, batch headers only, reading the bytes of
        control batches alone. Runs only after a recovery that met markers: a log
        without transactions never pays for it."""
        from pylog.storage.txn_index import AbortedTxn

        psm = ProducerStateManager(self.dir / ".txn-index-rebuild", fsync=False)  # in memory: never snapshots
        for seg in self.segments:
            rebuild = seg.base_offset in bases
            for p, h in seg.batches():
                if h.producer_id < 0:
                    continue
                if not h.is_control:
                    psm.update(h)
                    continue
                done = psm.update(h, seg.read_batch_bytes(p, h.batch_length + LOG_OVERHEAD), 0)
                if rebuild and done is not None and done.is_aborted:
                    lso = psm.first_unstable_offset()
                    seg.txn_index.append(AbortedTxn(done.producer_id, done.first_offset, done.last_offset,
                                                    done.last_offset + 1 if lso is None else lso))

    def _remove_temp_files(self) -> list[int]:
        """Kafka's removeTempFilesAndCollectSwapFiles: .deleted and .cleaned files go;
        index .swap files go (rebuilt); log .swap files are kept to complete the swap."""
        cleaned_min = None
        swaps = []
        for p in list(self.dir.iterdir()):
            name = p.name
            if name.endswith(DELETED_SUFFIX):
                p.unlink()
            elif name.endswith(CLEANED_SUFFIX):
                stem = name.split(".")[0]
                if stem.isdigit():
                    cleaned_min = int(stem) if cleaned_min is None else min(cleaned_min, int(stem))
                p.unlink()
            elif name.endswith(SWAP_SUFFIX):
                inner = name[: -len(SWAP_SUFFIX)]
                if inner.endswith(LOG_SUFFIX) and inner[:-4].isdigit():
                    swaps.append(int(inner[:-4]))
                else:
                    p.unlink()
            elif name.endswith(".tmp"):
                p.unlink()  # half-written checkpoint or snapshot
        out = []
        for base in swaps:
            if cleaned_min is not None and base >= cleaned_min:
                # the cleaning that produced this swap did not finish
                segment_path(self.dir, base, LOG_SUFFIX + SWAP_SUFFIX).unlink()
                self._warn(f"deleting incomplete swap file {base:020d}.log.swap")
            else:
                out.append(base)
        return out

    def _complete_swap(self, base: int) -> None:
        """A finished swap: replace the segments it covers with it."""
        seg = self._new_segment(base, SWAP_SUFFIX)
        res = seg.recover(contiguous=False)
        end = res.next_offset
        # The cleaner writes the end offset of the segments it replaces beside the
        # swap: its last batches may all have been removed, and old segments past
        # the swap's own data must go too.
        hint = segment_path(self.dir, base, SWAP_END_SUFFIX)
        try:
            end = max(end, int(hint.read_text().strip()))
        except (FileNotFoundError, ValueError):
            pass
        for p in list(self.dir.iterdir()):
            name = p.name
            if name.endswith(LOG_SUFFIX) and name[:-4].isdigit():
                b = int(name[:-4])
                if base <= b < end:
                    for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX):
                        q = segment_path(self.dir, b, suffix)
                        if q.exists():
                            q.unlink()
        seg.change_suffix(SWAP_SUFFIX, "")
        seg.close()
        self._warn(f"completed swap of segment {base:020d}.log (offsets {base}..{end - 1})")

    def _load_epoch_cache(self) -> bool:
        path = self.dir / LEADER_EPOCH_CHECKPOINT
        try:
            entries = read_leader_epoch_checkpoint(path)
        except FileNotFoundError:
            entries = []
        except (DataError, ValueError) as e:
            self._warn(f"unreadable {path} ({e}); rebuilding it from the log")
            self.epoch_cache = LeaderEpochFileCache(path, [], fsync=self._fsync)
            return False
        self.epoch_cache = LeaderEpochFileCache(path, entries, fsync=self._fsync)
        return True

    def _rebuild_epoch_cache(self) -> None:
        self.epoch_cache.clear(flush=False)
        last = None
        for seg in self.segments:
            for _, h in seg.batches():
                e = h.partition_leader_epoch
                if e != last and e >= 0:
                    self.epoch_cache.assign(e, h.base_offset, flush=False)
                    last = e
        self.epoch_cache.flush()

    def _recover_segment(self, i: int) -> bool:
        """Recover segment i; on damage cut it and delete every later segment.
        Returns True when later segments were dropped."""
        seg = self.segments[i]
        cache = self.epoch_cache
        state = {"epoch": cache.latest_epoch}

        def on_batch(h: BatchHeader) -> None:
            e = h.partition_leader_epoch
            if e >= 0 and e != state["epoch"]:
                cache.assign(e, h.base_offset, flush=False)
                state["epoch"] = e
            if h.attributes & CONTROL_MASK and h.producer_id >= 0:
                state["markers"] = True

        cache.truncate_from_end(seg.base_offset, flush=False)
        state["epoch"] = cache.latest_epoch
        res = seg.recover(on_batch, contiguous=not self.is_compacted)
        self.recovered = True
        if state.get("markers"):
            self._txn_index_rebuild.add(seg.base_offset)  # recover() emptied its .txnindex
        if res.truncated_bytes:
            self._warn(
                f"recovery: {seg.log_path} truncated at byte {res.valid_bytes} (offset {res.next_offset}): "
                f"{res.reason}; {res.truncated_bytes} bytes dropped")
        cache.flush()
        if (res.truncated_bytes or i + 1 < len(self.segments)) and self._fsync:
            seg.flush()
        later = self.segments[i + 1:]
        if res.truncated_bytes and later:
            for s in later:
                self._warn(f"recovery: deleting segment {s.log_path.name} after the damaged one")
                s.delete_files()
            del self.segments[i + 1:]
            del self._bases[i + 1:]
            return True
        if not res.truncated_bytes and later and res.next_offset > later[0].base_offset:
            raise DataError(f"{seg.log_path}: offsets run to {res.next_offset - 1}, past the next segment's base "
                            f"offset {later[0].base_offset}")
        return False

    def _load_producer_state(self) -> None:
        psm = self.producer_state
        leo = self.log_end_offset
        for w in psm.load(self.log_start_offset, leo, self._now_ms()):
            self._warn(w)
        start = max(psm.map_end_offset, self.log_start_offset)
        if start < leo:
            self._replay_producer_state(start, leo)
        psm.update_map_end_offset(leo)

    def _replay_producer_state(self, start: int, end: int) -> None:
        psm = self.producer_state
        for idx in range(self._segment_for(start), len(self.segments)):
            seg = self.segments[idx]
            bp = seg.translate_offset(start) if seg.base_offset <= start else None
            pos = bp.position if bp is not None else 0
            for p, h in seg.batches(pos):
                if h.base_offset >= end:
                    return
                if h.last_offset < start:
                    continue
                if h.producer_id >= 0:
                    buf = seg.read_batch_bytes(p, h.batch_length + LOG_OVERHEAD) if h.is_control else None
                    psm.update(h, buf, 0)

    # ---- append ----
    def append_as_leader(self, buf, leader_epoch: int, *, now_ms: int | None = None) -> AppendInfo:
        with self.lock:
            if self.closed:
                raise DataError(f"log {self.dir} is closed")
            now = self._now_ms() if now_ms is None else now_ms
            cfg = self.config
            mv = memoryview(buf)
            total = len(mv)
            fast = self._validate_fast(mv, total, now, cfg)
            if fast is None:
                # some check failed (or a compacted topic): the full walk raises the precise error
                batches = self._validate(mv, total, now, cfg)
                count, max_ts, has_pid = 0, -1, False
                for _, h in batches:
                    count += h.last_offset_delta + 1
                    if h.max_timestamp > max_ts:
                        max_ts = h.max_timestamp
                    if h.producer_id >= 0:
                        has_pid = True
            else:
                batches, count, max_ts, has_pid = fast
            if not batches:
                return AppendInfo(-1, -1, -1, -1, self.log_start_offset, 0, False, 0)
            # producer state: duplicates answer with the original offsets, nothing is written
            psm = self.producer_state
            if has_pid:
                results = psm.check_batches([(h, mv, p) for p, h in batches])
                for dup in results:
                    if dup is not None:
                        return AppendInfo(dup.first_offset, dup.last_offset, dup.timestamp, -1,
                                          self.log_start_offset, dup.offset_delta + 1, True, 0)
            log_append = cfg["message.timestamp.type"] == "LogAppendTime"
            if log_append:
                max_ts = now
            first = self.log_end_offset
            seg = self.active_segment
            reason = seg.should_roll(messages_size=total, max_timestamp=max_ts, max_offset=first + count - 1,
                                     now_ms=now, segment_bytes=cfg["segment.bytes"], segment_ms=cfg["segment.ms"])
            if reason is not None:
                seg = self._roll(now)
            # assign offsets and stamp epoch (both outside the CRC), then LogAppendTime (re-CRC)
            next_offset = first
            patched = []
            patch = _PATCH.pack_into
            for p, h in batches:
                patch(mv, p, next_offset, h[1], leader_epoch)
                if log_append:
                    set_log_append_time(mv, p, h.batch_length + LOG_OVERHEAD, now)
                    h = h._replace(max_timestamp=now, attributes=h.attributes | TIMESTAMP_TYPE_MASK)
                # the header as written: new base offset and epoch (a NamedTuple _replace costs ~10x this)
                h = _new_tuple(BatchHeader, (next_offset, h[1], leader_epoch) + h[3:])
                patched.append((p, h))
                next_offset += h[6] + 1
            seg.append(mv, patched, total)
            if has_pid:
                for p, h in patched:
                    if h.producer_id >= 0:
                        psm.update(h, mv, p)
            else:
                psm.update_map_end_offset(next_offset)
            if leader_epoch >= 0 and leader_epoch != self.epoch_cache.latest_epoch:
                self.epoch_cache.assign(leader_epoch, first)
            self.high_watermark = next_offset
            self.unflushed_messages += count
            if self.unflushed_messages >= cfg["flush.messages"]:
                self.flush()
            return AppendInfo(first, next_offset - 1, max_ts, now if log_append else -1,
                              self.log_start_offset, count, False, total)

    def _validate_fast(self, mv, total: int, now: int, cfg):
        """The checks of _validate for the common case, in one tight loop.

        Returns (batches, record count, max timestamp, any producer id), or None as
        soon as anything is unusual (damage, a limit exceeded, a compacted topic):
        the caller then runs _validate, which raises the precise error. Accepts
        exactly what _validate accepts."""
        if total > cfg["segment.bytes"] or "compact" in cfg["cleanup.policy"]:
            return None
        max_message = cfg["max.message.bytes"]
        create_time = cfg["message.timestamp.type"] == "CreateTime"
        before_max = cfg["message.timestamp.before.max.ms"]
        lo = now - before_max if before_max < now else -(1 << 63)
        lo_bounded = before_max < now
        hi = now + cfg["message.timestamp.after.max.ms"]
        unpack = _BATCH_HEADER.unpack_from
        batches = []
        count = 0
        max_ts = -1
        has_pid = False
        pos = 0
        while pos < total:
            if total - pos < HEADER_SIZE:
                return None
            t = unpack(mv, pos)
            length = t[1]
            size = length + LOG_OVERHEAD
            if length < MIN_BATCH_LENGTH or t[3] != 2 or pos + size > total or size > max_message:
                return None
            attrs = t[5]
            n = t[12]
            if n <= 0 or t[6] + 1 != n or attrs & CONTROL_MASK:
                return None
            if t[9] >= 0:
                if t[11] < 0:
                    return None
                has_pid = True
            elif attrs & TRANSACTIONAL_MASK:
                return None
            if create_time and (t[8] > hi or (lo_bounded and not (
                    (n == 1 or attrs & TIMESTAMP_TYPE_MASK) and (t[8] >= lo or t[8] == NO_TIMESTAMP)))):
                return None  # out of range, or only the records can tell (see _check_timestamps)
            if crc32c(mv[pos + ATTRIBUTES_OFFSET:pos + size]) != t[4]:
                return None
            batches.append((pos, _new_tuple(BatchHeader, t)))
            count += n
            if t[8] > max_ts:
                max_ts = t[8]
            pos += size
        return batches, count, max_ts, has_pid

    def _validate(self, mv, total: int, now: int, cfg) -> list[tuple[int, BatchHeader]]:
        """Every check of the append, before anything is written."""
        max_message = cfg["max.message.bytes"]
        segment_bytes = cfg["segment.bytes"]
        if total > segment_bytes:
            raise RecordListTooLargeError(
                f"message batch size is {total} bytes in append to partition {self.topic}-{self.partition}, "
                f"which exceeds the maximum configured segment size of {segment_bytes}")
        create_time = cfg["message.timestamp.type"] == "CreateTime"
        before_max = cfg["message.timestamp.before.max.ms"]
        after_max = cfg["message.timestamp.after.max.ms"]
        lo = now - before_max if before_max < now else -(1 << 63)
        hi = now + after_max
        compacted = self.is_compacted
        batches = []
        try:
            for p, h in iter_headers(mv, 0, total, verify_crc=True):
                size = h.batch_length + LOG_OVERHEAD
                if size > max_message:
                    raise MessageTooLargeError(
                        f"the batch of {size} bytes at offset delta {p} is larger than max.message.bytes {max_message}")
                if h.record_count <= 0 or h.last_offset_delta + 1 != h.record_count:
                    raise InvalidRecordError(
                        f"batch with {h.record_count} records and last offset delta {h.last_offset_delta} "
                        f"has an inconsistent offset range")
                if h.is_control:
                    raise InvalidRecordError("clients may not write control batches")
                if h.producer_id >= 0 and h.base_sequence < 0:
                    raise InvalidRecordError(f"producer {h.producer_id} sent a batch without a base sequence")
                if h.is_transactional and h.producer_id < 0:
                    raise InvalidRecordError("transactional batch without a producer id")
                if create_time:
                    self._check_timestamps(mv, p, h, lo if before_max < now else None, hi)
                if compacted:
                    # the one check that needs the records themselves
                    for rec in RecordBatch(mv, p).records():
                        if rec.key is None:
                            raise InvalidRecordError(
                                f"compacted topic {self.topic} cannot accept a record without a key")
                batches.append((p, h))
        except InvalidMagicError as e:
            raise UnsupportedForMessageFormatError(f"only record batch format v2 is accepted: {e}") from None
        except CrcMismatchError as e:
            raise CorruptMessageError(f"record batch failed its CRC check: {e}") from None
        except RecordFormatError as e:
            raise CorruptMessageError(f"malformed record batch: {e}") from None
        return batches

    @staticmethod
    def _check_timestamps(mv, p: int, h: BatchHeader, lo: int | None, hi: int) -> None:
        """CreateTime window check of every record, as Kafka's LogValidator does per record
        (records without a timestamp, -1, are exempt), decoding records only when needed.

        The header's maxTimestamp is the largest record timestamp, so the upper bound
        is decided by it alone. The lower bound is not: a record's timestamp delta may
        be negative (Java's producer writes one when a later record carries an earlier
        explicit timestamp, as Kafka Streams does), so the first record is not the
        oldest. Records are decoded only when the window has a lower bound
        (message.timestamp.before.max.ms below now; unbounded by default) and the batch
        has several records of their own timestamps."""
        out = None
        if h.max_timestamp > hi:
            out = h.max_timestamp
        elif lo is not None:
            if h.record_count == 1 or h.attributes & TIMESTAMP_TYPE_MASK:
                if NO_TIMESTAMP != h.max_timestamp < lo:
                    out = h.max_timestamp
            elif NO_TIMESTAMP != h.max_timestamp < lo:
                out = h.max_timestamp  # even the newest record is too old
            else:
                for rec in RecordBatch(mv, p).records():
                    if NO_TIMESTAMP != rec.timestamp < lo or rec.timestamp > hi:
                        out = rec.timestamp
                        break
        if out is not None:
            raise InvalidTimestampError(
                f"timestamp {out} of a record is out of range: it must be within "
                f"[now - message.timestamp.before.max.ms, now + message.timestamp.after.max.ms] = "
                f"[{'-inf' if lo is None else lo}, {hi}]")

    # ---- roll ----
    def roll(self, now_ms: int | None = None) -> LogSegment:
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
            segs = [s for s in self.segments if s.base_offset < target and s.next_offset > self.recovery_point or s.unflushed]
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
             min_one_batch: bool = True) -> FetchSlice:
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
                res = seg.read(offset, max_bytes, max_pos, min_one_batch)
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
        with self.lock:
            return self.epoch_cache.end_offset_for(epoch, self.log_end_offset)

    # ---- deletion ----
    def delete_records(self, before_offset: int) -> int:
        with self.lock:
            if before_offset == -1:
                before_offset = self.high_watermark
            if before_offset > self.high_watermark or before_offset < 0:
                raise OffsetOutOfRangeError(
                    f"cannot move the log start offset of {self.topic}-{self.partition} to {before_offset}: "
                    f"the high watermark is {self.high_watermark}")
            if before_offset > self.log_start_offset:
                self._increment_log_start(before_offset)
                self._delete_segments(self._deletable(lambda s, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset),
                                      self._now_ms())
            return self.log_start_offset

    def _increment_log_start(self, offset: int) -> None:
        self.log_start_offset = offset
        self.epoch_cache.truncate_from_start(offset)
        self.producer_state.on_log_start_offset_incremented(offset)

    def _deletable(self, predicate) -> list[LogSegment]:
        out = []
        segs = self.segments
        leo = self.log_end_offset
        for i, seg in enumerate(segs):
            nxt = segs[i + 1] if i + 1 < len(segs) else None
            upper = nxt.base_offset if nxt is not None else leo
            if nxt is None and seg.size == 0:
                break
            if self.high_watermark >= upper and predicate(seg, nxt):
                out.append(seg)
            else:
                break
        return out

    def _delete_segments(self, doomed: list[LogSegment], now_ms: int) -> int:
        if not doomed:
            return 0
        if len(doomed) == len(self.segments):
            self._roll(now_ms)  # always keep an active segment
        delay = self.config["file.delete.delay.ms"]
        for seg in doomed:
            idx = self.segments.index(seg)
            del self.segments[idx]
            del self._bases[idx]
            seg.change_suffix("", DELETED_SUFFIX)
            self.pending_deletes.append((now_ms + delay, seg))
        first = self.segments[0].base_offset
        if first > self.log_start_offset:
            self._increment_log_start(first)
        self.producer_state.delete_snapshots_below(first)
        if delay == 0:
            self.delete_expired_files(now_ms)
        return len(doomed)

    def run_retention(self, now_ms: int | None = None) -> int:
        """Kafka's deleteOldSegments: log-start breach always; time and size for `delete` policy."""
        with self.lock:
            now = self._now_ms() if now_ms is None else now_ms
            n = self._delete_segments(
                self._deletable(lambda s, nxt: nxt is not None and nxt.base_offset <= self.log_start_offset), now)
            if "delete" not in self.config["cleanup.policy"]:
                return n
            retention_ms = self.config["retention.ms"]
            if retention_ms >= 0:
                n += self._delete_segments(
                    self._deletable(lambda s, nxt: now - s.largest_timestamp > retention_ms), now)
            retention_bytes = self.config["retention.bytes"]
            if retention_bytes >= 0:
                diff = [self.size_bytes - retention_bytes]

                def over(s, nxt):
                    if diff[0] - s.size >= 0:
                        diff[0] -= s.size
                        return True
                    return False
                n += self._delete_segments(self._deletable(over), now)
            return n

    def delete_expired_files(self, now_ms: int | None = None) -> int:
        with self.lock:
            now = self._now_ms() if now_ms is None else now_ms
            due = [(t, s) for t, s in self.pending_deletes if t <= now]
            self.pending_deletes = [(t, s) for t, s in self.pending_deletes if t > now]
        for _, s in due:
            s.delete_files()
        return len(due)

    # ---- lifecycle ----
    def take_snapshot(self) -> None:
        with self.lock:
            self.producer_state.update_map_end_offset(self.log_end_offset)
            self.producer_state.take_snapshot(self.log_end_offset)

    def close(self) -> None:
        with self.lock:
            if self.closed:
                return
            for seg in self.segments:
                if seg is self.active_segment:
                    seg.on_become_inactive()
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
