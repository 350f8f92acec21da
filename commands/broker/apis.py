"""The request-handler table: api key -> handler, version range, error answer.

Each handler module exposes `apis(broker) -> list[Api]`; the broker merges
them into one dict keyed by api key, so the group coordinator (issue 7) can
replace the group stubs by registering its own `Api` objects for the same keys.

A handler is `handler(ctx, body) -> dict | Awaitable[dict] | None` (None: no
response, e.g. acks=0 produce). `error(body, version, code, message)` builds the
response a request gets when it fails as a whole (an unsupported version, an
unexpected exception): every partition or resource in it carries the code.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from pylog.core.errors import KafkaError

# Kafka's "authorized operations not requested" sentinel (Integer.MIN_VALUE)
AUTHORIZED_OPS_OMITTED = -(2**31)


@dataclass
class Api:
    key: int
    handler: Callable[["RequestContext", dict], Any]
    min_version: int
    max_version: int
    error: Callable[[dict, int, int, str | None], dict]


@dataclass
class RequestContext:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    conn: Any  # server.Connection
    size: int = 0


def code_of(exc: BaseException) -> tuple[int, str]:
    """Kafka error code and message for an exception raised by storage or config code."""
    if isinstance(exc, KafkaError):
        return exc.code, str(exc)
    from pylog.core.config import ConfigError

    if isinstance(exc, ConfigError):
        return 40, str(exc)  # INVALID_CONFIG
    if isinstance(exc, OSError):
        return 56, f"storage error: {exc.strerror or exc}"  # KAFKA_STORAGE_ERROR
    return -1, f"{exc.__class__.__name__}: {exc}"


def topics_error(body: dict, code: int, *, topics_key: str, name_key: str, parts_key: str,
                 pindex_req: str, out_topics: str, out_name: str, out_parts: str, pindex_out: str,
                 extra: dict | None = None) -> list:
    """Mirror a topics/partitions request into a response list with `code` everywhere."""
    out = []
    for t in body.get(topics_key) or []:
        parts = []
        for p in t.get(parts_key) or []:
            entry = {pindex_out: p.get(pindex_req, 0), "error_code": code}
            if extra:
                entry.update(extra)
            parts.append(entry)
        item = {out_name: t.get(name_key), out_parts: parts}
        if "topic_id" in t:
            item["topic_id"] = t["topic_id"]
        out.append(item)
    return out
