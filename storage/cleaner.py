"""Kafka's log cleaner: compaction of `cleanup.policy=compact` partitions.

One cleaning of a log (Cleaner.clean):
1. pick the dirty section (compaction_rules.cleanable_section);
2. build the key -> latest offset map over it (OffsetMap, bounded memory); when
   the map fills, the section is cut at that batch and the rest waits for the
   next pass of the same cleaning;
3. rewrite every segment below the map's end, in groups of at most
   segment.bytes, into `<base>.log.cleaned` (+ indexes), applying
   compaction_rules.filter_batch to each batch;
4. swap each group in (SWAP_STEPS; `hook(step)` is called after each, so tests
   can stop the cleaner there as a crash would):
     cleaned-written   .cleaned files complete and fsynced, `<base>.swap.end` written
     indexes-swapped   index files renamed .cleaned -> .swap
     log-swapped       log renamed .cleaned -> .swap: the commit point
     old-deleted       old segments out of the log and renamed to .deleted
     swap-renamed      new segment renamed .swap -> final names
     hint-removed      `<base>.swap.end` removed
   A crash before `log-swapped` leaves .cleaned files, which recovery deletes:
   the old segments stand. After it, recovery finishes the swap (Log._load):
   the old segments in [base, end) go and the .swap becomes the segment.
5. update `cleaner-offset-checkpoint` in the log dir (atomic rename).

The Log's lock is held only for the swap itself; reading old segments and
writing the cleaned ones happen beside produce and fetch (closed segments are
immutable). Statistics are logged per cleaning like Kafka's cleaner lines.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable, Iterator

from pylog.core.errors import DataError
from pylog.core.records.header import CONTROL_MASK, LOG_OVERHEAD, parse_header
from pylog.storage.checkpoint import CLEANER_OFFSET_CHECKPOINT, atomic_write, read_offset_checkpoint_or_empty, \
    write_offset_checkpoint
from pylog.storage.aborted_ranges import AbortedRanges, MarkerTracker
from pylog.storage.compaction_rules import (
    CleanableSection,
    FilteredBatch,
    SegmentStat,
    batch_records_data,
    cleanable_section,
    empty_batch,
    filter_batch_many,
    filter_batch_survivors,
    filter_marker,
    group_segments,
    marker_type,
    should_clean,
)
from pylog.storage.offset_map import OffsetMap, UnboundedOffsetMap
from pylog.storage.scan import read_batches
from pylog.storage.segment import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    SWAP_END_SUFFIX,
    SWAP_SUFFIX,
    LogSegment,
    remove_segment_files,
    segment_path,
)

log = logging.getLogger(__name__)

SWAP_STEPS = ("cleaned-written", "indexes-swapped", "log-swapped", "old-deleted", "swap-renamed", "hint-removed")
READ_CHUNK = 1 << 20
WRITE_CHUNK = 1 << 20


class CleanerAborted(Exception):
    """The log changed under the cleaner (segments deleted, log closed): nothing was swapped."""


@dataclass
class CleanerStats:
    """Kafka's CleanerStats, per cleaning of one log."""

    log: str = ""
    first_dirty: int = 0
    end_offset: int = 0
    passes: int = 0
    map_bytes_read: int = 0
    map_records: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_read: int = 0
    records_written: int = 0
    batches_copied: int = 0
    batches_rebuilt: int = 0
    batches_removed: int = 0
    tombstones_removed: int = 0
    segments_read: int = 0
    segments_written: int = 0
    buffer_utilization: float = 0.0
    map_memory_bytes: int = 0
    map_seconds: float = 0.0
    clean_seconds: float = 0.0
    seconds: float = 0.0
    dry_run: bool = False

    @property
    def records_removed(self) -> int:
        return self.records_read - self.records_written

    @property
    def mb_per_sec(self) -> float:
        return self.bytes_read / 1e6 / self.seconds if self.seconds > 0 else 0.0

    def to_dict(self) -> dict:
        d = asdict(self)
        d["records_removed"] = self.records_removed
        d["mb_per_sec"] = round(self.mb_per_sec, 2)
        for k in ("map_seconds", "clean_seconds", "seconds"):
            d[k] = round(d[k], 4)
        d["buffer_utilization"] = round(d["buffer_utilization"], 4)
        return d

    def report(self, thread: int = 0) -> str:
        """Kafka-style multi-line cleaner log message."""
        mb = lambda n: f"{n / 1048576:.1f} MB"  # noqa: E731
        pct = lambda a, b: 100.0 * a / b if b else 0.0  # noqa: E731
        secs = max(self.seconds, 1e-9)
        return (
            f"Log cleaner thread {thread} cleaned log {self.log} (dirty section = [{self.first_dirty}, {self.end_offset}])\n"
            f"\t{mb(self.bytes_read)} of log processed in {self.seconds:.1f} seconds "
            f"({self.bytes_read / 1048576 / secs:.1f} MB/sec).\n"
            f"\tIndexed {mb(self.map_bytes_read)} in {self.map_seconds:.1f} seconds "
            f"({self.map_bytes_read / 1048576 / max(self.map_seconds, 1e-9):.1f} Mb/sec, "
            f"{pct(self.map_seconds, secs):.1f}% of total time)\n"
            f"\tBuffer utilization: {100 * self.buffer_utilization:.1f}%\n"
            f"\tCleaned {mb(self.bytes_read)} in {self.clean_seconds:.1f} seconds "
            f"({self.bytes_read / 1048576 / max(self.clean_seconds, 1e-9):.1f} Mb/sec, "
            f"{pct(self.clean_seconds, secs):.1f}% of total time)\n"
            f"\tStart size: {mb(self.bytes_read)} ({self.records_read:,} messages)\n"
            f"\tEnd size: {mb(self.bytes_written)} ({self.records_written:,} messages)\n"
            f"\t{pct(self.bytes_read - self.bytes_written, self.bytes_read):.1f}% size reduction "
            f"({pct(self.records_removed, self.records_read):.1f}% fewer messages)"
        )


