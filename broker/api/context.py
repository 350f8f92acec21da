"""What every request handler gets and shares: the request context, error mapping, mirrored answers.

A handler is a module-level function `handle(node, ctx, body)` (`node`: its family's view,
api/views.py) returning the
response body (a dict), an awaitable of one (long polls, rebalances), or None
(no response: acks=0 produce). Its error builder `error(body, version, code,
message)` answers a request that fails as a whole (an unsupported version, an
exception in the handler) with the code on every partition or resource the
request names. handlers.py registers both in the broker's one table.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Awaitable, Callable, Union

from pylog.broker.net.connection import Connection
from pylog.core.config import ConfigError
from pylog.core.errors import ErrorCode, KafkaError

if TYPE_CHECKING:
    from pylog.core.protocol.facts import Partitions

# Kafka's "authorized operations not requested" sentinel (Integer.MIN_VALUE)
AUTHORIZED_OPS_OMITTED = -(2**31)
# Looking up an enum member costs ~0.3 us on Python 3.11; the per-partition
# loops of fetch, metadata and list-offsets use these, bound once.
NONE = ErrorCode.NONE
UNKNOWN_TOPIC_OR_PARTITION = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

Response = Union[dict, Awaitable[dict], None]
ErrorBuilder = Callable[[dict, int, int, Union[str, None]], dict]


class RequestContext:
    """One decoded request's header facts and the connection it came on.

    Slots, read at the speed of a plain attribute. The dispatcher fills one in place
    (`object.__new__`, then the five fields): no Python call per request, where a dataclass
    runs its generated `__init__` and a NamedTuple's fields are slower descriptors."""

    __slots__ = ("api_key", "api_version", "correlation_id", "client_id", "conn")
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    conn: Connection

    def __init__(self, api_key: int, api_version: int, correlation_id: int, client_id: str | None,
                 conn: Connection):
        self.api_key, self.api_version, self.correlation_id = api_key, api_version, correlation_id
        self.client_id, self.conn = client_id, conn

    def __repr__(self) -> str:
        return (f"RequestContext(api_key={self.api_key}, api_version={self.api_version}, "
                f"correlation_id={self.correlation_id}, client_id={self.client_id!r})")


def code_of(exc: BaseException) -> tuple[int, str]:
    """Kafka error code and message for an exception raised by storage or config code.

    UNKNOWN_SERVER_ERROR means a bug: the dispatcher logs those with a traceback."""
    if isinstance(exc, KafkaError):
        return exc.code, str(exc)
    if isinstance(exc, ConfigError):
        return ErrorCode.INVALID_CONFIG, str(exc)
    if isinstance(exc, OSError):
        return ErrorCode.KAFKA_STORAGE_ERROR, f"storage error: {exc.strerror or exc}"
    return ErrorCode.UNKNOWN_SERVER_ERROR, f"{exc.__class__.__name__}: {exc}"


def check_leader_epoch(requested: int | None, current: int) -> int:
    """Error code for a client's current_leader_epoch (KIP-320): newer than ours is
    UNKNOWN_LEADER_EPOCH (we lag), older is FENCED_LEADER_EPOCH (the client lags)."""
    if requested is None or requested < 0 or requested == current:
        return NONE
    return ErrorCode.UNKNOWN_LEADER_EPOCH if requested > current else ErrorCode.FENCED_LEADER_EPOCH


def mirror_partitions(topics: list, answer: Callable[[dict, dict], dict], *, name: str = "name",
                      partitions: str = "partitions") -> list:
    """A response's topics list shaped like the request's: one `answer(topic, partition)`
    entry per requested partition, in order, under the same topic and partition-list keys."""
    return [{name: t[name], partitions: [answer(t, p) for p in t[partitions]]} for t in topics]


def partition_error_answer(shape: Partitions) -> ErrorBuilder:
    """The whole-request error answer of a partitioned API, from its request facts: every
    partition the request names with the code, under the answer's topic and partition keys."""
    def error(body, version, code, msg):
        out = shape.empty()
        out[shape.resp_topics] = [shape.error_topic(t, code) for t in body[shape.req_topics] or ()]
        return out
    return error
