"""Kafka's time index (`.timeindex`): sparse map from timestamp to offset.

Each entry is 12 bytes, big-endian: a timestamp (int64) and an offset relative
to the segment's base offset (int32). Entries hold the largest timestamp seen
so far in the segment and the offset of the batch carrying it, so timestamps
only grow from entry to entry: an entry is only added when its timestamp is
larger than the last one.
"""
from __future__ import annotations

import struct

from pylog.storage.index_file import CorruptIndexError, IndexFile, IndexFullError, InvalidIndexEntryError

_ENTRY = struct.Struct(">qi")
_I64 = struct.Struct(">q")
NO_TIMESTAMP = -1


class TimeIndex(IndexFile):
    """Kafka's time index (`.timeindex`): 12-byte entries (max timestamp so far, relative offset), appended
    when the timestamp grows."""
    entry_size = 12

    def _key(self, n: int) -> int:
        return _I64.unpack_from(self.mapping, n * 12)[0]

    def entry(self, n: int) -> tuple[int, int]:
        """(timestamp, absolute offset) of entry n."""
        ts, rel = _ENTRY.unpack_from(self.mapping, n * 12)
        return ts, self.base_offset + rel

    @property
    def last_entry(self) -> tuple[int, int]:
        """The newest entry, or the empty index's placeholder."""
        if self.entries == 0:
            return NO_TIMESTAMP, self.base_offset
        return self.entry(self.entries - 1)

    @property
    def is_full(self) -> bool:
        # Kafka keeps one slot free: rolling appends a final entry without a full check.
        """True when no entry can be appended."""
        return self.entries >= self.max_entries - 1

    def lookup(self, target_ts: int) -> tuple[int, int]:
        """The entry with the largest timestamp <= target, or (-1, base_offset)."""
        slot = self._largest_lower_bound_slot(target_ts)
        if slot < 0:
            return NO_TIMESTAMP, self.base_offset
        return self.entry(slot)

    def lookup_below(self, target_ts: int) -> tuple[int, int]:
        """The entry with the largest timestamp < target: every record up to its
        offset is older than target, so a search for the first record >= target
        may start after it."""
        return self.lookup(target_ts - 1)

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> bool:
        """Append (timestamp, offset) when the timestamp is above the last one; the segment's roll appends
        its final entry without the full check."""
        if timestamp < 0:
            return False
        if not skip_full_check and self.is_full:
            raise IndexFullError(f"time index {self.path} is full ({self.entries} entries)")
        if self.entries >= self.max_entries:
            self.resize((self.entries + 1) * 12)
        rel = offset - self.base_offset
        if self.entries:
            last_ts, last_rel = _ENTRY.unpack_from(self.mapping, (self.entries - 1) * 12)
            if offset < self.base_offset + last_rel:
                raise InvalidIndexEntryError(f"time index offset {offset} below the last one in {self.path}")
            if timestamp <= last_ts:
                return False
        _ENTRY.pack_into(self.mapping, self.entries * 12, timestamp, rel)
        self.entries += 1
        self.dirty = True
        return True

    def close_with_final_entry(self, timestamp: int, offset: int) -> None:
        """Close, with the entry a roll's maybe_append(timestamp, offset, skip_full_check=True) would add
        (Kafka's LogSegment.close): the same file, the entry written with one pwrite."""
        tail = b""
        if timestamp >= 0 and not self.closed:
            last_ts, last_off = self.last_entry
            if self.entries and offset < last_off:
                raise InvalidIndexEntryError(f"time index offset {offset} below the last one in {self.path}")
            if not self.entries or timestamp > last_ts:
                tail = _ENTRY.pack(timestamp, offset - self.base_offset)
        self.close(tail)

    @property
    def last_timestamp(self) -> int:
        """The newest entry's timestamp, -1 when empty."""
        return _I64.unpack_from(self.mapping, (self.entries - 1) * 12)[0] if self.entries else NO_TIMESTAMP

    def append_in_order(self, timestamp: int, offset: int) -> None:
        """Append an entry the caller knows has a larger timestamp and no smaller offset than the last
        one (recovery walking the log forward): only the capacity is checked, keeping Kafka's slot
        for the final entry of a roll."""
        n = self.entries
        if n >= self.max_entries - 1:
            raise IndexFullError(f"time index {self.path} is full ({n} entries)")
        _ENTRY.pack_into(self.mapping, n * 12, timestamp, offset - self.base_offset)
        self.entries = n + 1
        self.dirty = True

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose offset is >= `offset` (offsets grow with timestamps)."""
        keep = self.entries
        while keep > 0 and self.entry(keep - 1)[1] >= offset:
            keep -= 1
        self.entries = keep
        self.dirty = True

    def sanity_check(self, last_offset: int | None = None) -> None:
        """Raise the corrupt-index error when the file cannot be trusted."""
        last = self._check_newest("time index", 1)
        if last is not None and last_offset is not None and last[1] > last_offset:
            raise CorruptIndexError(f"corrupt time index {self.path}: offset {last[1]} beyond the log's last offset {last_offset}")

    def all_entries(self) -> list[tuple[int, int]]:
        """Every entry, oldest first."""
        return [self.entry(i) for i in range(self.entries)]
