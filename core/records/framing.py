"""The v2 record framing: varint tables, runs of same-framed records, and the
validating walk a broker runs over a produced batch.

A v2 record is: length varint, attributes int8, timestampDelta varlong,
offsetDelta varint, key (length varint, -1 = null), value (same), header
count varint, headers (key length + UTF-8 key, value length + value).

Producers mostly write runs of records with one framing (same size, key and
value lengths, no headers; only the deltas and the payload bytes differ).
`run_shape` recognises such a run with strided slices, so both the decoder
(batch.py) and `check_records` treat a whole run with a few C-level calls;
anything else is walked one record at a time, still without building
objects per record.
"""
from __future__ import annotations

import functools
import re
from typing import NamedTuple

from pylog.core.records.errors import CorruptRecordError
from pylog.core.records import fastpath
from pylog.core.records.varint import decode_varint_py as decode_varint, decode_varlong_py as decode_varlong


@functools.lru_cache(maxsize=None)
def run_tables() -> tuple:
    """(ZIGZAG_1, ZIGZAG_2, SEQ1, SEQ2_LO, SEQ2_HI), made on first use (a compiled install
    walks batches in C and never needs them).

    ZIGZAG_1[b] and ZIGZAG_2[(b2 << 7) ^ b1]: the zig-zag values of one-byte varints and of
    two-byte varints b1 b2 (b1 >= 0x80, b2 < 0x80; (b2 << 7) ^ b1 is a bijection onto
    range(2**14) that costs one operation fewer than reassembling the 14 bits), what the
    strided run checks look up for a whole column. SEQ1, SEQ2_LO, SEQ2_HI: the varints of
    offset deltas 0, 1, 2, ... (one byte for 0..63; low and high byte for 0..8191), to
    recognise the usual consecutive offsets in one compare."""
    one = [(u >> 1) ^ -(u & 1) for u in range(0x80)]
    two = [0] * (1 << 14)
    for b1 in range(0x80, 0x100):
        for b2 in range(0x80):
            u = (b1 & 0x7F) | (b2 << 7)
            two[(b2 << 7) ^ b1] = (u >> 1) ^ -(u & 1)
    return (one, two, bytes(range(0, 128, 2)), bytes(((2 * i) & 0x7F) | 0x80 for i in range(0x2000)),
            bytes((2 * i) >> 7 for i in range(0x2000)))


_LOW_RUN = re.compile(rb"[\x00-\x7f]*")
_HIGH_RUN = re.compile(rb"[\x80-\xff]*")
# a zig-zag varint is negative when bit 0 of its first byte is set
_EVEN_BYTES = bytes(range(0, 256, 2))
_HIGH_BYTES = bytes(range(0x80, 0x100))
_NOT_BYTE: dict = {}


def _first_not(b: int):
    """A compiled pattern finding the first byte other than b (a C-speed scan)."""
    p = _NOT_BYTE.get(b)
    if p is None:
        p = _NOT_BYTE[b] = re.compile(b"[^" + re.escape(bytes((b,))) + b"]")
    return p
MIN_RUN = 4
_INT32_MAX = 0x7FFFFFFF


def _small_varint(data, i: int, width: int) -> int:
    """The one- or two-byte varint at i whose width _varint_width found."""
    one, two = run_tables()[:2]
    return one[data[i]] if width == 1 else two[(data[i + 1] << 7) ^ data[i]]


def _varint_width(data, i: int, widest: int = 2) -> int:
    """Width of the varint at i (1 .. widest bytes), 0 when it is wider."""
    for w in range(1, widest + 1):
        if data[i + w - 1] < 0x80:
            return w
    return 0


class RunShape(NamedTuple):
    """A run of `count` records of `size` bytes each starting at a position;
    byte offsets inside each record: timestamp delta at tj (tw bytes wide),
    offset delta at oj (ow bytes), key at ks (kl bytes, -1 null), value at vs
    (vl bytes, -1 null)."""

    count: int
    size: int
    tj: int
    tw: int
    oj: int
    ow: int
    ks: int
    kl: int
    vs: int
    vl: int


