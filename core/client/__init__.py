"""A Kafka client: asyncio engine, synchronous facades.

    from pylog.core.client import Producer, Consumer, Admin
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

# imported on first use (PEP 562): the broker imports the assignors below this package, and a
# `pylog` command that needs no client should not pay for the producer, consumer and admin modules
_WHERE = {
    "RecordMetadata": "accumulator", "Admin": "admin",
    "EARLIEST": "consumer", "LATEST": "consumer", "Consumer": "consumer", "ConsumerEngine": "consumer",
    "GroupHooks": "consumer", "OffsetAndTimestamp": "consumer", "TopicPartition": "consumer",
    "BufferExhaustedError": "errors", "ConnectionFailedError": "errors", "KafkaTimeoutError": "errors",
    "LogTruncationError": "errors", "NoBrokersAvailableError": "errors", "NoOffsetForPartitionError": "errors",
    "ProducerClosedError": "errors", "RecordTooLargeError": "errors",
    "StickyPartitioner": "partitioner", "murmur2": "partitioner", "partition_for_key": "partitioner",
    "Producer": "producer", "RecordFuture": "producer",
}

if TYPE_CHECKING:
    from pylog.core.client.accumulator import RecordMetadata
    from pylog.core.client.admin import Admin
    from pylog.core.client.consumer import (
        EARLIEST, LATEST, Consumer, ConsumerEngine, GroupHooks, OffsetAndTimestamp, TopicPartition,
    )
    from pylog.core.client.errors import (
        BufferExhaustedError, ConnectionFailedError, KafkaTimeoutError, LogTruncationError,
        NoBrokersAvailableError, NoOffsetForPartitionError, ProducerClosedError, RecordTooLargeError,
    )
    from pylog.core.client.partitioner import StickyPartitioner, murmur2, partition_for_key
    from pylog.core.client.producer import Producer, RecordFuture


def __getattr__(name: str):
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


__all__ = [
    "Producer", "RecordFuture", "RecordMetadata", "Consumer", "ConsumerEngine", "GroupHooks",
    "TopicPartition", "OffsetAndTimestamp", "Admin", "EARLIEST", "LATEST", "murmur2",
    "partition_for_key", "StickyPartitioner", "KafkaTimeoutError", "ConnectionFailedError",
    "NoBrokersAvailableError", "NoOffsetForPartitionError", "LogTruncationError",
    "RecordTooLargeError", "BufferExhaustedError", "ProducerClosedError",
]
