"""Records of a v2 batch's records section, decoded: the Record tuple and decode_records.

Each record (KIP-98):

  length varint | attributes int8 | timestampDelta varlong | offsetDelta varint
  keyLength varint | key | valueLength varint | value
  headerCount varint | [headerKeyLength varint | key | headerValueLength varint | value]

Lengths of -1 mean null (keys, values, header values). `length` counts the
bytes after itself.

The decoder reads runs of same-framed records with strided slices
(framing.run_shape) and everything else one record at a time through the one
varint codec; the compiled fast path (pylog.core.records.fastpath) replaces both.
"""
from __future__ import annotations

import struct
from itertools import repeat
from operator import add, lshift, xor
from typing import NamedTuple, Optional

from pylog.core.records import fastpath
from pylog.core.records.errors import CorruptRecordError, MalformedVarintError
from pylog.core.records.framing import run_shape, run_tables
from pylog.core.records.header import NO_SEQUENCE, BatchHeader
from pylog.core.records.varint import decode_varint_py as decode_varint
from pylog.core.records.varint import decode_varlong_py as decode_varlong

__all__ = ["Record", "decode_records", "decode_records_py", "record_sequence"]

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
    one, two, seq1, seq2_lo, seq2_hi = run_tables()
    stop = pos + k * size
    if ow == 1:
        ob = data[pos + oj : stop : size]
        od = one[ob[0]]
        if 0 <= od and ob == seq1[od : od + k]:
            offsets = range(base_offset + od, base_offset + od + k)
        else:
            offsets = map(add, repeat(base_offset), map(one.__getitem__, ob))
    else:
        lo = data[pos + oj : stop : size]
        hi = data[pos + oj + 1 : stop : size]
        od = two[(hi[0] << 7) ^ lo[0]]
        if 0 <= od and lo == seq2_lo[od : od + k] and hi == seq2_hi[od : od + k]:
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
            key, pos = _length_prefixed(data, pos, index, "key")
            value, pos = _length_prefixed(data, pos, index, "value")
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


decode_records_py = decode_records
decode_records = fastpath.choose("decode_records", decode_records_py)
