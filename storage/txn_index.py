"""Kafka's transaction index (`.txnindex`): the aborted transactions of a segment.

Each entry is 34 bytes, big-endian: version int16 (0), producerId int64,
firstOffset int64, lastOffset int64, lastStableOffset int64. Like Kafka, the
file is only created when the first entry is written; a segment without
aborted transactions has none.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import NamedTuple

from pylog.storage import faults
from pylog.storage.index_file import CorruptIndexError, InvalidIndexEntryError

_ENTRY = struct.Struct(">hqqqq")
ENTRY_SIZE = _ENTRY.size  # 34
VERSION = 0


class AbortedTxn(NamedTuple):
    """One .txnindex entry: an aborted transaction's producer, first and last offset, and the last stable
    offset at its marker."""
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        """The entry's 34 bytes (version 0)."""
        return _ENTRY.pack(VERSION, *self)


class CorruptTxnIndexError(CorruptIndexError):
    """A .txnindex that does not parse: like the other indexes, the segment rebuilds it."""


class TransactionIndex:
    """A segment's `.txnindex`: the aborted transactions whose ABORT markers it holds, in Kafka's 34-byte
    entry format."""
    def __init__(self, path: str | os.PathLike, base_offset: int):
        self.path = Path(path)
        self.base_offset = base_offset
        self._last_offset: int | None = None
        if self.path.exists():
            try:
                entries = self.read_all()
            except CorruptTxnIndexError:
                entries = []  # sanity_check() reports it; loading the segment must not fail here
            if entries:
                self._last_offset = entries[-1].last_offset

    def append(self, txn: AbortedTxn) -> None:
        """Add an entry; entries must come in last-offset order."""
        if self._last_offset is not None and txn.last_offset < self._last_offset:
            raise InvalidIndexEntryError(f"aborted txn last offset {txn.last_offset} below {self._last_offset} in {self.path}")
        with open(self.path, "ab") as f:
            f.write(txn.encode())
        self._last_offset = txn.last_offset

    def read_all(self) -> list[AbortedTxn]:
        """Every entry of the file."""
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        if len(data) % ENTRY_SIZE:
            raise CorruptTxnIndexError(f"{self.path}: size {len(data)} is not a multiple of {ENTRY_SIZE}")
        out = []
        for pos in range(0, len(data), ENTRY_SIZE):
            version, pid, first, last, lso = _ENTRY.unpack_from(data, pos)
            if version != VERSION:
                raise CorruptTxnIndexError(f"{self.path}: unknown entry version {version} at byte {pos}")
            out.append(AbortedTxn(pid, first, last, lso))
        return out

    @property
    def has_entries(self) -> bool:
        """False when nothing was ever loaded or appended: READ_COMMITTED fetches skip the file read."""
        return self._last_offset is not None

    def collect_aborted(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Aborted txns overlapping [fetch_offset, upper_bound) (Kafka's collectAbortedTxns)."""
        return [t for t in self.read_all() if t.last_offset >= fetch_offset and t.first_offset < upper_bound]

    def truncate_to(self, offset: int) -> None:
        """Drop entries whose last offset is >= offset."""
        entries = self.read_all()
        keep = [t for t in entries if t.last_offset < offset]
        if len(keep) != len(entries):
            with open(self.path, "wb") as f:
                f.write(b"".join(t.encode() for t in keep))
            self._last_offset = keep[-1].last_offset if keep else None

    def sanity_check(self) -> None:
        """Raise the corrupt-index error when the file cannot be trusted."""
        self.read_all()

    def reset(self) -> None:
        """Drop every entry (before a rebuild)."""
        self.delete()

    def flush(self) -> None:
        """Make the file durable."""
        if self.path.exists():
            fd = os.open(self.path, os.O_RDONLY)
            try:
                faults.fsync(fd, str(self.path))
            finally:
                os.close(fd)

    def delete(self) -> None:
        """Remove the file."""
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        self._last_offset = None

    def rename(self, new_path: Path) -> None:
        """Move the file (segment suffix changes)."""
        if self.path.exists():
            os.replace(self.path, new_path)
        self.path = Path(new_path)

    def close(self) -> None:
        """Close the file."""
        pass
