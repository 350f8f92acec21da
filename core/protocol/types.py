"""Wire types of the Kafka protocol and the primitive readers/writers.

A type is a small descriptor object; the schema compiler (compiler.py) turns
fields of these types into generated Python that reads/writes them in bulk
(consecutive fixed-size fields become one precompiled struct.Struct call).
The helpers here cover what cannot be batched: varints, strings, bytes.

Readers take (buf, pos, end) where buf is a memoryview and return
(value, next_pos); they raise Truncated when the data runs out (the varint
readers CorruptRecordError), which the codec turns into InvalidRequestError.
"""
from __future__ import annotations

import struct
import uuid

from pylog.core.records.varint import decode_uvarint, decode_varlong, encode_uvarint, encode_varlong, write_uvarint

__all__ = [
    "Prim", "INT8", "INT16", "INT32", "INT64", "UINT16", "UINT32", "FLOAT64", "BOOL",
    "UUID", "STRING", "BYTES", "RECORDS", "VARINT", "VARLONG", "UVARINT",
    "Array", "Struct", "ZERO_UUID", "Truncated",
    "read_uvarint", "write_uvarint", "uvarint_bytes", "skip_tagged_fields",
]

ZERO_UUID = uuid.UUID(int=0)


class Truncated(Exception):
    """Internal: the buffer ended (or a length was impossible) mid-field."""


class Prim:
    """A primitive wire type.

    fmt is the struct format character for fixed-size types (None for
    variable-size ones); kind distinguishes the variable-size families.
    """

    __slots__ = ("name", "fmt", "size", "default", "kind")

    def __init__(self, name, fmt, size, default, kind="fixed"):
        self.name = name
        self.fmt = fmt
        self.size = size
        self.default = default
        self.kind = kind

    def __repr__(self):
        return self.name


INT8 = Prim("int8", "b", 1, 0)
INT16 = Prim("int16", "h", 2, 0)
INT32 = Prim("int32", "i", 4, 0)
INT64 = Prim("int64", "q", 8, 0)
UINT16 = Prim("uint16", "H", 2, 0)
UINT32 = Prim("uint32", "I", 4, 0)
FLOAT64 = Prim("float64", "d", 8, 0.0)
BOOL = Prim("bool", "?", 1, False)
UUID = Prim("uuid", "16s", 16, ZERO_UUID)
STRING = Prim("string", None, 0, "", "string")
BYTES = Prim("bytes", None, 0, b"", "bytes")
RECORDS = Prim("records", None, 0, None, "records")
VARINT = Prim("varint", None, 0, 0, "varint")
VARLONG = Prim("varlong", None, 0, 0, "varint")
UVARINT = Prim("uvarint", None, 0, 0, "uvarint")


class Array:
    """An array of a primitive type or of a struct (a list of Fields)."""

    __slots__ = ("elem",)

    def __init__(self, elem):
        self.elem = elem

    def __repr__(self):
        return f"Array({self.elem!r})"


class Struct:
    """A single nested struct (not an array), e.g. a tagged LeaderIdAndEpoch."""

    __slots__ = ("fields",)

    def __init__(self, *fields):
        self.fields = list(fields)

    def __repr__(self):
        return f"Struct({self.fields!r})"


# --- varints -----------------------------------------------------------------
# One varint codec for protocol and records (core/records/varint.py): compact
# lengths and tags are unsigned varints, the few signed fields varlongs.
# A malformed one raises CorruptRecordError, a decode failure like Truncated.

read_uvarint = decode_uvarint
read_varlong = decode_varlong
uvarint_bytes = encode_uvarint
varlong_bytes = encode_varlong


def skip_tagged_fields(buf, pos, end):
    """Skip a whole tagged-field section (unknown tags are allowed)."""
    n, pos = read_uvarint(buf, pos)
    for _ in range(n):
        _, pos = read_uvarint(buf, pos)
        size, pos = read_uvarint(buf, pos)
        pos += size
        if pos > end:
            raise Truncated("tagged field runs past the end")
    return pos


