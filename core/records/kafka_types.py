"""A cursor over Kafka's schema primitive types (classic and flexible/compact).

Pure byte decoding for the internal-topic decoders (`__consumer_offsets`,
`__cluster_metadata`); no I/O.
"""
from __future__ import annotations

import base64
import struct
import uuid

from pylog.core.records.errors import CorruptRecordError


class Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf, pos: int = 0):
        self.buf = bytes(buf)
        self.pos = pos

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise CorruptRecordError(f"field of {n} bytes runs past the end ({len(self.buf) - self.pos} left)")
        b = self.buf[self.pos : self.pos + n]
        self.pos += n
        return b

    def _unpack(self, fmt: str, n: int):
        return struct.unpack(fmt, self._take(n))[0]

    def int8(self) -> int:
        return self._unpack(">b", 1)

    def int16(self) -> int:
        return self._unpack(">h", 2)

    def int32(self) -> int:
        return self._unpack(">i", 4)

    def int64(self) -> int:
        return self._unpack(">q", 8)

    def float64(self) -> float:
        return self._unpack(">d", 8)

    def bool(self) -> bool:
        return self._take(1) != b"\x00"

    def uuid(self) -> str:
        raw = self._take(16)
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")

    def uvarint(self) -> int:
        shift = result = 0
        while True:
            b = self._take(1)[0]
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7
            if shift > 35:
                raise CorruptRecordError("unsigned varint too long")

    def string(self, compact: bool = False, nullable: bool = False) -> str | None:
        n = self.uvarint() - 1 if compact else self.int16()
        if n < 0:
            if nullable:
                return None
            raise CorruptRecordError("null string in a non-nullable field")
        return self._take(n).decode("utf-8", "replace")

    def bytes_(self, compact: bool = False, nullable: bool = False) -> bytes | None:
        n = self.uvarint() - 1 if compact else self.int32()
        if n < 0:
            if nullable:
                return None
            raise CorruptRecordError("null bytes in a non-nullable field")
        return self._take(n)

    def array(self, item, compact: bool = False, nullable: bool = False) -> list | None:
        n = self.uvarint() - 1 if compact else self.int32()
        if n < 0:
            if nullable:
                return None
            raise CorruptRecordError("null array in a non-nullable field")
        return [item() for _ in range(n)]

    def tagged_fields(self) -> dict[int, bytes]:
        out = {}
        for _ in range(self.uvarint()):
            tag = self.uvarint()
            out[tag] = self._take(self.uvarint())
        return out

    @property
    def remaining(self) -> int:
        return len(self.buf) - self.pos


def b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def uuid_text(u: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode("ascii")
