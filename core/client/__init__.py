"""A Kafka client: asyncio engine, synchronous facades.

    from pylog.core.client import Producer, Consumer, Admin
"""
from pylog.core.client.accumulator import RecordMetadata
from pylog.core.client.admin import Admin
from pylog.core.client.consumer import (
    EARLIEST,
    LATEST,
    Consumer,
    ConsumerEngine,
    GroupHooks,
    OffsetAndTimestamp,
    TopicPartition,
)
from pylog.core.client.errors import (
    BufferExhaustedError,
    ConnectionFailedError,
    KafkaTimeoutError,
    LogTruncationError,
    NoBrokersAvailableError,
    NoOffsetForPartitionError,
    ProducerClosedError,
    RecordTooLargeError,
)
from pylog.core.client.partitioner import StickyPartitioner, murmur2, partition_for_key
from pylog.core.client.producer import Producer, RecordFuture

__all__ = [
    "Producer", "RecordFuture", "RecordMetadata", "Consumer", "ConsumerEngine", "GroupHooks",
    "TopicPartition", "OffsetAndTimestamp", "Admin", "EARLIEST", "LATEST", "murmur2",
    "partition_for_key", "StickyPartitioner", "KafkaTimeoutError", "ConnectionFailedError",
    "NoBrokersAvailableError", "NoOffsetForPartitionError", "LogTruncationError",
    "RecordTooLargeError", "BufferExhaustedError", "ProducerClosedError",
]
