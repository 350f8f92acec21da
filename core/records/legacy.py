"""Legacy message sets, magic 0 and 1 (Kafka before 0.11).

Each entry (big-endian):
  offset int64 | messageSize int32 | crc uint32 | magic int8 | attributes int8
  | timestamp int64 (magic 1 only) | keyLength int32 | key | valueLength int32 | value
CRC-32 (zlib's) covers magic..end. Lengths of -1 are null. Attributes: codec
in bits 0-2 (none, gzip, snappy, lz4), timestamp type in bit 3 (magic 1).

A compressed entry is a "wrapper": its value is a compressed message set of
inner entries. Inner offsets are absolute in magic 0 and relative (0..n-1) in
magic 1, where the wrapper's offset is the absolute offset of the last inner
entry. With LogAppendTime the inner entries take the wrapper's timestamp.
"""
from __future__ import annotations

import struct
import zlib
from typing import NamedTuple, Optional

from pylog.core.records import compression
from pylog.core.records.batch import BatchView, Record
from pylog.core.records.errors import (
    CorruptRecordError,
    CrcMismatchError,
    InvalidBatchSizeError,
    InvalidMagicError,
    RecordFormatError,
    TruncatedBatchError,
    UnknownCodecError,
)
from pylog.core.records.header import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_SNAPPY,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    NO_TIMESTAMP,
)

__all__ = [
    "LegacyHeader",
    "LegacyBatch",
    "LegacyBuilder",
    "read_legacy_header",
    "MIN_MESSAGE_SIZE_V0",
    "MIN_MESSAGE_SIZE_V1",
]

# messageSize minimum: crc + magic + attributes (+ timestamp) + two lengths
MIN_MESSAGE_SIZE_V0 = 4 + 1 + 1 + 4 + 4
MIN_MESSAGE_SIZE_V1 = MIN_MESSAGE_SIZE_V0 + 8
HEADER_SIZE_V0 = LOG_OVERHEAD + MIN_MESSAGE_SIZE_V0 - 8  # up to the key length
LEGACY_CODEC_MASK = 0x07
LEGACY_TIMESTAMP_TYPE_MASK = 0x08
_LEGACY_CODECS = (CODEC_NONE, CODEC_GZIP, CODEC_SNAPPY, CODEC_LZ4)

_V0 = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_V1 = struct.Struct(">qiIbbq")  # ... timestamp
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")


class LegacyHeader(NamedTuple):
    """The fixed part of a v0/v1 entry. For a compressed wrapper, `offset` is
    the offset of its last inner message (decode to learn the first)."""

    offset: int
    message_size: int
    crc: int
    magic: int
    attributes: int
    timestamp: int  # -1 in magic 0

    @property
    def size(self) -> int:
        return self.message_size + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.offset

    @property
    def next_offset(self) -> int:
        return self.offset + 1

    @property
    def codec(self) -> int:
        return self.attributes & LEGACY_CODEC_MASK

    @property
    def is_compressed(self) -> bool:
        return bool(self.attributes & LEGACY_CODEC_MASK)

    @property
    def timestamp_type(self) -> int:
        # Magic 0 has no timestamps; Kafka reports NO_TIMESTAMP_TYPE (-1).
        if self.magic == 0:
            return -1
        return (self.attributes & LEGACY_TIMESTAMP_TYPE_MASK) >> 3

    # the v2 flags, always off here, so walkers can treat all magics alike
    is_transactional = False
    is_control = False
    producer_id = -1


def read_legacy_header(buf, pos: int = 0, end: Optional[int] = None, *, verify_crc: bool = False) -> LegacyHeader:
    """Check and parse the v0/v1 entry at `pos`; Truncated if the buffer ends inside it."""
    if end is None:
        end = len(buf)
    if end - pos < LOG_OVERHEAD:
        raise TruncatedBatchError(f"{end - pos} trailing bytes, less than an entry header", pos)
    size = _I32.unpack_from(buf, pos + 8)[0]
    if end - pos <= MAGIC_OFFSET:
        raise TruncatedBatchError(f"{end - pos} trailing bytes, less than an entry header", pos)
    magic = buf[pos + MAGIC_OFFSET]
    if magic not in (0, 1):
        raise InvalidMagicError(magic, pos)
    minimum = MIN_MESSAGE_SIZE_V0 if magic == 0 else MIN_MESSAGE_SIZE_V1
    if size < minimum:
        raise InvalidBatchSizeError(f"message size {size} below the minimum {minimum}", pos)
    if pos + LOG_OVERHEAD + size > end:
        raise TruncatedBatchError(f"entry of {size + LOG_OVERHEAD} bytes but only {end - pos} remain", pos)
    if magic == 0:
        header = LegacyHeader(*_V0.unpack_from(buf, pos), NO_TIMESTAMP)
    else:
        header = LegacyHeader._make(_V1.unpack_from(buf, pos))
    if verify_crc:
        found = zlib.crc32(memoryview(buf)[pos + MAGIC_OFFSET : pos + LOG_OVERHEAD + size])
        if found != header.crc:
            raise CrcMismatchError(header.crc, found, pos)
    return header


