"""Variable-length integers as Kafka writes them.

Kafka's varint and varlong are protobuf base-128 varints of the zig-zag
encoded value (so -1 costs one byte). The unsigned form (no zig-zag) is what
the flexible protocol versions use for compact lengths and tagged fields.

Decoders take (buffer, position) and return (value, next_position); they
index the buffer directly so bytes, bytearray and memoryview all work.
This is the one varint codec of the pure-Python implementation; the compiled
fast path (pylog.core.records.fastpath) has its own, tested against this one.
"""
from __future__ import annotations

from pylog.core.records import fastpath
from pylog.core.records.errors import MalformedVarintError

__all__ = [
    "zigzag",
    "unzigzag",
    "encode_varint",
    "encode_varlong",
    "encode_uvarint",
    "decode_varint",
    "decode_varlong",
    "decode_uvarint",
    "write_varint",
    "write_uvarint",
    "size_of_varint",
    "size_of_uvarint",
]

# A varint holds at most 32 bits (5 bytes), a varlong 64 bits (10 bytes).
_MAX_VARINT_BYTES = 5
_MAX_VARLONG_BYTES = 10


def zigzag(value: int) -> int:
    """Map signed to unsigned so small magnitudes stay small: 0,-1,1,-2 -> 0,1,2,3."""
    return (value << 1) ^ (value >> 63)


def unzigzag(value: int) -> int:
    return (value >> 1) ^ -(value & 1)


def encode_uvarint(value: int) -> bytes:
    if value < 0:
        raise ValueError(f"unsigned varint cannot hold {value}")
    if value < 0x80:
        return _SMALL[value]
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """Zig-zag varint (Kafka varint and varlong share this encoding)."""
    if -0x2000 <= value < 0x2000:
        # The common case for deltas and lengths: from the table, made on first use.
        return (_ZZ_TABLE or _zz_table())[value + 0x2000]
    return encode_uvarint((value << 1) ^ (value >> 63))


encode_varlong = encode_varint


def write_uvarint(out: bytearray, value: int) -> None:
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


def write_varint(out: bytearray, value: int) -> None:
    out += encode_varint(value)


def size_of_uvarint(value: int) -> int:
    size = 1
    while value >= 0x80:
        value >>= 7
        size += 1
    return size


def size_of_varint(value: int) -> int:
    return size_of_uvarint((value << 1) ^ (value >> 63))


def decode_uvarint(buf, pos: int = 0, max_bytes: int = _MAX_VARLONG_BYTES) -> tuple[int, int]:
    """Decode an unsigned varint at `pos`; raise CorruptRecordError if it runs off the end."""
    try:
        b = buf[pos]
        if b < 0x80:
            return b, pos + 1
        result = b & 0x7F
        shift = 7
        start = pos
        pos += 1
        while True:
            b = buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result, pos
            shift += 7
            if pos - start >= max_bytes:
                raise MalformedVarintError(f"varint longer than {max_bytes} bytes", start)
    except IndexError:
        raise MalformedVarintError("varint runs past the end of the buffer", pos) from None


def decode_varint(buf, pos: int = 0) -> tuple[int, int]:
    """Decode a zig-zag varint (32-bit) at `pos`. Bits beyond 32 are dropped, as Java's
    int arithmetic in Kafka's ByteUtils.readVarint drops them."""
    try:
        b = buf[pos]
    except IndexError:
        raise MalformedVarintError("varint runs past the end of the buffer", pos) from None
    if b < 0x80:  # one byte: most lengths and deltas
        return (b >> 1) ^ -(b & 1), pos + 1
    value, pos = decode_uvarint(buf, pos, _MAX_VARINT_BYTES)
    value &= 0xFFFFFFFF
    return (value >> 1) ^ -(value & 1), pos


def decode_varlong(buf, pos: int = 0) -> tuple[int, int]:
    """Decode a zig-zag varlong (64-bit) at `pos`; bits beyond 64 are dropped (Java's long)."""
    try:
        b = buf[pos]
    except IndexError:
        raise MalformedVarintError("varint runs past the end of the buffer", pos) from None
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    value, pos = decode_uvarint(buf, pos, _MAX_VARLONG_BYTES)
    value &= 0xFFFFFFFFFFFFFFFF
    return (value >> 1) ^ -(value & 1), pos


# The reference implementations (what the compiled twins are tested against), then the
# public names bound to whichever implementation pylog.core.records.fastpath chose.
encode_varint_py, decode_varint_py, decode_varlong_py = encode_varint, decode_varint, decode_varlong
encode_varint = fastpath.choose("encode_varint", encode_varint_py)
encode_varlong = encode_varint
decode_varint = fastpath.choose("decode_varint", decode_varint_py)
decode_varlong = fastpath.choose("decode_varlong", decode_varlong_py)


_SMALL = [bytes((i,)) for i in range(0x80)]
# _ZZ_TABLE[v + 0x2000] is the zig-zag varint of v for -8192 <= v < 8192 (every value that
# fits in two bytes), made on first use: a compiled install encodes in C and never needs it
_ZZ_TABLE: list = []


def _zz_table() -> list:
    if not _ZZ_TABLE:
        table = [_SMALL[u] if u < 0x80 else bytes(((u & 0x7F) | 0x80, u >> 7))
                 for u in (((v << 1) ^ (v >> 63)) for v in range(-0x2000, 0x2000))]
        _ZZ_TABLE.extend(table)  # one extend: two threads at once still leave the first 16384 right
    return _ZZ_TABLE