def run_shape(data: bytes, pos: int, end: int, delta_width: int = 2) -> RunShape | None:
    """The run of same-framed records starting at `pos`, or None (fewer than MIN_RUN).

    The first record sets the framing: its size S, one- or two-byte varints,
    no headers. Record i of the run starts at pos + i*S, so byte j of every
    record is data[pos + j : stop : S] (one C-level slice). The run is the
    longest prefix in which the length, attributes, key length, value length
    and header count bytes equal the first record's and the offset and
    timestamp deltas keep the first record's varint widths; such records
    parse exactly as the first one does. Delta varints are at most
    `delta_width` bytes wide (the decoder reads one or two, the checker three).
    """
    try:
        lw = _varint_width(data, pos)
        if not lw:
            return None
        n = _small_varint(data, pos, lw)
        size = lw + n
        if n <= 0 or (end - pos) // size < MIN_RUN:
            return None
        b = data[pos]
        if data[pos + size] != b or data[pos + 2 * size] != b:
            return None  # the next records differ in size: not a run (cheap early exit)
        tj = lw + 1  # after the attributes byte
        tw = _varint_width(data, pos + tj, delta_width)
        oj = tj + tw
        ow = _varint_width(data, pos + oj, delta_width)
        kj = oj + ow
        kw = _varint_width(data, pos + kj)
        if not (tw and ow and kw):
            return None
        kl = _small_varint(data, pos + kj, kw)
        ks = kj + kw
        vj = ks + kl if kl > 0 else ks
        vw = _varint_width(data, pos + vj)
        if not vw:
            return None
        vl = _small_varint(data, pos + vj, vw)
        vs = vj + vw
        hj = vs + vl if vl > 0 else vs
        if kl < -1 or vl < -1 or hj + 1 != size or data[pos + hj] != 0:
            return None
    except IndexError:
        return None
    total = (end - pos) // size
    same = [*range(tj), *range(kj, ks), *range(vj, vs), hj] if kl > 0 else [*range(tj), *range(kj, vs), hj]
    # Check a window of records and widen it while the run fills it, checking only the
    # new records each time: a run that ends early never pays for the rest of the batch.
    lo, m = 0, min(total, 256)
    while True:
        k = _run_length(data, pos, size, lo, m, same, tj, tw, oj, ow)
        if k < m or m == total:
            break
        lo, m = m, min(total, m * 4)
    if k < MIN_RUN:
        return None
    return RunShape(k, size, tj, tw, oj, ow, ks, kl, vs, vl)


def _run_length(data: bytes, pos: int, size: int, lo: int, hi: int, same, tj: int, tw: int, oj: int,
                ow: int) -> int:
    """Records lo..hi-1 of the run of `size`-byte records at pos: the index of the first one
    whose framing differs from record 0's (hi when none does)."""
    start = pos + lo * size
    n = hi - lo
    k = n
    # bytes every record of the run shares with the first; the window shrinks to the
    # records that still match, so only the first difference costs a search
    for j in same:
        if not k:
            break
        s = data[start + j:start + k * size:size]
        b = data[pos + j]
        if s.count(b) != k:
            k = _first_not(b).search(s).start()
    # the delta varints keep their widths: continuation bits set on all but the last byte
    stop = start + k * size
    for j, w in ((tj, tw), (oj, ow)):
        for _ in range(w - 1):
            s = data[start + j:stop:size]
            if s.translate(None, _HIGH_BYTES):  # some byte without its continuation bit
                k = min(k, _HIGH_RUN.match(s).end())
            j += 1
        s = data[start + j:stop:size]
        if not s.isascii():
            k = min(k, _LOW_RUN.match(s).end())
    return lo + k


class RecordsCheck(NamedTuple):
    """What check_records learnt of a valid records section."""

    count: int
    first_null_key: int  # index of the first record without a key, -1 when all have one


class InvalidRecordFraming(CorruptRecordError):
    """A record of a batch does not parse; `index` is the record's index in the batch."""

    def __init__(self, index: int, message: str):
        super().__init__(f"record {index}: {message}")
        self.index = index
        self.detail = message


_SEQ3: list = []


def _seq3() -> list:
    """The three bytes of the varints of offset deltas 0 .. 2**20 - 1, built on first use."""
    if not _SEQ3:
        z = range(0, 1 << 21, 2)
        _SEQ3.extend((bytes((v & 0x7F) | 0x80 for v in z), bytes(((v >> 7) & 0x7F) | 0x80 for v in z),
                      bytes(v >> 14 for v in z)))
    return _SEQ3


def _max_offset_delta(data: bytes, start: int, stop: int, size: int, ow: int) -> int:
    """Largest offset delta of a run whose deltas are all non-negative."""
    if ow == 1:
        return max(data[start:stop:size]) >> 1  # even bytes: the value is b >> 1
    if ow == 3:  # deltas from 8192 on: the tail of a very large batch
        b0, b1, b2 = data[start:stop:size], data[start + 1:stop:size], data[start + 2:stop:size]
        first = ((b0[0] & 0x7F) | ((b1[0] & 0x7F) << 7) | (b2[0] << 14)) >> 1
        k = len(b0)
        t0, t1, t2 = _seq3()
        if b0 == t0[first:first + k] and b1 == t1[first:first + k] and b2 == t2[first:first + k]:
            return first + k - 1
        return max(((x & 0x7F) | ((y & 0x7F) << 7) | (z << 14)) >> 1 for x, y, z in zip(b0, b1, b2))
    lo = data[start:stop:size]
    hi = data[start + 1:stop:size]
    _, two, _, seq2_lo, seq2_hi = run_tables()
    first = two[(hi[0] << 7) ^ lo[0]]
    k = len(lo)
    if lo == seq2_lo[first:first + k] and hi == seq2_hi[first:first + k]:
        return first + k - 1  # consecutive, as producers write them
    return max(two[(h << 7) ^ b] for b, h in zip(lo, hi))


