"""Kafka's offset index (`.index`): sparse map from offset to file position.

Each entry is 8 bytes, big-endian: the offset relative to the segment's base
offset (int32) and the byte position of a batch in the `.log` (int32). An
entry (o, p) means: the batch starting at position p holds offsets up to o,
so a reader wanting offset x >= o can start scanning at p.
"""
from __future__ import annotations

import struct

from pylog.storage.index_file import CorruptIndexError, IndexFile, IndexFullError, InvalidIndexEntryError

_ENTRY = struct.Struct(">ii")
_I32 = struct.Struct(">i")


class OffsetIndex(IndexFile):
    """Kafka's offset index (`.index`): 8-byte entries (relative offset, position), one every
    index.interval.bytes of log."""
    entry_size = 8

    def _key(self, n: int) -> int:
        return _I32.unpack_from(self.mapping, n * 8)[0]

    def entry(self, n: int) -> tuple[int, int]:
        """(absolute offset, position) of entry n."""
        rel, pos = _ENTRY.unpack_from(self.mapping, n * 8)
        return self.base_offset + rel, pos

    @property
    def last_entry(self) -> tuple[int, int]:
        """The newest entry, or (base offset, 0) when empty."""
        if self.entries == 0:
            return self.base_offset, 0
        return self.entry(self.entries - 1)

    @property
    def last_offset(self) -> int:
        """The offset of the batch's last record."""
        return self.last_entry[0]

    def lookup(self, target_offset: int) -> tuple[int, int]:
        """The entry with the largest offset <= target, or (base_offset, 0)."""
        slot = self._largest_lower_bound_slot(target_offset - self.base_offset)
        if slot < 0:
            return self.base_offset, 0
        return self.entry(slot)

    def append(self, offset: int, position: int) -> None:
        rel = offset - self.base_offset
        if not 0 <= rel <= 0x7FFFFFFF:
            raise InvalidIndexEntryError(f"offset {offset} does not fit the index of base offset {self.base_offset}")
        if self.entries >= self.max_entries:
            raise IndexFullError(f"offset index {self.path} is full ({self.entries} entries)")
        if self.entries:
            last_rel, last_pos = _ENTRY.unpack_from(self.mapping, (self.entries - 1) * 8)
            if rel <= last_rel or position < last_pos:
                raise InvalidIndexEntryError(
                    f"index entry ({offset}, {position}) is not after the last one "
                    f"({self.base_offset + last_rel}, {last_pos}) in {self.path}")
        _ENTRY.pack_into(self.mapping, self.entries * 8, rel, position)
        self.entries += 1
        self.dirty = True

    def append_in_order(self, offset: int, position: int) -> None:
        """Append an entry the caller knows comes after the last one (the segment's append and
        recovery add entries walking the log forward): only the capacity is checked."""
        n = self.entries
        if n >= self.max_entries:
            raise IndexFullError(f"offset index {self.path} is full ({n} entries)")
        _ENTRY.pack_into(self.mapping, n * 8, offset - self.base_offset, position)
        self.entries = n + 1
        self.dirty = True

    def truncate_to(self, offset: int) -> None:
        """Drop entries at or above `offset` (the log is being cut there)."""
        slot = self._largest_lower_bound_slot(offset - self.base_offset)
        if slot < 0:
            keep = 0
        elif self._key(slot) == offset - self.base_offset:
            keep = slot
        else:
            keep = slot + 1
        self.entries = keep
        self.dirty = True

    def sanity_check(self, log_size: int | None = None) -> None:
        """Kafka's checks plus ordering of the newest entries (catches an untrimmed, zero-filled tail)."""
        last = self._check_newest("index", 0)
        if last is not None and log_size is not None and last[1] >= max(log_size, 1):
            raise CorruptIndexError(f"corrupt index {self.path}: position {last[1]} beyond the log ({log_size} bytes)")

    def all_entries(self) -> list[tuple[int, int]]:
        """Every entry, oldest first."""
        return [self.entry(i) for i in range(self.entries)]
