"""The schema registry's wire format: byte 0 is the magic 0, bytes 1-4 the schema id
(big-endian int32), then the payload. Protobuf payloads start with the message
indexes that name the message within the .proto file: a zigzag varint count and
that many zigzag varint indexes, with the single byte 0 standing for [0] (the
first message), as Confluent's serialisers write them.
"""
from __future__ import annotations

import struct

MAGIC = 0
_HEADER = struct.Struct(">bI")


class WireFormatError(ValueError):
    """Bytes that are not in the registry's wire format."""


def frame(schema_id: int, payload: bytes) -> bytes:
    """Magic byte + schema id + payload."""
    return _HEADER.pack(MAGIC, schema_id) + payload


def unframe(data: bytes) -> tuple[int, memoryview]:
    """(schema id, payload view) of framed bytes; WireFormatError when they are not framed."""
    if data is None or len(data) < 5:
        raise WireFormatError(f"{0 if data is None else len(data)} bytes: too short for the registry's wire format")
    if data[0] != MAGIC:
        raise WireFormatError(f"unknown magic byte {data[0]} (the registry's wire format starts with 0)")
    schema_id = _HEADER.unpack_from(data, 0)[1]
    return schema_id, memoryview(data)[5:]


def _zigzag(n: int) -> int:
    return (n << 1) ^ (n >> 63)


def _write_varint(out: bytearray, n: int) -> None:
    n &= 0xFFFFFFFFFFFFFFFF
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def _read_varint(buf, pos: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if pos >= len(buf):
            raise WireFormatError("truncated Protobuf message indexes")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise WireFormatError("a Protobuf message index varint longer than 10 bytes")
    return (result >> 1) ^ -(result & 1), pos


def encode_indexes(indexes: list[int]) -> bytes:
    """The message-index prefix of a Protobuf payload; [0] is the single byte 0."""
    if list(indexes) == [0]:
        return b"\x00"
    out = bytearray()
    _write_varint(out, _zigzag(len(indexes)))
    for i in indexes:
        _write_varint(out, _zigzag(i))
    return bytes(out)


def decode_indexes(payload) -> tuple[list[int], int]:
    """(message indexes, bytes they took) at the start of a Protobuf payload."""
    n, pos = _read_varint(payload, 0)
    if n == 0:
        return [0], pos
    if n < 0 or n > 1024:
        raise WireFormatError(f"{n} Protobuf message indexes: not the registry's wire format")
    out = []
    for _ in range(n):
        i, pos = _read_varint(payload, pos)
        out.append(i)
    return out, pos
