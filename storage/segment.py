"""One log segment: the `.log` file of record batches and its three indexes.

File names are the segment's base offset, zero-padded to 20 digits
(`00000000000000001234.log`, `.index`, `.timeindex`, `.txnindex`), as Kafka
names them. The `.log` holds v2 record batches back to back exactly as
written; every position in an index is a batch boundary.

The segment never decodes records: appends write the caller's buffer with a
single write and index it from the batch headers the caller already parsed;
reads hand back (position, length) slices for sendfile; recovery walks batch
headers with their CRCs in big chunks.
"""
from __future__ import annotations

import mmap
import os
import struct
import time
from pathlib import Path
from typing import Callable, Iterator, NamedTuple

from pylog.core.records.errors import RecordFormatError, TruncatedBatchError
from pylog.core.records.header import (
    BATCH_LENGTH_OFFSET,
    HEADER_SIZE,
    LOCATE_STRUCT,
    LOG_OVERHEAD,
    BatchHeader,
    iter_headers,
    parse_header,
)
from pylog.storage import faults
from pylog.storage.index_file import CorruptIndexError
from pylog.storage.scan import file_batches
from pylog.storage.segment_indexes import (  # noqa: F401 - the suffixes are re-exported
    INDEX_SUFFIX,
    INDEX_SUFFIXES,
    TIME_INDEX_SUFFIX,
    TXN_INDEX_SUFFIX,
    SegmentIndexes,
)
from pylog.storage.time_index import NO_TIMESTAMP

LOG_SUFFIX = ".log"
SNAPSHOT_SUFFIX = ".snapshot"
DELETED_SUFFIX = ".deleted"
CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
SWAP_END_SUFFIX = ".swap.end"  # the cleaner's note of the offsets a swap replaces (see Log._complete_swap)

INT_MAX = 0x7FFFFFFF
HEADER_WALK_CHUNK = 64 << 10
_PREFIX = LOCATE_STRUCT
_PREFIX_SIZE = _PREFIX.size  # 27
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


def filename_prefix(offset: int) -> str:
    """The 20-digit zero-padded file name stem of a base offset, as Kafka names segment files."""
    return f"{offset:020d}"


def segment_path(dir: Path, base_offset: int, suffix: str) -> Path:
    """The path of the segment file with this base offset and suffix."""
    return dir / (filename_prefix(base_offset) + suffix)


def remove_segment_files(dir: Path, base_offset: int, suffix: str = "") -> None:
    """Delete the log and index files of one segment (those with `suffix` appended), if present."""
    for kind in (LOG_SUFFIX, *INDEX_SUFFIXES):
        segment_path(dir, base_offset, kind + suffix).unlink(missing_ok=True)


class BatchPosition(NamedTuple):
    """Where a batch lies in a segment file: its base and last offset, position and size."""
    base_offset: int
    last_offset: int
    position: int
    size: int


class RecoveryResult(NamedTuple):
    """What recovering a segment did: bytes cut, bytes kept, the next offset, and why the tail was cut."""
    truncated_bytes: int
    valid_bytes: int
    next_offset: int
    reason: str | None  # why the tail was cut (None when nothing was)


