"""Choosing a partition the way the Java client does.

Keyed records: `toPositive(murmur2(key)) % numPartitions` (Utils.murmur2 with
seed 0x9747b28c, toPositive = `n & 0x7fffffff`), so the same key lands on the
same partition as with any Java-client producer. Keyless records: the sticky
partitioner (KIP-480) keeps one partition until its batch is full, then moves on.
"""
from __future__ import annotations

import array
import functools
import random
import sys
from itertools import repeat

from pylog.core.client import fastpath

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's murmur2 (signed 32-bit result, as Java's int)."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    n4 = length & ~3
    # whole 4-byte little-endian words
    for i in range(0, n4, 4):
        k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24)
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rest = length & 3
    if rest == 3:
        h ^= data[n4 + 2] << 16
    if rest >= 2:
        h ^= data[n4 + 1] << 8
    if rest >= 1:
        h ^= data[n4]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(n: int) -> int:
    return n & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    return (murmur2(key) & 0x7FFFFFFF) % num_partitions


class StickyPartitioner:
    """Per topic, the partition keyless records currently stick to."""

    __slots__ = ("_sticky",)

    def __init__(self):
        self._sticky: dict[str, int] = {}

    def partition(self, topic: str, num_partitions: int, available: list[int] | None = None) -> int:
        p = self._sticky.get(topic)
        if p is None or p >= num_partitions:
            p = self.next_partition(topic, num_partitions, available, p)
        return p

    def next_partition(self, topic: str, num_partitions: int, available: list[int] | None = None,
                       prev: int | None = None) -> int:
        """Called when the sticky partition's batch filled up: pick another one."""
        choices = available if available else range(num_partitions)
        if len(choices) > 1 and prev is not None:
            choices = [c for c in choices if c != prev]
        p = random.choice(list(choices)) if len(choices) > 1 else choices[0]
        self._sticky[topic] = p
        return p


def _lanes(data: bytes, count: int, stride: int, offset: int, width: int) -> int:
    """Bytes offset..offset+width of each of `count` records of `stride` bytes in `data`,
    as one integer with a 64-bit little-endian lane per record."""
    buf = bytearray(count * 8)
    for j in range(width):
        buf[j::8] = data[offset + j::stride]
    return int.from_bytes(buf, "little")


_CHUNK = 16384  # keys hashed together: enough to amortise each step, few enough to stay in cache
_MAXLEN = 255  # longer keys take the scalar path


@functools.lru_cache(maxsize=None)
def _tables() -> tuple:
    """The reference's tables, made on first use (a compiled install hashes in C): the lane
    masks of 32 and 31 bits, the seeds by key length, and per word i which key lengths have a
    whole word there and which end inside it (the tail)."""
    return (int.from_bytes(b"\xff\xff\xff\xff\x00\x00\x00\x00" * _CHUNK, "little"),
            int.from_bytes(b"\xff\xff\xff\x7f\x00\x00\x00\x00" * _CHUNK, "little"),
            [((0x9747B28C ^ n) & _MASK).to_bytes(8, "little") for n in range(_MAXLEN + 1)],
            [bytes(0xFF if n >= 4 * i + 4 else 0 for n in range(256)) for i in range(64)],
            [bytes(0xFF if 4 * i < n < 4 * i + 4 else 0 for n in range(256)) for i in range(64)])


def _lane_mask(lens: bytes, table: bytes, count: int) -> int:
    sel = lens.translate(table)
    buf = bytearray(count * 8)
    for j in range(4):
        buf[j::8] = sel
    return int.from_bytes(buf, "little")


def _murmur2_chunk(keys: list, lens: list) -> list[int]:
    """toPositive(murmur2) of up to _CHUNK keys of at most _MAXLEN bytes, one lane each.

    Keys are zero-padded to one stride, so the word a key ends in holds exactly its
    tail bytes; per word, lanes whose key has a whole word there take the word
    round, lanes whose key ends inside it take the tail step, the rest keep h."""
    all32, all31, seeds, full_words, tail_words = _tables()
    count = len(keys)
    lane32 = all32 if count == _CHUNK else all32 & ((1 << (64 * count)) - 1)
    longest = max(lens)
    stride = (longest + 3) & ~3
    data = b"".join(map(bytes.ljust, keys, repeat(stride, count), repeat(b"\x00", count))) if longest else b""
    lb = bytes(lens)
    h = int.from_bytes(b"".join(map(seeds.__getitem__, lens)), "little")
    for i in range(stride // 4):
        k = _lanes(data, count, stride, 4 * i, 4)
        full = _lane_mask(lb, full_words[i], count)
        tail = _lane_mask(lb, tail_words[i], count)
        w = (k * _M) & lane32
        w ^= (w >> 24) & lane32
        w = (w * _M) & lane32
        hw = ((h * _M) & lane32) ^ w
        ht = ((h ^ k) * _M) & lane32
        h = (hw & full) | (ht & tail) | (h & (lane32 ^ (full | tail)))
    h ^= (h >> 13) & lane32
    h = (h * _M) & lane32
    h ^= (h >> 15) & lane32
    h &= all31
    lanes = array.array("Q", h.to_bytes(count * 8, "little"))
    if sys.byteorder == "big":
        lanes.byteswap()
    return lanes.tolist()


def murmur2_many(keys) -> list[int]:
    """`murmur2(k) & 0x7fffffff` (Java's toPositive) of every key, in key order.

    Vectorised with Python's big integers: thousands of keys are laid out one per
    64-bit lane of a single integer, so each step of the hash (multiply by a 32-bit
    constant, xor, shift, mask to 32 bits) runs once for all of them. A lane never
    carries into its neighbour: values are masked to 32 bits before every multiply,
    and the bits a right shift brings in from the lane above are masked off.
    """
    keys = keys if isinstance(keys, list) else list(keys)
    lens = list(map(len, keys))
    if lens and max(lens) > _MAXLEN:
        return [murmur2(k) & 0x7FFFFFFF for k in keys]
    out: list[int] = []
    for c in range(0, len(keys), _CHUNK):
        out += _murmur2_chunk(keys[c:c + _CHUNK], lens[c:c + _CHUNK])
    return out


murmur2_many_py = murmur2_many
murmur2_many = fastpath.choose("murmur2_many", murmur2_many_py)
