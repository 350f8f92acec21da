"""RecordBatch v2 (magic 2): a reader and a builder.

Batch layout: the 61-byte header (see header.py) then the records, compressed
as one block when the codec bits are set. The records themselves are decoded
in record_decode.py and encoded in record_encode.py (both re-exported here).
"""
from __future__ import annotations

import time
from operator import attrgetter
from typing import Iterable, Iterator, Optional

from pylog.core.records.crc import crc32c

from pylog.core.records import compression
from pylog.core.records.errors import (
    CorruptRecordError, CrcMismatchError, RecordCountMismatchError, RecordFormatError, UnknownCodecError,
)
from pylog.core.records.header import (
    ATTRIBUTES_OFFSET,
    CODEC_MASK,
    CODEC_NONE,
    HEADER_SIZE,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    BatchHeader,
    attributes_for,
    pack_batch,
    read_batch_header,
)
from pylog.core.records.record_decode import Record, decode_records, decode_records_py, record_sequence  # noqa: F401
from pylog.core.records.record_encode import encode_headers, encode_record, encode_record_py, record_size  # noqa: F401

__all__ = ["Record", "RecordBatch", "BatchBuilder", "build_batch", "decode_records", "encode_headers", "encode_record",
           "record_size", "record_sequence"]


class BatchView:
    """What the v2 and the v0/v1 readers share: the batch at `position` in
    `buffer`, its parsed `header`, and the CRC check over `compute_crc()`."""

    __slots__ = ("buffer", "position", "header")

    @property
    def raw(self) -> memoryview:
        """The batch's bytes (a view into the buffer, no copy)."""
        return memoryview(self.buffer)[self.position : self.position + self.header.size]

    def crc_ok(self) -> bool:
        """True when the stored CRC matches the computed one."""
        return self.compute_crc() == self.header.crc

    def check_crc(self) -> None:
        """Raise CrcMismatchError when the stored CRC is not the computed one."""
        found = self.compute_crc()
        if found != self.header.crc:
            raise CrcMismatchError(self.header.crc, found, self.position)


class RecordBatch(BatchView):
    """Reader of the v2 batch at `position` in `buffer`.

    Construction reads and checks the header only (magic, length, room in the
    buffer; and the CRC when verify_crc=True). Records are decoded (and
    decompressed) by records() / iteration. Error positions are positions in
    `buffer`.
    """

    __slots__ = ()

    def __init__(self, buffer, position: int = 0, *, verify_crc: bool = False):
        self.buffer = buffer
        self.position = position
        self.header: BatchHeader = read_batch_header(buffer, position, verify_crc=verify_crc)

    # -- header fields (delegated so batch.base_offset etc. read naturally)
    magic = property(lambda self: 2)

    def __repr__(self) -> str:
        h = self.header
        return (
            f"RecordBatch(base_offset={h.base_offset}, last_offset={h.last_offset}, "
            f"count={h.record_count}, size={h.size}, codec={h.codec})"
        )

    def compute_crc(self) -> int:
        """CRC-32C of the batch as it is now (attributes to the end)."""
        return crc32c(memoryview(self.buffer)[self.position + ATTRIBUTES_OFFSET : self.position + self.header.size])

    def records_data(self) -> bytes:
        """The records section, decompressed."""
        start = self.position + HEADER_SIZE
        body = memoryview(self.buffer)[start : self.position + self.header.size]
        codec = self.header.attributes & CODEC_MASK
        if codec == CODEC_NONE:
            return bytes(body)
        try:
            return compression.decompress(codec, body)
        except RecordFormatError as e:
            if e.position is None:  # codecs know no positions: locate the error at the batch
                e.position = self.position
                e.args = (f"{e.args[0]} at position {self.position}",)
            raise

    def records(self) -> list:
        """Every record, decoded; checks framing and the record count."""
        h = self.header
        try:
            out = decode_records(
                self.records_data(),
                h.base_offset,
                h.base_timestamp,
                h.max_timestamp if h.attributes & 0x08 else None,
            )
        except CorruptRecordError as e:
            raise CorruptRecordError(e.args[0], self.position) from None
        if len(out) != h.record_count:
            raise RecordCountMismatchError(h.record_count, len(out), self.position)
        return out

    def __iter__(self) -> Iterator[Record]:
        return iter(self.records())


def _delegate(name: str) -> property:
    get = attrgetter(name)
    return property(lambda self: get(self.header), doc=f"header.{name}")