def _key_value(buf, pos: int, end: int, magic: int):
    """Key and value of the entry at `pos` (header already checked)."""
    p = pos + (HEADER_SIZE_V0 if magic == 0 else HEADER_SIZE_V0 + 8)
    kl = _I32.unpack_from(buf, p)[0]
    p += 4
    if kl == -1:
        key = None
    elif kl < 0 or p + kl + 4 > end:
        raise CorruptRecordError(f"key length {kl} does not fit the message", pos)
    else:
        key = bytes(buf[p : p + kl])
        p += kl
    vl = _I32.unpack_from(buf, p)[0]
    p += 4
    if vl == -1:
        value = None
    elif vl < 0 or p + vl > end:
        raise CorruptRecordError(f"value length {vl} does not fit the message", pos)
    else:
        value = bytes(buf[p : p + vl])
        p += vl
    if p != end:
        raise CorruptRecordError(f"{end - p} bytes left after the value", pos)
    return key, value


class LegacyBatch(BatchView):
    """Reader of one v0/v1 entry (a plain message or a compressed wrapper)."""

    __slots__ = ()

    def __init__(self, buffer, position: int = 0, *, verify_crc: bool = False):
        self.buffer = buffer
        self.position = position
        self.header = read_legacy_header(buffer, position, verify_crc=verify_crc)

    def __repr__(self) -> str:
        h = self.header
        return f"LegacyBatch(magic={h.magic}, offset={h.offset}, size={h.size}, codec={h.codec})"

    magic = property(lambda self: self.header.magic)
    offset = property(lambda self: self.header.offset)
    last_offset = property(lambda self: self.header.offset)
    next_offset = property(lambda self: self.header.offset + 1)
    size = property(lambda self: self.header.size)
    crc = property(lambda self: self.header.crc)
    attributes = property(lambda self: self.header.attributes)
    timestamp = property(lambda self: self.header.timestamp)
    codec = property(lambda self: self.header.codec)
    timestamp_type = property(lambda self: self.header.timestamp_type)
    is_compressed = property(lambda self: self.header.is_compressed)
    is_transactional = False
    is_control = False

    def compute_crc(self) -> int:
        return zlib.crc32(memoryview(self.buffer)[self.position + MAGIC_OFFSET : self.position + self.header.size])

    def key_value(self):
        """(key, value) of this entry itself; for a wrapper the value is compressed."""
        h = self.header
        return _key_value(self.buffer, self.position, self.position + h.size, h.magic)

    def records(self, *, verify_inner_crc: bool = True) -> list:
        """The records: this entry, or for a wrapper the inner entries with absolute offsets."""
        h = self.header
        key, value = self.key_value()
        codec = h.codec
        if codec == CODEC_NONE:
            return [Record(h.offset, h.timestamp, key, value, ())]
        if codec not in _LEGACY_CODECS:
            raise UnknownCodecError(codec, self.position)
        inner = self._inner_bytes(value)
        entries = []
        pos, end = 0, len(inner)
        try:
            while pos < end:
                ih = read_legacy_header(inner, pos, end, verify_crc=verify_inner_crc)
                if ih.magic != h.magic:
                    raise CorruptRecordError(f"inner message magic {ih.magic} in a magic {h.magic} wrapper")
                if ih.attributes & LEGACY_CODEC_MASK:
                    raise CorruptRecordError("nested compressed message")
                k, v = _key_value(inner, pos, pos + ih.size, ih.magic)
                entries.append((ih, k, v))
                pos += ih.size
        except RecordFormatError as e:
            # inner positions mean nothing in the file: report the wrapper's
            raise CorruptRecordError(f"inner message set: {e.args[0]}", self.position) from None
        if not entries:
            return []
        if h.magic == 0:
            return [Record(ih.offset, NO_TIMESTAMP, k, v, ()) for ih, k, v in entries]
        shift = h.offset - entries[-1][0].offset
        if shift < 0:
            # A producer-side set whose wrapper offset was never assigned by a
            # broker: keep the relative offsets, as Kafka's reader does.
            shift = 0
        log_append = h.timestamp_type == 1
        return [
            Record(shift + ih.offset, h.timestamp if log_append else ih.timestamp, k, v, ())
            for ih, k, v in entries
        ]

    def __iter__(self):
        return iter(self.records())

    def _inner_bytes(self, value) -> bytes:
        """The wrapper's value, decompressed: the inner message set."""
        codec = self.header.codec
        if value is None:
            raise CorruptRecordError("compressed wrapper message without a value", self.position)
        try:
            if codec == CODEC_LZ4:
                # magic 0 writers used the pre-KIP-57 frame checksum; accept either form
                return compression.decompress_lz4_legacy(value)
            return compression.decompress(codec, value)
        except RecordFormatError as e:
            if e.position is None:
                e.position = self.position
                e.args = (f"{e.args[0]} at position {self.position}",)
            raise

    def record_crcs(self) -> list[tuple[int, bool]]:
        """(stored crc, crc matches) per record, aligned with records(): kafka-dump-log prints both."""
        h = self.header
        if h.codec == CODEC_NONE:
            return [(h.crc, self.crc_ok())]
        inner = self._inner_bytes(self.key_value()[1])
        out = []
        pos, end = 0, len(inner)
        while pos < end:
            ih = read_legacy_header(inner, pos, end)
            out.append((ih.crc, zlib.crc32(memoryview(inner)[pos + MAGIC_OFFSET : pos + ih.size]) == ih.crc))
            pos += ih.size
        return out