def segment_batches(seg: LogSegment, start: int = 0, end: int | None = None,
                    chunk: int = READ_CHUNK) -> Iterator[tuple[bytes, int, object]]:
    """(buffer, position in buffer, header) of each batch of seg from byte `start`,
    read in big chunks; every batch's CRC is checked (storage.scan.read_batches)."""
    return read_batches(seg.fd, start, seg.size if end is None else end, seg.log_path, chunk)


def segment_stats(segments: list[LogSegment]) -> list[SegmentStat]:
    return [SegmentStat(s.base_offset, s.size, s.largest_timestamp,
                        s.rolling_based_timestamp if s.rolling_based_timestamp is not None else -1)
            for s in segments]


def log_section(lg, checkpoint: int | None, now_ms: int) -> CleanableSection:
    """The dirty section of a Log now (takes its lock briefly)."""
    cfg = lg.config
    with lg.lock:
        segs = list(lg.segments)
        start = lg.log_start_offset
        unstable = lg.producer_state.first_unstable_offset()
    return cleanable_section(segment_stats(segs), checkpoint=checkpoint, log_start_offset=start, now_ms=now_ms,
                             min_compaction_lag_ms=cfg["min.compaction.lag.ms"],
                             max_compaction_lag_ms=cfg["max.compaction.lag.ms"], first_unstable_offset=unstable)


# ---------------------------------------------------------------- the cleaner checkpoint
_checkpoint_locks: dict[str, threading.Lock] = {}
_checkpoint_guard = threading.Lock()


def _checkpoint_lock(path: Path) -> threading.Lock:
    with _checkpoint_guard:
        return _checkpoint_locks.setdefault(str(path), threading.Lock())


def read_cleaner_checkpoint(log_dir: Path) -> dict[tuple[str, int], int]:
    try:
        return read_offset_checkpoint_or_empty(Path(log_dir) / CLEANER_OFFSET_CHECKPOINT)
    except DataError as e:
        log.warning("%s; cleaning from the log start offsets", e)
        return {}


def update_cleaner_checkpoint(log_dir: Path, topic: str, partition: int, offset: int) -> None:
    """Read-modify-write of `cleaner-offset-checkpoint` (temp file + rename)."""
    path = Path(log_dir) / CLEANER_OFFSET_CHECKPOINT
    with _checkpoint_lock(path):
        entries = read_cleaner_checkpoint(log_dir)
        entries[(topic, partition)] = offset
        write_offset_checkpoint(path, entries)