# --- strings and byte fields --------------------------------------------------

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_i16_from = _I16.unpack_from
_i32_from = _I32.unpack_from
pack_i16 = _I16.pack
pack_i32 = _I32.pack


def _length(buf, pos, compact, wide):
    if compact:
        n, pos = read_uvarint(buf, pos)
        return n - 1, pos
    if wide:
        return _i32_from(buf, pos)[0], pos + 4
    return _i16_from(buf, pos)[0], pos + 2


def _sized(buf, pos, end, compact, nullable, wide, what):
    """(start, stop) of a length-prefixed field, or (None, next position) when it is null."""
    n, pos = _length(buf, pos, compact, wide)
    if n < 0:
        if nullable and n == -1:
            return None, pos
        raise Truncated(f"null or negative length for a non-nullable {what}")
    stop = pos + n
    if stop > end:
        raise Truncated(f"{what} runs past the end")
    return pos, stop


def read_string(buf, pos, end, compact, nullable):
    """(str or None, next position); raises Truncated on bad lengths."""
    start, stop = _sized(buf, pos, end, compact, nullable, False, "string")
    return None if start is None else str(buf[start:stop], "utf-8"), stop


def read_bytes(buf, pos, end, compact, nullable):
    """(bytes or None, next position); raises Truncated on bad lengths."""
    start, stop = _sized(buf, pos, end, compact, nullable, True, "bytes field")
    return None if start is None else bytes(buf[start:stop]), stop


def read_records(buf, pos, end, compact, nullable):
    """Record sets stay zero-copy: a memoryview slice of the frame."""
    start, stop = _sized(buf, pos, end, compact, True, True, "records")
    return None if start is None else buf[start:stop], stop


def _write_sized(out, data, compact, wide):
    """Append a length (compact, int32 when `wide`, else int16) and the data."""
    if compact:
        write_uvarint(out, len(data) + 1)
    else:
        out += pack_i32(len(data)) if wide else pack_i16(len(data))
    out += data


def write_string(out, value, compact, nullable):
    """Append a string (None: null where nullable, else empty)."""
    if value is None and nullable:
        out += b"\x00" if compact else b"\xff\xff"
        return
    _write_sized(out, (value or "").encode("utf-8"), compact, False)


def write_bytes(out, value, compact, nullable):
    """Append bytes (None: null where nullable, else empty)."""
    if value is None and nullable:
        out += b"\x00" if compact else b"\xff\xff\xff\xff"
        return
    _write_sized(out, b"" if value is None else value, compact, True)


def write_records(out, value, compact, parts):
    """Write a record set; an object with .length (a file slice) becomes its own part."""
    if value is None:
        out += b"\x00" if compact else b"\xff\xff\xff\xff"
        return
    if isinstance(value, (bytes, bytearray, memoryview)):
        n = value.nbytes if isinstance(value, memoryview) else len(value)
        if compact:
            write_uvarint(out, n + 1)
        else:
            out += pack_i32(n)
        out += value
        return
    n = value.length
    if compact:
        write_uvarint(out, n + 1)
    else:
        out += pack_i32(n)
    if parts is None:
        raise TypeError("a records object with .length needs encode_response_parts")
    if n:
        parts.append(bytes(out))
        del out[:]
        parts.append(value)


def uuid_bytes(value):
    """16 bytes of a UUID (None: zeros)."""
    if value is None:
        return b"\x00" * 16
    if isinstance(value, uuid.UUID):
        return value.bytes
    if isinstance(value, (bytes, bytearray)) and len(value) == 16:
        return bytes(value)
    raise TypeError(f"expected a uuid.UUID, got {value!r}")


_ZERO16 = b"\x00" * 16


def make_uuid(raw):
    """A uuid.UUID from 16 bytes (the shared ZERO_UUID for zeros)."""
    if raw == _ZERO16:
        return ZERO_UUID
    return uuid.UUID(bytes=bytes(raw))
