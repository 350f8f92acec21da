"""The small value types the consumer, admin and group code share."""
from __future__ import annotations

from typing import NamedTuple

EARLIEST = -2  # ListOffsets timestamps (Kafka's ListOffsetsRequest constants)
LATEST = -1


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self):
        return f"{self.topic}-{self.partition}"


class OffsetAndTimestamp(NamedTuple):
    """A ListOffsets answer: the offset, its record's timestamp and the leader epoch."""

    offset: int
    timestamp: int
    leader_epoch: int = -1
