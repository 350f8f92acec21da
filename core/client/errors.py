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


def record_too_large(size: int, max_request_size: int, buffer_memory: int) -> RecordTooLargeError | None:
    """The error for a record of `size` bytes serialized (batch header included), if any."""
    if size > max_request_size:
        return RecordTooLargeError(
            f"The message is {size} bytes when serialized which is larger than {max_request_size}, "
            f"which is the value of the max.request.size configuration.")
    if size > buffer_memory:
        return RecordTooLargeError(
            f"The message is {size} bytes when serialized which is larger than the total memory buffer "
            f"you have configured with the buffer.memory configuration.")
    return None


class BufferExhaustedError(KafkaTimeoutError):
    """No buffer memory became free within max.block.ms."""


class BulkSendStopped(PylogError):
    """send_many(runs=True) stopped part way (no metadata or no buffer memory within
    max.block.ms): `runs` are the records batches took before, `error` the cause."""

    def __init__(self, error: BaseException, runs: list):
        super().__init__(str(error))
        self.error = error
        self.runs = runs


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
    "BulkSendStopped",
]
