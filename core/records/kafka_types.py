"""Text forms of Kafka schema values shared by the internal-topic decoders.

Decoding itself is the wire protocol's (`pylog.core.protocol.types` and its
compiled codecs); these helpers only render what kafka-dump-log prints. No I/O.
"""
from __future__ import annotations

import base64
import uuid


def b64(data: bytes | None) -> str | None:
    """Standard base64, as Kafka's JSON converters write bytes fields."""
    return None if data is None else base64.b64encode(data).decode("ascii")


def uuid_text(u: uuid.UUID) -> str:
    """Kafka's Uuid.toString(): URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(u.bytes).rstrip(b"=").decode("ascii")


def random_uuid() -> uuid.UUID:
    """Kafka's Uuid.randomUuid(): never the reserved zero and one ids, and never one whose text
    starts with '-' (1 in 64), which a command line (kafka-storage -t) takes for an option."""
    while True:
        u = uuid.uuid4()
        if u.int > 1 and not uuid_text(u).startswith("-"):
            return u
