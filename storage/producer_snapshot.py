"""Producer state snapshot files, `<offset:020d>.snapshot` (Kafka's ProducerSnapshot, version 1).

Layout:
  version int16 | crc uint32 (CRC-32C of everything after it) | int32 count |
  per entry: producerId int64, epoch int16, lastSequence int32,
  lastOffset int64, offsetDelta int32, timestamp int64, coordinatorEpoch int32,
  currentTxnFirstOffset int64 (-1 = none).
"""
from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Iterable, NamedTuple

from pylog.core.records.crc import crc32c

from pylog.core.errors import DataError

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_SNAP_HEAD = struct.Struct(">hIi")  # version, crc, array length
_SNAP_ENTRY = struct.Struct(">qhiqiqiq")
ENTRIES_OFFSET = 6  # the CRC covers bytes from here (the array) to the end


class CorruptSnapshotError(DataError):
    """A producer snapshot that cannot be trusted (bad CRC, version, length)."""


class SnapshotEntry(NamedTuple):
    """One producer entry exactly as stored in a snapshot file."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int


def encode_snapshot(entries: Iterable[SnapshotEntry]) -> bytes:
    """A producer snapshot file's bytes (Kafka's version 1 layout, CRC-32C over the entries)."""
    entries = list(entries)
    body = bytearray(_SNAP_HEAD.size + _SNAP_ENTRY.size * len(entries))
    _SNAP_HEAD.pack_into(body, 0, SNAPSHOT_VERSION, 0, len(entries))
    pos = _SNAP_HEAD.size
    for e in entries:
        _SNAP_ENTRY.pack_into(body, pos, *e)
        pos += _SNAP_ENTRY.size
    struct.pack_into(">I", body, 2, crc32c(memoryview(body)[ENTRIES_OFFSET:]))
    return bytes(body)


def decode_snapshot(data: bytes, name: str = "snapshot") -> list[SnapshotEntry]:
    """The entries of a producer snapshot file; CorruptSnapshotError when it cannot be trusted."""
    if len(data) < _SNAP_HEAD.size:
        raise CorruptSnapshotError(f"{name}: truncated producer snapshot ({len(data)} bytes)")
    version, crc, count = _SNAP_HEAD.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        raise CorruptSnapshotError(f"{name}: unknown producer snapshot version {version}")
    computed = crc32c(memoryview(data)[ENTRIES_OFFSET:])
    if computed != crc:
        raise CorruptSnapshotError(f"{name}: producer snapshot is corrupt (stored crc {crc}, computed crc {computed})")
    if count < 0 or len(data) != _SNAP_HEAD.size + count * _SNAP_ENTRY.size:
        raise CorruptSnapshotError(f"{name}: producer snapshot length {len(data)} does not match {count} entries")
    return [SnapshotEntry._make(_SNAP_ENTRY.unpack_from(data, _SNAP_HEAD.size + i * _SNAP_ENTRY.size)) for i in range(count)]


def read_snapshot(path: str | os.PathLike) -> list[SnapshotEntry]:
    """decode_snapshot of the file at `path`."""
    path = Path(path)
    return decode_snapshot(path.read_bytes(), str(path))


def snapshot_file_name(offset: int) -> str:
    """`<offset, 20 digits>.snapshot`, as Kafka names them."""
    return f"{offset:020d}{SNAPSHOT_SUFFIX}"


def offset_from_snapshot_name(name: str) -> int | None:
    """The offset in a snapshot file name, or None for any other file."""
    if not name.endswith(SNAPSHOT_SUFFIX):
        return None
    stem = name[: -len(SNAPSHOT_SUFFIX)]
    return int(stem) if stem.isdigit() else None
