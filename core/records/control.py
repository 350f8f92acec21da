"""Control records: transaction markers (KIP-98) and their kin.

A control batch has the control and (for markers) transactional attribute
bits set and holds one record whose
  key   = version int16 (0) | type int16
  value = for COMMIT/ABORT, EndTxnMarker: version int16 (0) | coordinatorEpoch int32
Other control types (KRaft leader change, snapshot header/footer, ...) carry
their own value schemas; we expose their raw value.
"""
from __future__ import annotations

import struct
from typing import NamedTuple, Optional

from pylog.core.errors import DataError
from pylog.core.records.batch import BatchBuilder, Record
from pylog.core.records.errors import CorruptRecordError
from pylog.core.records.header import HEADER_SIZE, NO_PARTITION_LEADER_EPOCH, NO_SEQUENCE, BatchHeader
from pylog.core.records.varint import decode_varint, decode_varlong

__all__ = [
    "ABORT",
    "COMMIT",
    "LEADER_CHANGE",
    "SNAPSHOT_HEADER",
    "SNAPSHOT_FOOTER",
    "KRAFT_VERSION",
    "KRAFT_VOTERS",
    "CONTROL_TYPE_NAMES",
    "ControlMarker",
    "encode_control_key",
    "decode_control_key",
    "encode_end_txn_marker",
    "decode_end_txn_marker",
    "build_end_txn_batch",
    "read_control_record",
]

ABORT, COMMIT = 0, 1
LEADER_CHANGE, SNAPSHOT_HEADER, SNAPSHOT_FOOTER, KRAFT_VERSION, KRAFT_VOTERS = 2, 3, 4, 5, 6
CONTROL_TYPE_NAMES = {
    ABORT: "ABORT",
    COMMIT: "COMMIT",
    LEADER_CHANGE: "LEADER_CHANGE",
    SNAPSHOT_HEADER: "SNAPSHOT_HEADER",
    SNAPSHOT_FOOTER: "SNAPSHOT_FOOTER",
    KRAFT_VERSION: "KRAFT_VERSION",
    KRAFT_VOTERS: "KRAFT_VOTERS",
}

CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0
_KEY = struct.Struct(">hh")
_MARKER = struct.Struct(">hi")


class ControlMarker(NamedTuple):
    """A decoded control record. coordinator_epoch is set for COMMIT/ABORT only."""

    type: int
    key_version: int
    coordinator_epoch: Optional[int]
    value: Optional[bytes]
    offset: int
    timestamp: int

    @property
    def type_name(self) -> str:
        return CONTROL_TYPE_NAMES.get(self.type, f"UNKNOWN({self.type})")

    @property
    def is_commit(self) -> bool:
        return self.type == COMMIT

    @property
    def is_abort(self) -> bool:
        return self.type == ABORT


def encode_control_key(control_type: int, version: int = CONTROL_KEY_VERSION) -> bytes:
    return _KEY.pack(version, control_type)


def _unpack(st: struct.Struct, data, what: str) -> tuple:
    if data is None or len(data) < st.size:
        raise CorruptRecordError(f"{what} of {0 if data is None else len(data)} bytes, need {st.size}")
    return st.unpack_from(data, 0)


def decode_control_key(key) -> tuple[int, int]:
    """(version, type) of a control record key."""
    return _unpack(_KEY, key, "control record key")


def encode_end_txn_marker(coordinator_epoch: int, version: int = END_TXN_MARKER_VERSION) -> bytes:
    return _MARKER.pack(version, coordinator_epoch)


def decode_end_txn_marker(value) -> tuple[int, int]:
    """(version, coordinator_epoch) of a COMMIT/ABORT record value."""
    return _unpack(_MARKER, value, "end transaction marker")


def build_end_txn_batch(
    control_type: int,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    *,
    base_offset: int = 0,
    timestamp: Optional[int] = None,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A COMMIT or ABORT marker batch as the broker writes it for WriteTxnMarkers."""
    if control_type not in (ABORT, COMMIT):
        raise ValueError(f"not a transaction marker type: {control_type}")
    b = BatchBuilder(
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=NO_SEQUENCE,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )
    b.append(timestamp, encode_control_key(control_type), encode_end_txn_marker(coordinator_epoch))
    return b.build()


def read_control_record(record: Record) -> ControlMarker:
    """Decode a record from a control batch."""
    version, ctype = decode_control_key(record.key)
    epoch = None
    if ctype in (ABORT, COMMIT):
        _, epoch = decode_end_txn_marker(record.value)
    return ControlMarker(ctype, version, epoch, record.value, record.offset, record.timestamp)


def parse_control_record(buf, pos: int, header: BatchHeader) -> tuple[int, int]:
    """(control type, coordinator epoch) of the first record of the control batch at `pos` in
    `buf` (coordinator epoch -1 when the value is too short); DataError when it is malformed."""
    records = memoryview(buf)[pos + HEADER_SIZE : pos + header.size]
    if header.codec:
        from pylog.core.records.compression import decompress

        records = memoryview(decompress(header.codec, records))
    try:
        p = decode_varint(records, 0)[1]  # record length
        p += 1  # attributes
        p = decode_varlong(records, p)[1]  # timestamp delta
        p = decode_varint(records, p)[1]  # offset delta
        key_len, p = decode_varint(records, p)
        if key_len < 4:
            raise DataError("control record key too short")
        _key_version, ctype = struct.unpack_from(">hh", records, p)
        p += key_len
        value_len, p = decode_varint(records, p)
        coordinator_epoch = struct.unpack_from(">i", records, p + 2)[0] if value_len >= 6 else -1  # no coordinator epoch
    except (IndexError, struct.error, CorruptRecordError):
        raise DataError(f"malformed control record in batch at offset {header.base_offset}") from None
    return ctype, coordinator_epoch