class LogSegment(SegmentIndexes):
    """One segment: the `.log` file of v2 batches and its offset, time and transaction indexes. Appends
    write whole validated batches with one write; reads hand back (position, length) slices for sendfile;
    recovery rebuilds the indexes from the batches."""
    def __init__(
        self,
        dir: str | os.PathLike,
        base_offset: int,
        *,
        index_interval_bytes: int = 4096,
        max_index_size: int = 10 * 1024 * 1024,
        roll_jitter_ms: int = 0,
        suffix: str = "",
        clock: Callable[[], float] = time.time,
    ):
        self.dir, self.base_offset, self.suffix, self._clock = Path(dir), base_offset, suffix, clock
        # the index and roll settings (Kafka's segment.index.bytes, index.interval.bytes, segment.jitter.ms)
        self.index_interval_bytes, self.max_index_size = index_interval_bytes, max_index_size
        self.roll_jitter_ms = roll_jitter_ms
        self.log_path = segment_path(self.dir, base_offset, LOG_SUFFIX + suffix)
        self.fd = os.open(self.log_path, os.O_RDWR | os.O_CREAT, 0o644)
        self.size = os.fstat(self.fd).st_size
        self.created_ms = int(clock() * 1000)
        self.bytes_since_last_index_entry = 0
        self._max_ts = NO_TIMESTAMP
        self.offset_of_max_timestamp = base_offset
        self.rolling_based_timestamp: int | None = None  # first batch's max timestamp
        # the offset after the segment's last batch: a plain attribute, read on every append
        # (a deferred tail reads it when first asked: _DeferredTail)
        self.next_offset: int = base_offset
        self.unflushed = False

    def defer_tail(self) -> None:
        """An older segment loaded on a clean start: its next offset and max timestamp are read from its
        indexes when first asked (Kafka opens such indexes lazily)."""
        del self.next_offset
        self.__class__ = _DeferredTail

    @property
    def max_timestamp_so_far(self) -> int:
        """The largest batch max timestamp in the segment (-1: none)."""
        return self._max_ts

    @max_timestamp_so_far.setter
    def max_timestamp_so_far(self, value: int) -> None:
        self._max_ts = value

    # ---- loading ----
    def sanity_check(self) -> None:
        """Raise CorruptIndexError when an index cannot be trusted (Kafka rebuilds it then)."""
        if not self.has_index_files():
            raise CorruptIndexError(f"missing index for segment {self.log_path.name}")
        self.offset_index.sanity_check(self.size)
        self.time_index.sanity_check()
        self.txn_index.sanity_check()

    def load_tail(self) -> None:
        """After opening a clean segment: find its next offset and max timestamp by
        scanning from the newest index entries (not the whole file)."""
        ts, ts_off = self.time_index.last_entry
        self._max_ts, self.offset_of_max_timestamp = ts, ts_off
        # Index entries are written after counting their batch, so everything the
        # indexes do not cover starts at the last offset-index entry.
        start = self.offset_index.last_entry[1] if self.offset_index.entries else 0
        next_offset = self.base_offset
        for pos, h in self._walk(start):
            next_offset = h.next_offset
            if h.max_timestamp > self._max_ts:
                self._max_ts, self.offset_of_max_timestamp = h.max_timestamp, h.last_offset
        if next_offset == self.base_offset and start > 0:
            next_offset = self.offset_index.last_entry[0] + 1
        self.next_offset = next_offset
        self._load_rolling_timestamp()

    def _load_rolling_timestamp(self) -> None:
        if self.size >= HEADER_SIZE:
            self.rolling_based_timestamp = parse_header(os.pread(self.fd, HEADER_SIZE, 0)).max_timestamp
        else:
            self.rolling_based_timestamp = None

    def _walk(self, start: int = 0, end: int | None = None) -> Iterator[tuple[int, BatchHeader]]:
        """Headers of the batches in [start, end) of the file (no CRC); stops quietly at a torn or bad batch."""
        for _, _, pos, h in file_batches(self.fd, start, self.size if end is None else end, self.log_path,
                                         verify_crc=False, chunk=HEADER_WALK_CHUNK, headers_only=True, quiet=True):
            yield pos, h

    @property
    def _path_str(self) -> str:
        return str(self.log_path)

    # ---- appending ----
    def append(self, buf, batches: list[tuple[int, BatchHeader]], total_size: int) -> None:
        """Write buf[:total_size] (already patched batches) at the end of the file and
        index it: one write, index entries every index.interval.bytes."""
        start = self.size
        view = memoryview(buf)[:total_size]
        try:
            written = faults.pwrite(self.fd, view, start, self.log_path)
            while written < total_size:
                written += faults.pwrite(self.fd, view[written:], start + written, self.log_path)
        except OSError as e:
            # a write that failed half way (ENOSPC, EIO): cut the file back to the last
            # whole batch before anything else is appended, so nothing torn is ever served
            try:
                os.ftruncate(self.fd, start)
            except OSError as cut:
                raise OSError(cut.errno, f"{e.strerror}; cutting back the torn write failed too: {cut.strerror}",
                              self._path_str) from e
            raise
        if start == 0 and batches:
            self.rolling_based_timestamp = batches[0][1].max_timestamp
        self.index_appended(batches, start)
        self.size = start + total_size
        self.unflushed = True

    def can_hold(self, last_offset: int) -> bool:
        """True when last_offset fits the segment's int32 relative offsets."""
        return 0 <= last_offset - self.base_offset <= INT_MAX

    def should_roll(self, messages_size: int, max_timestamp: int, max_offset: int, now_ms: int,
                    segment_bytes: int, segment_ms: int) -> str | None:
        """Kafka's four roll conditions; returns the reason or None. (Positional: once per append.)"""
        size = self.size
        if size > segment_bytes - messages_size:
            return "size"
        if size > 0:
            t = self.rolling_based_timestamp
            waited = (max_timestamp - t) if (t is not None and t >= 0) else (now_ms - self.created_ms)
            if waited > segment_ms - self.roll_jitter_ms:
                return "time"
        if self.offset_index.is_full or self.time_index.is_full:
            return "index full"
        if not 0 <= max_offset - self.base_offset <= INT_MAX:  # can_hold
            return "offset overflow"
        return None

    def on_become_inactive(self) -> None:
        """The segment stops being active: final time-index entry, trim index files."""
        self.time_index.maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp, skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()

    # ---- reading ----
    def translate_offset(self, offset: int, starting_position: int = 0) -> BatchPosition | None:
        """The first batch at or after `starting_position` whose last offset >= offset."""
        pos = max(self.offset_index.lookup(offset)[1], starting_position)
        end = self.size
        fd = self.fd
        unpack = _PREFIX.unpack
        while pos + _PREFIX_SIZE <= end:
            base, length, _, _, _, _, delta = unpack(os.pread(fd, _PREFIX_SIZE, pos))
            size = length + LOG_OVERHEAD
            if base + delta >= offset:
                return BatchPosition(base, base + delta, pos, size)
            pos += size
        return None

    def read(self, offset: int, max_size: int, max_position: int | None = None,
             min_one_batch: bool = True, partial_tail: bool = False) -> tuple[int, int, int] | None:
        """(position, length, first batch base offset) of the bytes from the batch holding `offset`, at
        most max_size bytes (but at least the first batch when min_one_batch) and not past max_position.
        Whole batches only, unless partial_tail: then Kafka's LogSegment.read, a byte slice that may end
        in a partial batch (and nothing when the first batch alone is over budget without
        min_one_batch, as Kafka answers a v3+ Fetch whose first entry is incomplete). None when the
        offset is beyond this segment."""
        first = self.translate_offset(offset)
        if first is None:
            return None
        limit = self.size if max_position is None else min(max_position, self.size)
        start = first.position
        if start >= limit:
            return start, 0, first.base_offset
        if first.size > max_size:
            length = first.size if (min_one_batch and start + first.size <= limit) else 0
            return start, length, first.base_offset
        budget_end = min(limit, start + max_size)
        if partial_tail:
            return start, budget_end - start, first.base_offset
        pos = start + first.size
        fd = self.fd
        while pos + LOG_OVERHEAD <= budget_end:
            length = _I32.unpack(os.pread(fd, 4, pos + BATCH_LENGTH_OFFSET))[0]
            nxt = pos + length + LOG_OVERHEAD
            if nxt > budget_end:
                break
            pos = nxt
        return start, pos - start, first.base_offset

    def find_offset_by_timestamp(self, timestamp: int, starting_offset: int) -> tuple[int, int, int] | None:
        """First batch (max timestamp >= target) at or after starting_offset:
        (base offset, max timestamp, position). Record-level refinement is the caller's."""
        _, ts_offset = self.time_index.lookup_below(timestamp)
        pos = self.offset_index.lookup(max(ts_offset, starting_offset))[1]
        for p, h in self._walk(pos):
            if h.last_offset >= starting_offset and h.max_timestamp >= timestamp:
                return h.base_offset, h.max_timestamp, p
        return None

    def read_batch_bytes(self, position: int, size: int) -> bytes:
        """The `size` bytes at `position` of the log file."""
        return os.pread(self.fd, size, position)

    def batches(self, start: int = 0) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of every batch from byte `start`, read header by header (no CRC)."""
        return self._walk(start)

    @property
    def largest_timestamp(self) -> int:
        """The max timestamp of the segment's batches, or the file's mtime when none has one (retention.ms)."""
        if self.max_timestamp_so_far >= 0:
            return self.max_timestamp_so_far
        return self.last_modified_ms

    @property
    def last_modified_ms(self) -> int:
        """The .log file's mtime in milliseconds."""
        return int(os.fstat(self.fd).st_mtime * 1000)

    # ---- recovery ----
    def recover(self, on_batch: Callable[[BatchHeader], None] | None = None, *,
                max_batch_size: int | None = None, contiguous: bool = True,
                next_base: int | None = None) -> RecoveryResult:
        """Rebuild the indexes from the log, validating every batch (structure, CRC,
        offsets); cut the file at the first bad or torn batch. `on_batch` sees each
        valid batch in order (producer state, epoch cache). Without `contiguous` offsets may
        skip but not go back, nor reach `next_base` (the next segment's base offset)."""
        self.offset_index.reset()
        self.time_index.reset()
        self.txn_index.reset()
        self.max_timestamp_so_far = NO_TIMESTAMP
        self.offset_of_max_timestamp = self.base_offset
        file_size = os.fstat(self.fd).st_size
        last_index_entry = 0
        expected = self.base_offset
        reason = None
        max_ts = NO_TIMESTAMP
        max_ts_off = self.base_offset
        interval = self.index_interval_bytes
        oi, ti = self.offset_index, self.time_index
        seg_base = self.base_offset
        ti_last = ti.last_timestamp
        # One read-only mapping of the whole file: no copy into a buffer, CRC-32C straight
        # over the page cache; the batch walker checks each batch's structure and CRC.
        mm = mmap.mmap(self.fd, file_size, prot=mmap.PROT_READ) if file_size else None
        walker = iter_headers(mm if mm is not None else b"", 0, file_size, verify_crc=True,
                              max_batch_size=max_batch_size)
        pos = 0
        try:
            if mm is not None:
                mm.madvise(mmap.MADV_SEQUENTIAL)
            try:
                for pos, h in walker:
                    base = h.base_offset
                    if (base != expected) if contiguous else (base < expected):
                        reason = f"batch base offset {base} where {expected} was expected"
                        break
                    delta = h.last_offset_delta
                    last = base + delta
                    size = h.batch_length + LOG_OVERHEAD
                    if delta < 0 or last - seg_base > INT_MAX:
                        reason = f"batch offsets {base}..{last} out of range for the segment"
                        break
                    if base > expected or next_base is not None and last >= next_base:
                        # an offset gap (legal: compaction, salvage) -- unless baseOffset, which the CRC
                        # does not cover, is damaged: then the batch after it (or the next segment) goes back
                        nxt = _I64.unpack_from(mm, pos + size)[0] if pos + size + 8 <= file_size else next_base
                        if nxt is not None and nxt <= last:
                            reason = f"batch offsets {base}..{last} overlap the next batch's base offset {nxt}"
                            break
                    if h.max_timestamp > max_ts:
                        max_ts, max_ts_off = h.max_timestamp, last
                    if pos - last_index_entry > interval:
                        oi.append_in_order(last, pos)
                        if max_ts > ti_last:
                            ti.append_in_order(max_ts, max_ts_off)
                            ti_last = max_ts
                        last_index_entry = pos
                    if on_batch is not None:
                        on_batch(h)
                    expected = last + 1
                else:
                    pos = file_size  # every batch read back whole
            except TruncatedBatchError as e:
                pos, reason = e.position, f"torn batch: {e.args[0]}"
            except RecordFormatError as e:
                pos, reason = e.position, str(e.args[0])
        finally:
            walker.close()
            if mm is not None:
                mm.close()
        valid = pos
        self.max_timestamp_so_far, self.offset_of_max_timestamp = max_ts, max_ts_off
        truncated = file_size - valid
        if truncated:
            os.ftruncate(self.fd, valid)
        self.size = valid
        self.next_offset = expected
        self.bytes_since_last_index_entry = valid - last_index_entry
        self.time_index.maybe_append(max_ts, max_ts_off, skip_full_check=True)
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        self._load_rolling_timestamp()
        return RecoveryResult(truncated, valid, expected, reason if truncated else None)

    # ---- truncation ----
    def truncate_to(self, offset: int) -> int:
        """Remove every batch holding offsets >= offset; returns bytes removed."""
        bp = self.translate_offset(offset)
        if bp is None:
            return 0
        cut = bp.position if bp.base_offset >= offset else bp.position + bp.size
        removed = self.size - cut
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self.txn_index.truncate_to(offset)
        os.ftruncate(self.fd, cut)
        self.size = cut
        self.resize_indexes(self.max_index_size)
        # rescan the tail to restore max timestamp, next offset and the index counter
        self.load_tail()
        last_pos = self.offset_index.last_entry[1] if self.offset_index.entries else 0
        self.bytes_since_last_index_entry = 0 if not self.offset_index.entries else self.size - last_pos
        if self.size == 0:
            self.rolling_based_timestamp = None
            self.created_ms = int(self._clock() * 1000)
        return removed

    # ---- durability and lifecycle ----
    def flush(self) -> None:
        """fsync the log and its indexes. Log.flush runs outside the log's lock (a roll hands older segments to
        a background flush): retention, a cleaner swap or a topic deletion may close this segment meanwhile,
        and a closed segment has nothing left to make durable."""
        if self.fd < 0:
            return
        try:
            faults.fsync(self.fd, self._path_str)
            self.flush_indexes()
        except (OSError, ValueError):
            if self.fd >= 0:
                raise
        self.unflushed = False

    def change_suffix(self, old: str, new: str) -> None:
        """Rename all files of the segment (Kafka's changeFileSuffixes), e.g. '' -> '.deleted'."""
        def swap(p: Path) -> Path:
            name = p.name
            assert name.endswith(old)
            return p.with_name(name[: len(name) - len(old)] + new) if old else p.with_name(name + new)

        new_log = swap(self.log_path)
        os.replace(self.log_path, new_log)
        self.log_path = new_log
        self.rename_indexes(swap)
        self.suffix = new

    def close(self) -> None:
        """Close the files, trimming the indexes' preallocated tails."""
        if self.fd < 0:
            return
        self.close_indexes()
        os.close(self.fd)
        self.fd = -1

    def close_handlers(self) -> None:
        """Close files without trimming (the segment is being deleted)."""
        if self.fd < 0:
            return
        self.close_indexes(trim=False)
        os.close(self.fd)
        self.fd = -1

    def delete_files(self) -> None:
        """Close and remove every file of the segment."""
        self.close_handlers()
        for p in (self.log_path, self.index_path(INDEX_SUFFIX), self.index_path(TIME_INDEX_SUFFIX),
                  self.index_path(TXN_INDEX_SUFFIX)):
            try:
                p.unlink()
            except FileNotFoundError:
                pass

    def __repr__(self) -> str:
        return f"LogSegment(base_offset={self.base_offset}, size={self.size}, next_offset={self.next_offset})"


class _DeferredTail(LogSegment):
    """A segment whose tail (next offset, max timestamp) is read from its indexes when first asked.

    A class of its own rather than a property or __getattr__ on LogSegment: either would slow
    every attribute read of every segment (CPython specializes plain attribute reads only on
    classes without them); reading the tail turns the segment back into a plain LogSegment."""

    @property
    def next_offset(self) -> int:
        self.load_tail()  # sets next_offset: the setter below makes this a LogSegment again
        return self.next_offset

    @next_offset.setter
    def next_offset(self, value: int) -> None:
        self.__class__ = LogSegment
        self.next_offset = value

    @property
    def max_timestamp_so_far(self) -> int:
        self.load_tail()
        return self.max_timestamp_so_far

    @max_timestamp_so_far.setter
    def max_timestamp_so_far(self, value: int) -> None:
        self._max_ts = value