for _name in BatchHeader._fields + (
    "size",
    "last_offset",
    "next_offset",
    "codec",
    "timestamp_type",
    "is_transactional",
    "is_control",
    "has_delete_horizon",
    "delete_horizon_ms",
    "last_sequence",
    "has_producer_id",
):
    if _name != "magic":
        setattr(RecordBatch, _name, _delegate(_name))


# ------------------------------------------------------------------ builder


class BatchBuilder:
    """Builds one v2 batch: append records, then build() the bytes.

    Records are encoded as they are appended (so size_in_bytes() is exact
    before compression); build() compresses, fills the header and the CRC.
    baseTimestamp is the first record's timestamp, or the delete horizon when
    one is given (the flag is then set, as KIP-534's cleaner writes it).
    """

    def __init__(
        self, magic: int = 2, codec: int = CODEC_NONE, base_offset: int = 0,
        producer_id: int = NO_PRODUCER_ID, producer_epoch: int = NO_PRODUCER_EPOCH, base_sequence: int = NO_SEQUENCE,
        is_transactional: bool = False, is_control: bool = False, timestamp_type: int = 0,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH, delete_horizon: Optional[int] = None,
    ):
        if magic != 2:
            raise ValueError("BatchBuilder writes magic 2; use legacy.LegacyBuilder for 0/1")
        if codec not in compression.COMPRESSORS:
            raise UnknownCodecError(codec)
        self.magic, self.codec, self.base_offset = 2, codec, base_offset
        self.producer_id, self.producer_epoch, self.base_sequence = producer_id, producer_epoch, base_sequence
        self.is_transactional, self.is_control, self.timestamp_type = is_transactional, is_control, timestamp_type
        self.partition_leader_epoch, self.delete_horizon = partition_leader_epoch, delete_horizon
        self._parts: list = []
        self._size = 0  # bytes of encoded records so far
        # record count = len(_parts) and last offset delta = _next_delta - 1:
        # derived instead of stored, two attribute stores fewer per append
        self._next_delta = 0
        self._base_ts = delete_horizon
        self._max_ts = NO_TIMESTAMP

    @property
    def record_count(self) -> int:
        """Records appended so far."""
        return len(self._parts)

    @property
    def next_offset(self) -> int:
        """The offset after the batch's last record."""
        return self.base_offset + self._next_delta

    def size_in_bytes(self) -> int:
        """Size of the batch if built now without compression."""
        return HEADER_SIZE + self._size

    def append(self, timestamp: Optional[int], key, value, headers: Iterable = (), offset: Optional[int] = None) -> int:
        """Add a record; returns its offset. `offset` allows gaps (compaction), never going back.

        The record is encoded by encode_record (compiled when the fast path is active).
        """
        if offset is None:
            od = self._next_delta
        else:
            od = offset - self.base_offset
            if od < self._next_delta:
                raise ValueError(f"offset {offset} is not above the last one {self.base_offset + self._next_delta - 1}")
        if timestamp is None:
            timestamp = int(time.time() * 1000)
        base_ts = self._base_ts
        if base_ts is None:
            base_ts = self._base_ts = timestamp
        record = encode_record(od, timestamp - base_ts, key, value, headers)
        # Parts are joined once in build(): a growing bytearray reallocates
        # (and may copy everything so far) every few kilobytes.
        self._parts.append(record)
        self._size += len(record)
        if timestamp > self._max_ts:
            self._max_ts = timestamp
        self._next_delta = od + 1
        return self.base_offset + od

    def build(self) -> bytes:
        """The finished batch: records compressed with the codec, header and CRC filled in."""
        codec = self.codec
        records = b"".join(self._parts)
        payload = records if codec == CODEC_NONE else compression.compress(codec, records)
        count = len(self._parts)
        base_ts = self._base_ts if self._base_ts is not None else NO_TIMESTAMP
        attrs = attributes_for(
            codec, self.timestamp_type, self.is_transactional, self.is_control, self.delete_horizon is not None
        )
        return pack_batch(
            payload, attributes=attrs, last_offset_delta=self._next_delta - 1 if count else 0,
            base_timestamp=base_ts, max_timestamp=self._max_ts if count else NO_TIMESTAMP, record_count=count,
            base_offset=self.base_offset, partition_leader_epoch=self.partition_leader_epoch,
            producer_id=self.producer_id, producer_epoch=self.producer_epoch, base_sequence=self.base_sequence,
        )


def build_batch(records: Iterable, **kwargs) -> bytes:
    """Convenience: build one batch from (timestamp, key, value[, headers]) tuples."""
    b = BatchBuilder(**kwargs)
    for rec in records:
        b.append(*rec)
    return b.build()
