"""The "consumer" embedded protocol: what JoinGroup/SyncGroup carry as opaque bytes.

Kafka's ConsumerProtocolSubscription (v0 topics + user_data; v1 adds owned
partitions; v2 the generation; v3 the rack) and ConsumerProtocolAssignment
(assigned partitions + user_data; v1-v3 share the v0 layout). Neither is
flexible. Decoding a newer version than we know reads the fields we know:
Kafka only ever appends fields, so that is what its own decoders do.
No I/O.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass, field

from pylog.core.errors import InconsistentGroupProtocolError

SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


@dataclass
class Subscription:
    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[tuple[str, int]] = field(default_factory=list)
    generation_id: int = -1
    rack_id: str | None = None
    version: int = SUBSCRIPTION_VERSION


@dataclass
class Assignment:
    partitions: list[tuple[str, int]]
    user_data: bytes | None = None
    version: int = ASSIGNMENT_VERSION


# ---------------------------------------------------------------- writing
def _string(out: list, s: str | None) -> None:
    if s is None:
        out.append(_I16.pack(-1))
    else:
        b = s.encode()
        out.append(_I16.pack(len(b)))
        out.append(b)


def _bytes(out: list, b: bytes | None) -> None:
    if b is None:
        out.append(_I32.pack(-1))
    else:
        out.append(_I32.pack(len(b)))
        out.append(bytes(b))


def _topic_partitions(out: list, tps) -> None:
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    out.append(_I32.pack(len(by_topic)))
    for t in sorted(by_topic):
        _string(out, t)
        ps = sorted(by_topic[t])
        out.append(_I32.pack(len(ps)))
        out.append(struct.pack(f">{len(ps)}i", *ps))


def encode_subscription(sub: Subscription) -> bytes:
    v = min(sub.version, SUBSCRIPTION_VERSION)
    out: list = [_I16.pack(v), _I32.pack(len(sub.topics))]
    for t in sub.topics:
        _string(out, t)
    _bytes(out, sub.user_data)
    if v >= 1:
        _topic_partitions(out, sub.owned_partitions)
    if v >= 2:
        out.append(_I32.pack(sub.generation_id))
    if v >= 3:
        _string(out, sub.rack_id)
    return b"".join(out)


def encode_assignment(a: Assignment) -> bytes:
    out: list = [_I16.pack(min(a.version, ASSIGNMENT_VERSION))]
    _topic_partitions(out, a.partitions)
    _bytes(out, a.user_data)
    return b"".join(out)


# ---------------------------------------------------------------- reading
class _Reader:
    __slots__ = ("buf", "pos")

    def __init__(self, buf):
        self.buf = bytes(buf)
        self.pos = 0

    def _take(self, n: int) -> bytes:
        if n < 0 or self.pos + n > len(self.buf):
            raise InconsistentGroupProtocolError("truncated consumer protocol metadata")
        b = self.buf[self.pos:self.pos + n]
        self.pos += n
        return b

    def i16(self) -> int:
        return _I16.unpack(self._take(2))[0]

    def i32(self) -> int:
        return _I32.unpack(self._take(4))[0]

    def string(self) -> str | None:
        n = self.i16()
        return None if n < 0 else self._take(n).decode("utf-8", "replace")

    def bytes_(self) -> bytes | None:
        n = self.i32()
        return None if n < 0 else self._take(n)

    def at_end(self) -> bool:
        return self.pos >= len(self.buf)

    def topic_partitions(self) -> list[tuple[str, int]]:
        out = []
        for _ in range(self._count()):
            t = self.string() or ""
            n = self._count()
            out.extend((t, p) for p in struct.unpack(f">{n}i", self._take(4 * n)))
        return out

    def _count(self) -> int:
        n = self.i32()
        if n < 0 or n > len(self.buf):
            if n == -1:
                return 0
            raise InconsistentGroupProtocolError(f"bad array length {n} in consumer protocol metadata")
        return n


def decode_subscription(data) -> Subscription:
    r = _Reader(data)
    v = r.i16()
    if v < 0:
        raise InconsistentGroupProtocolError(f"bad subscription version {v}")
    topics = [r.string() or "" for _ in range(r._count())]
    user_data = r.bytes_()
    sub = Subscription(topics, user_data, version=v)
    # fields of a version may be absent when an old client mislabels; stop at the end
    if v >= 1 and not r.at_end():
        sub.owned_partitions = r.topic_partitions()
    if v >= 2 and not r.at_end():
        sub.generation_id = r.i32()
    if v >= 3 and not r.at_end():
        sub.rack_id = r.string()
    return sub


def decode_assignment(data) -> Assignment:
    if not data:
        return Assignment([], None, 0)  # an empty assignment (e.g. from a failed leader)
    r = _Reader(data)
    v = r.i16()
    parts = r.topic_partitions()
    user_data = r.bytes_() if not r.at_end() else None
    return Assignment(parts, user_data, v)