def check_records(data, record_count: int, last_offset_delta: int) -> RecordsCheck:
    """Walk an uncompressed records section as Kafka's DefaultRecord.readFrom does,
    without building a Python object per record.

    Checks every record's length, varints, key, value and headers against the
    bytes it declares, offset deltas within [0, last_offset_delta], and that the
    section holds exactly `record_count` records. Raises InvalidRecordFraming
    naming the first bad record."""
    if type(data) is not bytes:
        data = bytes(data)
    end = len(data)
    pos = 0
    index = 0
    null_key = -1
    chunk = 1024
    while pos < end:
        shape = run_shape(data, pos, end, 3) if end - pos >= 64 else None
        if shape is not None:
            k, size = shape.count, shape.size
            stop = pos + k * size
            o = pos + shape.oj
            if not (index + k > record_count or data[o:stop:size].translate(None, _EVEN_BYTES)
                    or _max_offset_delta(data, o, stop, size, shape.ow) > last_offset_delta):
                if shape.kl < 0 and null_key < 0:
                    null_key = index
                index += k
                pos = stop
                continue
            # something in this run is wrong: the record-by-record walk names the first bad record
        else:
            # no run here: walk some records one by one, and try runs less often
            # when the records keep differing (headers, varying sizes)
            stop = min(end, pos + chunk)
            chunk <<= 1
        while pos < stop:
            pos, key_null = _check_one(data, pos, end, index, last_offset_delta)
            if key_null and null_key < 0:
                null_key = index
            index += 1
            if index > record_count:
                raise InvalidRecordFraming(index - 1, f"more records than the {record_count} the batch declares")
    if index != record_count:
        raise InvalidRecordFraming(index, f"the batch declares {record_count} records but holds {index}")
    return RecordsCheck(index, null_key)


def _skip_nullable(data: bytes, p: int, index: int, what: str) -> tuple[int, int]:
    """(length, position after) of the key, value or header value at p (length -1: null)."""
    n, p = decode_varint(data, p)
    if n < -1:
        raise InvalidRecordFraming(index, f"{what} length {n}")
    return n, p + n if n > 0 else p


def _check_one(data: bytes, pos: int, end: int, index: int, last_offset_delta: int) -> tuple[int, bool]:
    """Check the one record at pos; returns (next position, key is null). The reference
    walk: every field through the one varint codec."""
    try:
        n, p = decode_varint(data, pos)
        rec_end = p + n
        if n <= 0 or rec_end > end:
            raise InvalidRecordFraming(index, f"length {n} does not fit the {end - p} bytes left")
        # attributes (unused by every Kafka version so far), then the timestamp delta
        _, p = decode_varlong(data, p + 1)
        od, p = decode_varint(data, p)
        if not 0 <= od <= last_offset_delta:
            raise InvalidRecordFraming(index, f"offset delta {od} outside [0, {last_offset_delta}]")
        kl, p = _skip_nullable(data, p, index, "key")
        _, p = _skip_nullable(data, p, index, "value")
        if p >= rec_end:
            raise InvalidRecordFraming(index, "key and value leave no room for the header count")
        hc, p = decode_varint(data, p)
        if hc < 0:
            raise InvalidRecordFraming(index, f"header count {hc}")
        for _ in range(hc):
            # keys are not checked as UTF-8: Kafka decodes them leniently (U+FFFD)
            hk, p = decode_varint(data, p)
            if hk < 0:
                raise InvalidRecordFraming(index, f"header key length {hk}")
            _, p = _skip_nullable(data, p + hk, index, "header value")
            if p > rec_end:
                raise InvalidRecordFraming(index, "headers run past the record's length")
        if p != rec_end:
            raise InvalidRecordFraming(index, f"fields end at byte {p - pos} of a record of {rec_end - pos} bytes")
        return rec_end, kl == -1
    except InvalidRecordFraming:
        raise
    except (IndexError, CorruptRecordError):
        raise InvalidRecordFraming(index, "runs past the end of the batch or holds a malformed varint") from None


check_records_py = check_records
check_records = fastpath.choose("check_records", check_records_py)
