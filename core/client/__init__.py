"""A Kafka client: asyncio engine, synchronous facades.

    from pylog.core.client import Producer, Consumer, Admin
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from pylog.core.lazy_exports import lazy_getattr

# imported on first use (PEP 562): the broker imports the assignors below this package, and a
# `pylog` command that needs no client should not pay for the producer, consumer and admin modules
_MODULES = {  # module: the names it gives the package
    "accumulator": "RecordMetadata",
    "admin": "Admin",
    "consumer": "EARLIEST LATEST Consumer ConsumerEngine GroupHooks OffsetAndTimestamp TopicPartition",
    "errors": (
        "BufferExhaustedError ConnectionFailedError KafkaTimeoutError LogTruncationError "
        "NoBrokersAvailableError NoOffsetForPartitionError ProducerClosedError "
        "RecordTooLargeError"),
    "partitioner": "StickyPartitioner murmur2 partition_for_key",
    "producer": "Producer RecordFuture",
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


__getattr__ = lazy_getattr(__name__, _MODULES)


__all__ = [
    "Producer", "RecordFuture", "RecordMetadata", "Consumer", "ConsumerEngine", "GroupHooks",
    "TopicPartition", "OffsetAndTimestamp", "Admin", "EARLIEST", "LATEST", "murmur2",
    "partition_for_key", "StickyPartitioner", "KafkaTimeoutError", "ConnectionFailedError",
    "NoBrokersAvailableError", "NoOffsetForPartitionError", "LogTruncationError",
    "RecordTooLargeError", "BufferExhaustedError", "ProducerClosedError",
]
