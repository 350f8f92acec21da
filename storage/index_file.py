"""The part Kafka's offset and time indexes share (its AbstractIndex).

An index is a file of fixed-size entries, memory-mapped. The active segment's
index is preallocated to `segment.index.bytes` so appends never grow the file;
when the segment stops being active the file is trimmed to its entries. A
reopened index takes its entry count from the file length, which is why
trimming matters: an untrimmed preallocated file would read as full of zeros.

Lookups are binary searches that first try the newest entries (the last
8 KB, Kafka's "warm section"): readers follow the tail, and keeping their
searches inside the same few pages keeps them in the page cache.
"""
from __future__ import annotations

import mmap
import os
from pathlib import Path

from pylog.core.errors import DataError
from pylog.storage import faults, file_map

# Kafka's warm section: 8192 bytes of the newest entries.
WARM_SECTION_BYTES = 8192


class CorruptIndexError(DataError):
    """An index file that fails its sanity check; the segment rebuilds it."""


class IndexFullError(DataError):
    """An append to an index with no free slot (the log rolls before this happens)."""


class InvalidIndexEntryError(DataError):
    """An index entry that is out of order or does not fit the segment's offset range
    (Kafka's InvalidOffsetException / IndexOffsetOverflowException)."""


class IndexFile:
    """A memory-mapped index file of fixed-size entries (Kafka's AbstractIndex): the active segment's is
    preallocated, older ones are trimmed to their entries."""
    entry_size = 8  # overridden
    file_length = -1  # the file's length as last set (trimming the same length again is skipped)

    def __init__(self, path: str | os.PathLike, base_offset: int, max_index_size: int, writable: bool = True):
        self.path = Path(path)
        self.base_offset = base_offset
        self.writable = writable
        self.closed = False
        # Round the limit down to whole entries, as Kafka does.
        self.max_index_size = max(self.entry_size, max_index_size - max_index_size % self.entry_size)
        self.mapping = None  # the entries (a map holding no descriptor: file_map)
        self.dirty = False  # entries changed since the last flush (an msync is an fsync of the file)
        existed = self.path.exists()
        fd = os.open(self.path, (os.O_RDWR | os.O_CREAT) if writable else os.O_RDONLY, 0o644)
        try:
            length = os.fstat(fd).st_size
            # Entries come from the file length of an existing file (trimmed on close); a stray
            # partial entry at the end is dropped. A new (active) index is preallocated; an existing
            # one is mapped as is and grown only when its segment is the active one (resize()).
            self.entries = length // self.entry_size
            if writable and not existed:
                self._resize_open(fd, self.max_index_size)
            elif writable:
                if length != self.entries * self.entry_size:
                    os.ftruncate(fd, self.entries * self.entry_size)
                self.mapping = file_map.map_file(fd, self.entries * self.entry_size)
                self.file_length = self.entries * self.entry_size
            else:
                self.mapping = mmap.mmap(fd, length, access=mmap.ACCESS_READ) if length else None
        finally:
            os.close(fd)
        self.max_entries = len(self.mapping) // self.entry_size if self.mapping is not None else 0

    @classmethod
    def open_read_only(cls, path: str | os.PathLike, base_offset: int):
        """Map an index for reading only, as a running broker may be writing it.

        The index of an active segment is preallocated (segment.index.bytes) and
        zero-filled past its entries; those blank slots are not entries. Entries
        only grow, so the first blank slot after entry 0 is found by bisection."""
        size = os.path.getsize(path)
        idx = cls(path, base_offset, max(size, cls.entry_size), writable=False)
        idx.entries = idx.written_entries()
        return idx

    def written_entries(self) -> int:
        n = self.entries
        if n <= 1 or not self._is_blank(n - 1):
            return n
        lo, hi = 1, n - 1  # the first blank slot lies in [lo, hi]
        while lo < hi:
            mid = (lo + hi) >> 1
            if self._is_blank(mid):
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _is_blank(self, n: int) -> bool:
        size = self.entry_size
        return self.mapping[n * size:(n + 1) * size] == bytes(size)

    # ---- mapping ----
    def _resize_open(self, fd: int, new_size: int) -> None:
        self.mapping = None  # unmapped (no buffer of it is kept elsewhere) before the file shrinks
        if new_size != self.file_length:
            os.ftruncate(fd, new_size)
            self.file_length = new_size
            self.dirty = True
        self.mapping = file_map.map_file(fd, new_size)
        self.max_entries = new_size // self.entry_size

    def _resize(self, new_size: int) -> None:
        new_size = new_size - new_size % self.entry_size
        if self.closed:
            raise ValueError(f"{self.path} is closed")
        fd = os.open(self.path, os.O_RDWR)
        try:
            self._resize_open(fd, new_size)
        finally:
            os.close(fd)

    def resize(self, new_size: int) -> None:
        """Grow to (or shrink to) `new_size` bytes, never below the entries held."""
        new_size = max(new_size, self.entries * self.entry_size)
        if self.mapping is not None and new_size - new_size % self.entry_size == self.file_length:
            return  # mapped at that length already (a new index is created preallocated)
        self._resize(new_size)

    def trim_to_valid_size(self) -> None:
        """Cut the preallocated tail: the file then holds exactly its entries."""
        if self.entries * self.entry_size != self.file_length:
            self._resize(self.entries * self.entry_size)

    @property
    def is_full(self) -> bool:
        """True when no entry can be appended."""
        return self.entries >= self.max_entries

    @property
    def size_bytes(self) -> int:
        """Bytes of the entries held."""
        return self.entries * self.entry_size

    def flush(self) -> None:
        """Write the mapped entries to disk."""
        mapping = self.mapping
        if mapping is not None and self.writable and self.dirty:
            self.dirty = False
            faults.sync(lambda: file_map.sync(mapping), str(self.path))

    def _check_newest(self, name: str, offset_field: int) -> tuple | None:
        """The sanity checks both indexes share, on the newest entry (returned; None when
        empty): its offset (entry[offset_field]) is not below the base offset, and the two
        newest entries are in order (the first field strictly)."""
        if self.entries == 0:
            return None
        last = self.entry(self.entries - 1)
        if last[offset_field] < self.base_offset:
            raise CorruptIndexError(f"corrupt {name} {self.path}: last offset {last[offset_field]} below base offset "
                                    f"{self.base_offset}")
        if self.entries > 1:
            prev = self.entry(self.entries - 2)
            if prev[0] >= last[0] or prev[1] > last[1]:
                raise CorruptIndexError(f"corrupt {name} {self.path}: entries out of order at the end")
        return last

    def close(self, tail: bytes = b"") -> None:
        """Close the file, trimming a writable index to its entries (and `tail`, one more entry written
        with the file's own write: no page of the map is touched)."""
        if self.closed:
            return
        if self.writable:
            length = self.entries * self.entry_size
            self.mapping = None
            if length + len(tail) != self.file_length or tail:
                fd = os.open(self.path, os.O_RDWR)
                try:
                    os.ftruncate(fd, length + len(tail))
                    if tail:
                        os.pwrite(fd, tail, length)
                finally:
                    os.close(fd)
        self.close_without_trim()

    def close_without_trim(self) -> None:
        """Close without trimming (the segment is being deleted)."""
        if self.closed:
            return
        mapping, self.mapping = self.mapping, None
        if isinstance(mapping, mmap.mmap):
            mapping.close()
        self.closed = True

    def delete(self) -> None:
        self.close_without_trim()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    def rename(self, new_path: Path) -> None:
        if self.path.exists():
            os.replace(self.path, new_path)
        self.path = Path(new_path)

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self.entries = 0
        self.dirty = True
        self._resize(self.max_index_size)

    # ---- searching ----
    def _key(self, n: int) -> int:  # overridden: the searched value of entry n
        raise NotImplementedError

    def _largest_lower_bound_slot(self, target: int) -> int:
        """Index of the last entry whose key <= target, or -1."""
        n = self.entries
        if n == 0 or self._key(0) > target:
            return -1
        key = self._key
        warm_entries = WARM_SECTION_BYTES // self.entry_size
        first_warm = max(0, n - 1 - warm_entries)
        # Newest entries first: most lookups are near the tail.
        if key(first_warm) <= target:
            lo, hi = first_warm, n - 1
        else:
            lo, hi = 0, first_warm
        while lo < hi:
            mid = (lo + hi + 1) >> 1
            if key(mid) <= target:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def _smallest_upper_bound_slot(self, target: int) -> int:
        """Index of the first entry whose key >= target, or -1."""
        n = self.entries
        if n == 0 or self._key(n - 1) < target:
            return -1
        lo, hi = 0, n - 1
        key = self._key
        while lo < hi:
            mid = (lo + hi) >> 1
            if key(mid) >= target:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self.path)!r}, entries={self.entries})"
