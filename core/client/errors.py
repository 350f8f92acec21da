"""Client-side errors that have no Kafka error code."""
from __future__ import annotations

from pylog.core.errors import KafkaError, PylogError


class KafkaTimeoutError(PylogError):
    """Something did not happen within its configured time (max.block.ms, request.timeout.ms...)."""

    retriable = True


class ConnectionFailedError(PylogError):
    """A broker connection could not be made or was lost."""

    retriable = True


class NoBrokersAvailableError(PylogError):
    """None of the bootstrap servers answered."""


class NoOffsetForPartitionError(PylogError):
    """auto.offset.reset=none and no committed offset (Kafka's NoOffsetForPartitionException)."""


class LogTruncationError(PylogError):
    """The consumer's position is past the end of its epoch on the leader."""


class RecordTooLargeError(PylogError):
    """A record does not fit in max.request.size or buffer.memory (Kafka's RecordTooLargeException)."""


class BufferExhaustedError(KafkaTimeoutError):
    """No buffer memory became free within max.block.ms."""


class ProducerClosedError(PylogError):
    """send() after close()."""


__all__ = [
    "KafkaError",
    "KafkaTimeoutError",
    "ConnectionFailedError",
    "NoBrokersAvailableError",
    "NoOffsetForPartitionError",
    "LogTruncationError",
    "RecordTooLargeError",
    "BufferExhaustedError",
    "ProducerClosedError",
]