def _encode_message(offset: int, magic: int, attributes: int, timestamp: int, key, value) -> bytes:
    body = bytearray()
    body.append(magic)
    body.append(attributes)
    if magic == 1:
        body += struct.pack(">q", timestamp)
    for part in (key, value):
        if part is None:
            body += _I32.pack(-1)
        else:
            body += _I32.pack(len(part))
            body += part
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, len(body) + 4, crc) + bytes(body)


class LegacyBuilder:
    """Builds a v0/v1 message set (one wrapper entry when compressed). For tests and tools."""

    def __init__(self, magic: int, codec: int = CODEC_NONE, base_offset: int = 0, timestamp_type: int = 0):
        if magic not in (0, 1):
            raise ValueError("LegacyBuilder writes magic 0 or 1")
        if codec not in _LEGACY_CODECS:
            raise UnknownCodecError(codec)
        self.magic = magic
        self.codec = codec
        self.base_offset = base_offset
        self.timestamp_type = timestamp_type if magic == 1 else 0
        self._records: list[tuple[int, int, Optional[bytes], Optional[bytes]]] = []

    def append(self, timestamp: Optional[int], key, value, offset: Optional[int] = None) -> int:
        if offset is None:
            offset = self._records[-1][0] + 1 if self._records else self.base_offset
        ts = NO_TIMESTAMP if (self.magic == 0 or timestamp is None) else timestamp
        self._records.append((offset, ts, key, value))
        return offset

    def build(self) -> bytes:
        ts_bit = LEGACY_TIMESTAMP_TYPE_MASK if self.timestamp_type else 0
        if self.codec == CODEC_NONE:
            return b"".join(
                _encode_message(off, self.magic, ts_bit, ts, k, v) for off, ts, k, v in self._records
            )
        if not self._records:
            return b""
        first = self._records[0][0]
        inner = b"".join(
            _encode_message(off if self.magic == 0 else off - first, self.magic, ts_bit, ts, k, v)
            for off, ts, k, v in self._records
        )
        if self.codec == CODEC_LZ4 and self.magic == 0:
            payload = compression.compress_lz4_legacy(inner)
        else:
            payload = compression.compress(self.codec, inner)
        wrapper_ts = max(ts for _, ts, _, _ in self._records)
        return _encode_message(
            self._records[-1][0], self.magic, self.codec | ts_bit, wrapper_ts, None, payload
        )
