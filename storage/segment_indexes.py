"""A segment's three indexes, opened when first needed, and the index half of an append.

Kafka opens the indexes of a segment lazily (its LazyIndex): a broker start maps only what it
reads, the active segments' indexes, and an older segment's `.index` and `.timeindex` are mapped
the first time a fetch, a time lookup or retention asks. Every entry is written through the index
classes' maps: the append's index loop (`index_batches`, compiled when the extension is built,
else the pure-Python twin below with the same signature and result) plays Kafka's
LogSegment.append per batch and hands over to the checked reference loop
(`SegmentIndexes._index_batches`) whenever an entry could fail.
"""
from __future__ import annotations

import struct
from pathlib import Path

from pylog.storage import fastpath
from pylog.core.records.header import LOG_OVERHEAD, BatchHeader
from pylog.storage.offset_index import OffsetIndex
from pylog.storage.time_index import TimeIndex
from pylog.storage.txn_index import TransactionIndex

INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"
INDEX_SUFFIXES = (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)

_I32_MIN, _I32_MAX = -0x80000000, 0x7FFFFFFF
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


def index_batches(batches, start, since, interval, max_ts, max_ts_offset, base_offset,
                  oi_map, oi_entries, oi_max, ti_map, ti_entries, ti_max):
    """The append's index entries written into the two maps: (since, max_ts, max_ts_offset, oi_entries,
    ti_entries, the last batch's next offset), or None, with nothing written, when an entry would not
    fit or the time index would refuse one (the checked loop then raises what it raises). The reference
    of the compiled `index_batches`: a first pass plays the loop without writing, the second writes."""
    if not isinstance(batches, list) or not batches or oi_map is None or ti_map is None:
        return None
    for write in (False, True):
        s, mts, moff, oe, te = since, max_ts, max_ts_offset, oi_entries, ti_entries
        nxt = 0
        ti_ts = ti_rel = 0
        if te > 0:
            if te * 12 > len(ti_map):
                return None
            ti_ts, ti_rel = _TIME_ENTRY.unpack_from(ti_map, (te - 1) * 12)
        for pos, h in batches:
            last = h[0] + h[6]
            if h[8] > mts:
                mts, moff = h[8], last
            if s > interval:
                rel, at, trel = last - base_offset, start + pos, moff - base_offset
                if oe >= oi_max or (oe + 1) * 8 > len(oi_map) or not (_I32_MIN <= rel <= _I32_MAX
                                                                       and _I32_MIN <= at <= _I32_MAX):
                    return None
                if write:
                    _OFFSET_ENTRY.pack_into(oi_map, oe * 8, rel, at)
                oe += 1
                if mts >= 0:
                    if te >= ti_max - 1 or te > 0 and moff < base_offset + ti_rel:
                        return None
                    if te == 0 or mts > ti_ts:
                        if (te + 1) * 12 > len(ti_map) or not _I32_MIN <= trel <= _I32_MAX:
                            return None
                        if write:
                            _TIME_ENTRY.pack_into(ti_map, te * 12, mts, trel)
                        te += 1
                        ti_ts, ti_rel = mts, trel
                s = 0
            s += h[1] + LOG_OVERHEAD
            nxt = last + 1
        if write:
            return s, mts, moff, oe, te, nxt
    return None


_index_batches = fastpath.choose("index_batches", index_batches)


