"""Choosing a partition the way the Java client does.

Keyed records: `toPositive(murmur2(key)) % numPartitions` (Utils.murmur2 with
seed 0x9747b28c, toPositive = `n & 0x7fffffff`), so the same key lands on the
same partition as with any Java-client producer. Keyless records: the sticky
partitioner (KIP-480) keeps one partition until its batch is full, then moves on.
"""
from __future__ import annotations

import random

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