# ---------------------------------------------------------------- one cleaning
@dataclass
class CleanResult:
    stats: CleanerStats
    section: CleanableSection
    cleaned: bool  # False: nothing to clean
    checkpoint: int  # the new cleaner checkpoint (end of the cleaned dirty section)


class Cleaner:
    """Cleans one log at a time with its own offset map (one per cleaner thread)."""

    def __init__(self, offset_map: OffsetMap | UnboundedOffsetMap | Callable[[], OffsetMap], *,
                 clock: Callable[[], float] = time.time,
                 hook: Callable[[str], None] | None = None, progress: Callable[[int], None] | None = None,
                 fsync: bool = True, thread_id: int = 0, cancel: threading.Event | None = None):
        # a callable is a factory: the (large) map is allocated on the first cleaning
        self._map = None if callable(offset_map) else offset_map
        self._map_factory = offset_map if callable(offset_map) else None
        self.cancel = cancel
        self._clock = clock
        self.hook = hook or (lambda step: None)
        self.progress = progress or (lambda n: None)
        self._fsync = fsync
        self.thread_id = thread_id
        self._mapped_from: int | None = None  # first batch of the current map (see _build_map)

    @property
    def map(self):
        if self._map is None:
            self._map = self._map_factory()
        return self._map

    def _check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise CleanerAborted("the cleaner is shutting down")

    def clean(self, lg, checkpoint: int | None = None, *, now_ms: int | None = None, dry_run: bool = False,
              force: bool = False) -> CleanResult:
        """Clean `lg` from `checkpoint` (None: from its log start). Unless `force`,
        only when should_clean() says the log is dirty enough."""
        t0 = time.perf_counter()
        now = int(self._clock() * 1000) if now_ms is None else now_ms
        cfg = lg.config
        section = log_section(lg, checkpoint, now)
        stats = CleanerStats(log=f"{lg.topic}-{lg.partition}", first_dirty=section.first_dirty,
                             end_offset=section.first_dirty, dry_run=dry_run)
        if section.first_uncleanable <= section.first_dirty or \
                not (force or should_clean(section, cfg["min.cleanable.dirty.ratio"])):
            return CleanResult(stats, section, False, section.first_dirty)
        m = UnboundedOffsetMap() if dry_run else self.map
        if not dry_run:
            self._resnapshot(lg)
        if hasattr(m, "reset"):
            m.reset()  # each cleaning starts with the (faster) dict form of the map
        first_dirty = section.first_dirty
        upper = section.first_uncleanable
        while first_dirty < upper:
            m.clear()
            t1 = time.perf_counter()
            end = self._build_map(lg, m, first_dirty, upper, stats)
            stats.buffer_utilization = max(stats.buffer_utilization, m.utilization)
            t2 = time.perf_counter()
            stats.map_seconds += t2 - t1
            mapped_from = end if self._mapped_from is None else self._mapped_from
            self._clean_segments(lg, m, mapped_from, end, now, stats, dry_run)
            stats.clean_seconds += time.perf_counter() - t2
            stats.passes += 1
            stats.end_offset = end
            first_dirty = end
        stats.map_memory_bytes = max(m.memory_bytes, getattr(m, "peak_bytes", 0))
        if not dry_run:
            self._resnapshot(lg)
        stats.seconds = time.perf_counter() - t0
        return CleanResult(stats, section, True, stats.end_offset)

    @staticmethod
    def _resnapshot(lg) -> None:
        """Producer snapshots inside the cleaned range may describe batches the cleaning
        removes; one taken at the log end holds every producer's last batch, which
        cleaning keeps, so it matches the old and the new log alike. Done before the
        first swap (a crash then finds only that one) and again at the end."""
        with lg.lock:
            if not lg.closed:
                lg.take_snapshot()
                lg.producer_state.delete_snapshots_below(lg.log_end_offset)

    # ---- pass 1: the offset map ----
    def _build_map(self, lg, m, start: int, upper: int, stats: CleanerStats) -> int:
        """Put the keys of the batches from `start` on into m until it is full
        (or `upper`); returns where the map ends. Every batch from the one at
        self._mapped_from up to that end went into the map."""
        self._mapped_from = None
        aborted = AbortedRanges.of_log(lg, start, upper)
        with lg.lock:
            segs = list(lg.segments)
        for i, seg in enumerate(segs):
            if seg.base_offset >= upper:
                break
            if i + 1 < len(segs) and segs[i + 1].base_offset <= start:
                continue
            pos = 0
            if seg.base_offset < start:
                bp = seg.translate_offset(start)
                if bp is None:
                    continue
                pos = bp.position
            self._check_cancel()
            for buf, off, h in segment_batches(seg, pos):
                if h.base_offset >= upper:
                    return upper
                if h.last_offset < start:
                    continue
                if self._mapped_from is None:
                    self._mapped_from = h.base_offset
                stats.map_bytes_read += h.batch_length + LOG_OVERHEAD
                if h.attributes & 0x20 or h.record_count == 0:  # control or empty batches hold no keys
                    continue
                if aborted and aborted.is_aborted(h):
                    continue  # an aborted value must not shadow the committed one before it
                data = batch_records_data(memoryview(buf)[off:off + h.batch_length + LOG_OVERHEAD], h)
                put = m.put_records(data, h.base_offset)
                if put is None:
                    if m.size:
                        m.overflow()  # this pass ends here; the next one starts at this batch
                        return h.base_offset
                    if getattr(m, "uses_dict", False):
                        m.overflow()
                        m.clear()  # an empty dict cannot take it: on to the arrays, which hold more
                    put = m.put_records(data, h.base_offset)
                    if put is None:
                        raise DataError(
                            f"log.cleaner.dedupe.buffer.size is too small to hold the {m.wanted} keys of the "
                            f"batch at offset {h.base_offset} of {lg.topic}-{lg.partition}")
                stats.map_records += put
            self.progress(seg.size)
        return upper

    # ---- pass 2: rewrite ----
    def _clean_segments(self, lg, m, start: int, end: int, now: int, stats: CleanerStats, dry_run: bool) -> None:
        """Rewrite the segments below `end` with the map that holds every batch
        from the one at offset `start` up to `end`."""
        cfg = lg.config
        with lg.lock:
            segs = [s for s in lg.segments[:-1] if s.base_offset < end]
            producers = {e.producer_id: (e.last_data_offset, e.producer_epoch) for e in lg.producer_state}
        sizes = [(s.base_offset, s.size, max(s.offset_index.entries * 8, s.time_index.entries * 12)) for s in segs]
        groups = group_segments(sizes, cfg["segment.bytes"], cfg["segment.index.bytes"])
        # Batches wholly inside the mapped range are decided by the map's offsets
        # (compaction_rules.filter_batch_survivors), the others by key lookups.
        survivors = m.sorted_offsets() if hasattr(m, "sorted_offsets") else None
        mapped = (start, end, survivors) if survivors is not None else None
        for g in groups:
            self._clean_group(lg, [segs[i] for i in g], m, now, stats, dry_run, producers, mapped)

    def _clean_group(self, lg, group: list[LogSegment], m, now: int, stats: CleanerStats, dry_run: bool,
                     producers: dict[int, int], mapped: tuple | None = None) -> None:
        cfg = lg.config
        retention = cfg["delete.retention.ms"]
        latest_many = m.get_many
        mapped_from, mapped_to, survivors = mapped if mapped is not None else (0, -1, None)
        base = group[0].base_offset
        txns = MarkerTracker(lg.aborted_transactions(base, group[-1].next_offset))
        new = None
        if not dry_run:
            remove_segment_files(lg.dir, base, CLEANED_SUFFIX)
            new = LogSegment(lg.dir, base, index_interval_bytes=cfg["index.interval.bytes"],
                             max_index_size=cfg["segment.index.bytes"], suffix=CLEANED_SUFFIX, clock=lg.clock)
        out = bytearray()
        pending: list = []
        try:
            for seg in group:
                self._check_cancel()
                stats.segments_read += 1
                for buf, off, h in segment_batches(seg):
                    size = h.batch_length + LOG_OVERHEAD
                    stats.bytes_read += size
                    stats.records_read += h.record_count
                    raw = memoryview(buf)[off:off + size]
                    # Kafka keeps (emptied) a live producer's last data batch, or its last marker
                    # when its state holds no data batch (the epoch it fences with)
                    last, epoch = producers.get(h.producer_id, (-2, -2)) if h.producer_id >= 0 else (-2, -2)
                    if h.attributes & CONTROL_MASK:
                        r = filter_marker(raw, h, txns.on_marker(h, marker_type(raw, h)), now, retention,
                                          last == -1 and epoch == h.producer_epoch)
                    else:
                        retain_empty = last == h.last_offset
                        if txns.on_data(h):
                            r = FilteredBatch(empty_batch(h) if retain_empty else None, 0, h.record_count, 0,
                                              retain_empty)
                        elif mapped_from <= h.base_offset and h.base_offset + h.last_offset_delta < mapped_to:
                            r = filter_batch_survivors(raw, h, survivors, now, retention, retain_empty)
                        else:
                            r = filter_batch_many(raw, h, latest_many, now, retention, retain_empty)
                    stats.tombstones_removed += r.tombstones_removed
                    stats.records_written += r.kept
                    if r.data is None:
                        stats.batches_removed += 1
                        continue
                    if r.rebuilt:
                        stats.batches_rebuilt += 1
                        nh = parse_header(r.data, 0)
                    else:
                        stats.batches_copied += 1
                        nh = h
                    pending.append((len(out), nh))
                    out += r.data
                    if len(out) >= WRITE_CHUNK:
                        stats.bytes_written += len(out)
                        if new is not None:
                            new.append(out, pending, len(out))
                        out = bytearray()
                        pending = []
                self.progress(seg.size)
            if out:
                stats.bytes_written += len(out)
                if new is not None:
                    new.append(out, pending, len(out))
            if new is None:
                return
            for t in txns.kept_aborts:
                new.txn_index.append(t)  # what is left of an aborted transaction stays marked
            new.on_become_inactive()
            if self._fsync:
                new.flush()
            # the end of the offsets this group replaces, for recovery after the commit point
            group_end = group[-1].next_offset
            atomic_write(segment_path(lg.dir, base, SWAP_END_SUFFIX), f"{group_end}\n", fsync=self._fsync)
        except BaseException:
            if new is not None:
                new.delete_files()
                segment_path(lg.dir, base, SWAP_END_SUFFIX).unlink(missing_ok=True)
            raise
        stats.segments_written += 1
        self.hook("cleaned-written")
        self._swap(lg, group, new)

    def _swap(self, lg, group: list[LogSegment], new: LogSegment) -> None:
        hook = self.hook
        base = new.base_offset
        with lg.lock:
            segs = lg.segments
            try:
                idx = next(i for i, s in enumerate(segs) if s is group[0])
            except StopIteration:
                idx = -1
            if lg.closed or idx < 0 or segs[idx:idx + len(group)] != group or idx + len(group) >= len(segs):
                new.delete_files()
                segment_path(lg.dir, base, SWAP_END_SUFFIX).unlink(missing_ok=True)
                raise CleanerAborted(f"segments of {lg.topic}-{lg.partition} changed during cleaning")
            # indexes first, the log last: the log's rename is the commit point
            for index in (new.offset_index, new.time_index, new.txn_index):
                index.rename(index.path.with_name(index.path.name[: -len(CLEANED_SUFFIX)] + SWAP_SUFFIX))
            hook("indexes-swapped")
            swap_log = new.log_path.with_name(new.log_path.name[: -len(CLEANED_SUFFIX)] + SWAP_SUFFIX)
            os.replace(new.log_path, swap_log)
            new.log_path = swap_log
            new.suffix = SWAP_SUFFIX
            if self._fsync:
                from pylog.storage.checkpoint import fsync_dir
                fsync_dir(lg.dir)
            hook("log-swapped")
            lg.replace_segments(idx, len(group), new)
            now = int(lg.clock() * 1000)
            delay = lg.config["file.delete.delay.ms"]
            for old in group:
                old.change_suffix("", DELETED_SUFFIX)
                lg.pending_deletes.append((now + delay, old))
            hook("old-deleted")
            new.change_suffix(SWAP_SUFFIX, "")
            hook("swap-renamed")
            segment_path(lg.dir, base, SWAP_END_SUFFIX).unlink(missing_ok=True)
            hook("hint-removed")
        if delay == 0:
            lg.delete_expired_files(now)
