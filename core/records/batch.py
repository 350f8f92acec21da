"""RecordBatch v2 (magic 2): a reader and a builder.

Batch layout: the 61-byte header (see header.py) then the records, compressed
as one block when the codec bits are set. Each record (KIP-98):

  length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
  keyLength varint | key | valueLength varint | value
  headerCount varint | [headerKeyLength varint | key | headerValueLength varint | value]

Lengths of -1 mean null (keys, values, header values). `length` counts the
bytes after itself.

The decoder reads runs of same-framed records with strided slices
(framing.run_shape) and everything else one record at a time through the one
varint codec; the compiled fast path (pylog.core.fastpath) replaces both.
"""
from __future__ import annotations

import struct
import time
from itertools import repeat
from operator import add, attrgetter, lshift, xor
from typing import Iterable, Iterator, NamedTuple, Optional

from crc32c import crc32c

from pylog.core.records import compression
from pylog.core.records.errors import (
    CorruptRecordError,
    CrcMismatchError,
    MalformedVarintError,
    RecordCountMismatchError,
    RecordFormatError,
    UnknownCodecError,
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
from pylog.core.records.framing import SEQ1, SEQ2_HI, SEQ2_LO, ZIGZAG_1, ZIGZAG_2, run_shape
from pylog.core import fastpath
from pylog.core.records.varint import decode_varint_py as decode_varint
from pylog.core.records.varint import decode_varlong_py as decode_varlong
from pylog.core.records.varint import encode_varint_py as encode_varint

__all__ = ["Record", "RecordBatch", "BatchBuilder", "build_batch", "decode_records", "encode_headers", "encode_record",
           "record_size", "record_sequence"]

Header = tuple  # (str key, bytes | None value)


class Record(NamedTuple):
    """One record as read from any format (legacy records have no headers).

    headers is a tuple of (str key, bytes | None value) pairs, () when there
    are none: immutable like the record, and one shared empty tuple costs
    nothing per record (a fresh list per record measurably slows decoding).
    The producer sequence of a record is batch-level data: see
    `record_sequence(header, record)`.
    """

    offset: int
    timestamp: int
    key: Optional[bytes]
    value: Optional[bytes]
    headers: tuple = ()


_new_tuple = tuple.__new__


def record_sequence(header: BatchHeader, record: "Record") -> int:
    """The producer sequence of a record (wraps at 2**31 as in Kafka), or -1."""
    if header.base_sequence < 0:
        return NO_SEQUENCE
    return (header.base_sequence + record.offset - header.base_offset) & 0x7FFFFFFF


def _decode_headers(data, pos: int, count: int, index: int) -> tuple[tuple, int]:
    headers = []
    for _ in range(count):
        kl, pos = decode_varint(data, pos)
        if kl < 0:
            raise CorruptRecordError(f"record {index}: header key length {kl}")
        raw = data[pos : pos + kl]
        if len(raw) != kl:
            raise CorruptRecordError(f"record {index}: header key runs past the record")
        try:
            hkey = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise CorruptRecordError(f"record {index}: header key is not UTF-8") from None
        pos += kl
        hval, pos = _length_prefixed(data, pos, index, "header value")
        headers.append((hkey, hval))
    return tuple(headers), pos


def decode_records(
    data: bytes,
    base_offset: int,
    base_timestamp: int,
    log_append_time: Optional[int] = None,
) -> list:
    """Decode every record in `data` (an uncompressed records section) into Records.

    Raises CorruptRecordError when a record does not parse or its fields do
    not fill exactly its declared length.

    Two decoders share the work. Producers mostly write runs of records with
    the same framing (same size, key and value lengths, no headers: only the
    offset and timestamp deltas and the payload differ); _decode_run checks a
    whole run at once with strided slices and builds its Records with
    C-level map/zip, about a third of the per-record cost. Everything else
    (and every error) goes through _decode_generic, one record at a time.
    """
    if type(data) is not bytes:
        data = bytes(data)
    out: list = []
    end = len(data)
    pos = 0
    chunk = 4096
    while pos < end:
        nxt = _decode_run(data, pos, end, base_offset, base_timestamp, out)
        if nxt == pos:
            # no run here: decode some records one by one, and try runs less
            # often when the records keep differing
            nxt = _decode_generic(data, pos, min(end, pos + chunk), end, base_offset, base_timestamp, out)
            chunk <<= 2
        pos = nxt
    if log_append_time is not None:
        # LogAppendTime: every record reads the batch's maxTimestamp (rare path)
        out = [r._replace(timestamp=log_append_time) for r in out]
    return out


_RUN_STRUCTS: dict = {}  # (size, key at, key len, value at, value len, records) -> struct.Struct
_MAX_STRUCT_RECORDS = 512  # bounds a Struct's size (~64 bytes per record) and the cache's


def _run_struct(shape) -> struct.Struct:
    """The Struct that unpacks the key and value (when not null or empty) of `count`
    consecutive records of one framing."""
    size, ks, kl, vs, vl, count = shape
    fmt = [f"{ks}x"]
    if kl > 0:
        fmt.append(f"{kl}s")
    fmt.append(f"{vs - (ks + kl if kl > 0 else ks)}x")
    if vl > 0:
        fmt.append(f"{vl}s")
    fmt.append(f"{size - (vs + vl if vl > 0 else vs)}x")
    if len(_RUN_STRUCTS) >= 256:
        _RUN_STRUCTS.clear()
    st = _RUN_STRUCTS[shape] = struct.Struct("".join(fmt) * count)
    return st


def _decode_run(data: bytes, pos: int, end: int, base_offset: int, base_ts: int, out: list) -> int:
    """Decode the run of same-framed records starting at `pos` (framing.run_shape);
    return where it ends, or `pos` when there is no run there."""
    shape = run_shape(data, pos, end)
    if shape is None:
        return pos
    k, size, tj, tw, oj, ow, ks, kl, vs, vl = shape
    one = ZIGZAG_1
    two = ZIGZAG_2
    stop = pos + k * size
    if ow == 1:
        ob = data[pos + oj : stop : size]
        od = one[ob[0]]
        if 0 <= od and ob == SEQ1[od : od + k]:
            offsets = range(base_offset + od, base_offset + od + k)
        else:
            offsets = map(add, repeat(base_offset), map(one.__getitem__, ob))
    else:
        lo = data[pos + oj : stop : size]
        hi = data[pos + oj + 1 : stop : size]
        od = two[(hi[0] << 7) ^ lo[0]]
        if 0 <= od and lo == SEQ2_LO[od : od + k] and hi == SEQ2_HI[od : od + k]:
            offsets = range(base_offset + od, base_offset + od + k)
        else:
            offsets = map(add, repeat(base_offset), map(two.__getitem__, map(xor, map(lshift, hi, repeat(7)), lo)))
    if tw == 1:
        tb = data[pos + tj : stop : size]
        if tb.count(0) == k:
            stamps = repeat(base_ts)
        else:
            stamps = map(add, repeat(base_ts), map(one.__getitem__, tb))
    else:
        lo = data[pos + tj : stop : size]
        hi = data[pos + tj + 1 : stop : size]
        stamps = map(add, repeat(base_ts), map(two.__getitem__, map(xor, map(lshift, hi, repeat(7)), lo)))
    # keys and values come out of cached Structs' unpack_from (about 15 ns per field,
    # against ~140 for a slice object plus __getitem__). Struct record counts are
    # multiples of 16 or below 16, so runs of any length share a few compiled Structs
    # and take at most two calls (up to 512 records).
    fields = ()
    p = pos
    left = k
    while left:
        count = min(_MAX_STRUCT_RECORDS, left - (left & 15)) if left >= 16 else left
        shape = (size, ks, kl, vs, vl, count)
        st = _RUN_STRUCTS.get(shape)
        if st is None:
            st = _run_struct(shape)
        fields += st.unpack_from(data, p)
        p += count * size
        left -= count
    if kl > 0 and vl > 0:
        keys = fields[0::2]
        values = fields[1::2]
    elif kl > 0:
        keys = fields
        values = repeat(None if vl < 0 else b"")
    else:
        keys = repeat(None if kl < 0 else b"")
        values = fields if vl > 0 else repeat(None if vl < 0 else b"")
    out.extend(map(_new_tuple, repeat(Record), zip(offsets, stamps, keys, values, repeat(()))))
    return stop


def _decode_generic(data, pos: int, stop: int, end: int, base_offset: int, base_timestamp: int, out: list) -> int:
    """Decode records one at a time from `pos` until `stop` (<= end); return the position reached.

    The reference decoder: every field through the one varint codec (varint.py).
    """
    append = out.append
    new = _new_tuple
    no_headers = ()
    while pos < stop:
        index = len(out)
        try:
            n, pos = decode_varint(data, pos)
            rec_end = pos + n
            if n <= 0 or rec_end > end:
                raise CorruptRecordError(f"record {index}: length {n} does not fit the {end - pos} bytes left")
            # attributes (pos) are unused by every Kafka version so far; timestampDelta follows
            tsd, pos = decode_varlong(data, pos + 1)
            od, pos = decode_varint(data, pos)
            n, pos = decode_varint(data, pos)
            if n >= 0:
                key = data[pos:pos + n]
                pos += n
            elif n == -1:
                key = None
            else:
                raise CorruptRecordError(f"record {index}: key length {n}")
            n, pos = decode_varint(data, pos)
            if n >= 0:
                value = data[pos:pos + n]
                pos += n
            elif n == -1:
                value = None
            else:
                raise CorruptRecordError(f"record {index}: value length {n}")
            n, pos = decode_varint(data, pos)
            if n == 0:
                headers = no_headers
            elif n > 0:
                headers, pos = _decode_headers(data, pos, n, index)
            else:
                raise CorruptRecordError(f"record {index}: header count {n}")
        except MalformedVarintError:
            raise CorruptRecordError(f"record {index} runs past the end of the batch or holds a malformed varint") \
                from None
        if pos != rec_end:
            raise CorruptRecordError(f"record {index}: fields end at {pos}, its length says {rec_end}")
        append(new(Record, (base_offset + od, base_timestamp + tsd, key, value, headers)))
    return pos


def _length_prefixed(data, pos: int, index: int, what: str):
    """A key or value: (bytes or None, next position)."""
    n, pos = decode_varint(data, pos)
    if n >= 0:
        return data[pos:pos + n], pos + n
    if n == -1:
        return None, pos
    raise CorruptRecordError(f"record {index}: {what} length {n}")


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


def encode_headers(headers) -> bytes:
    """A record's headers section: count, then each key (str or bytes) and value
    (bytes, str as UTF-8, or None). The one encoder of record headers."""
    out = bytearray(encode_varint(len(headers)))
    for hkey, hval in headers:
        kb = hkey.encode("utf-8") if isinstance(hkey, str) else bytes(hkey)
        out += encode_varint(len(kb))
        out += kb
        if hval is None:
            out += b"\x01"
        else:
            if isinstance(hval, str):
                hval = hval.encode("utf-8")
            out += encode_varint(len(hval))
            out += hval
    return bytes(out)


def encode_record(offset_delta: int, timestamp_delta: int, key, value, headers=()) -> bytes:
    """One record's bytes, length prefix included."""
    parts = [b"\x00", encode_varint(timestamp_delta), encode_varint(offset_delta)]
    for field in (key, value):
        if field is None:
            parts.append(b"\x01")
        else:
            parts.append(encode_varint(len(field)))
            parts.append(bytes(field))
    parts.append(encode_headers(headers) if headers else b"\x00")
    body = b"".join(parts)
    return encode_varint(len(body)) + body


encode_record_py = encode_record
encode_record = _encode_record = fastpath.choose("encode_record", encode_record_py)


def record_size(offset_delta: int, timestamp_delta: int, key, value, headers=()) -> int:
    """Encoded size of one record (length prefix included), for size estimates."""
    return len(encode_record(offset_delta, timestamp_delta, key, value, headers))


class BatchBuilder:
    """Builds one v2 batch: append records, then build() the bytes.

    Records are encoded as they are appended (so size_in_bytes() is exact
    before compression); build() compresses, fills the header and the CRC.
    baseTimestamp is the first record's timestamp, or the delete horizon when
    one is given (the flag is then set, as KIP-534's cleaner writes it).
    """

    def __init__(
        self,
        magic: int = 2,
        codec: int = CODEC_NONE,
        base_offset: int = 0,
        producer_id: int = NO_PRODUCER_ID,
        producer_epoch: int = NO_PRODUCER_EPOCH,
        base_sequence: int = NO_SEQUENCE,
        is_transactional: bool = False,
        is_control: bool = False,
        timestamp_type: int = 0,
        partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
        delete_horizon: Optional[int] = None,
    ):
        if magic != 2:
            raise ValueError("BatchBuilder writes magic 2; use legacy.LegacyBuilder for 0/1")
        if codec not in compression.COMPRESSORS:
            raise UnknownCodecError(codec)
        self.magic = 2
        self.codec = codec
        self.base_offset = base_offset
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.is_control = is_control
        self.timestamp_type = timestamp_type
        self.partition_leader_epoch = partition_leader_epoch
        self.delete_horizon = delete_horizon
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
        record = _encode_record(od, timestamp - base_ts, key, value, headers)
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



decode_records_py = decode_records
decode_records = fastpath.choose("decode_records", decode_records_py)