class SegmentIndexes:
    """The offset, time and transaction index of a segment (mixed into storage.segment.LogSegment), each
    opened on first use; needs `dir`, `base_offset`, `suffix`, `max_index_size` and the append state."""
    _offset_index: OffsetIndex | None = None
    _time_index: TimeIndex | None = None
    _txn_index: TransactionIndex | None = None

    def index_path(self, suffix: str) -> Path:
        """The path of one of the segment's index files (INDEX_SUFFIX, TIME_INDEX_SUFFIX, TXN_INDEX_SUFFIX)."""
        return self.dir / f"{self.base_offset:020d}{suffix}{self.suffix}"

    @property
    def offset_index(self) -> OffsetIndex:
        """The `.index`, mapped on first use."""
        idx = self._offset_index
        if idx is None:
            idx = self._offset_index = OffsetIndex(self.index_path(INDEX_SUFFIX), self.base_offset, self.max_index_size)
        return idx

    @property
    def time_index(self) -> TimeIndex:
        """The `.timeindex`, mapped on first use."""
        idx = self._time_index
        if idx is None:
            idx = self._time_index = TimeIndex(self.index_path(TIME_INDEX_SUFFIX), self.base_offset, self.max_index_size)
        return idx

    @property
    def txn_index(self) -> TransactionIndex:
        """The `.txnindex`, read on first use."""
        idx = self._txn_index
        if idx is None:
            idx = self._txn_index = TransactionIndex(self.index_path(TXN_INDEX_SUFFIX), self.base_offset)
        return idx

    def has_index_files(self) -> bool:
        """True when the offset and time index files exist (a segment without them is recovered)."""
        return self.index_path(INDEX_SUFFIX).exists() and self.index_path(TIME_INDEX_SUFFIX).exists()

    def drop_blank_tail(self) -> None:
        """The active segment's indexes are preallocated: zero-filled slots past the entries are not
        entries (an unclean stop leaves them untrimmed)."""
        for idx in (self.offset_index, self.time_index):
            idx.entries = idx.written_entries()

    def index_appended(self, batches: list[tuple[int, BatchHeader]], start: int) -> None:
        """The index half of an append of `batches` written at byte `start`."""
        oi, ti = self.offset_index, self.time_index
        done = _index_batches(batches, start, self.bytes_since_last_index_entry, self.index_interval_bytes,
                              self.max_timestamp_so_far, self.offset_of_max_timestamp, self.base_offset, oi.mapping,
                              oi.entries, oi.max_entries, ti.mapping, ti.entries, ti.max_entries)
        if done is None:
            self._index_batches(batches, start)
            self.next_offset = batches[-1][1].next_offset
        else:  # the entries are in the maps already
            oe, te = oi.entries, ti.entries
            (self.bytes_since_last_index_entry, self.max_timestamp_so_far, self.offset_of_max_timestamp,
             oi.entries, ti.entries, self.next_offset) = done
            if oi.entries != oe:
                oi.dirty = True
            if ti.entries != te:
                ti.dirty = True

    def _index_batches(self, batches: list[tuple[int, BatchHeader]], start: int) -> None:
        """The checked index loop (Kafka's LogSegment.append, per batch): max timestamp, index entries every
        interval, each through the index's own append."""
        since = self.bytes_since_last_index_entry
        interval = self.index_interval_bytes
        max_ts = self.max_timestamp_so_far
        oi = self.offset_index
        for pos, h in batches:
            if h.max_timestamp > max_ts:
                max_ts = h.max_timestamp
                self.offset_of_max_timestamp = h.base_offset + h.last_offset_delta
            if since > interval:
                # offsets and positions only grow on append: OffsetIndex.append's order checks cannot fail
                oi.append_in_order(h.base_offset + h.last_offset_delta, start + pos)
                self.time_index.maybe_append(max_ts, self.offset_of_max_timestamp)
                since = 0
            since += h.batch_length + LOG_OVERHEAD
        self.max_timestamp_so_far = max_ts
        self.bytes_since_last_index_entry = since

    def resize_indexes(self, size: int) -> None:
        """Resize both index files (the active segment's are preallocated to segment.index.bytes)."""
        self.offset_index.resize(size)
        self.time_index.resize(size)

    def flush_indexes(self) -> None:
        """msync the indexes that are open (one never opened has nothing unwritten)."""
        for idx in self._open_indexes():
            idx.flush()

    def _open_indexes(self) -> list:
        return [i for i in (self._offset_index, self._time_index, self._txn_index) if i is not None]

    def rename_indexes(self, swap) -> None:
        """Rename the index files with `swap(path)` (the segment's change of suffix)."""
        for kind, idx in ((INDEX_SUFFIX, self._offset_index), (TIME_INDEX_SUFFIX, self._time_index),
                          (TXN_INDEX_SUFFIX, self._txn_index)):
            path = self.index_path(kind)
            if idx is not None:
                idx.rename(swap(path))
            elif path.exists():
                path.replace(swap(path))

    def close_active(self) -> None:
        """Close the active segment's indexes at shutdown (Kafka's LogSegment.close): the final time-index
        entry and the trimmed files, as on_become_inactive() and close() leave them."""
        if self._time_index is not None or self.max_timestamp_so_far >= 0:
            self.time_index.close_with_final_entry(self.max_timestamp_so_far, self.offset_of_max_timestamp)

    def close_indexes(self, trim: bool = True) -> None:
        """Unmap the indexes, trimming the preallocated tails unless the segment is being deleted."""
        for idx in self._open_indexes():
            if trim:
                idx.close()
            elif idx is not self._txn_index:
                idx.close_without_trim()
