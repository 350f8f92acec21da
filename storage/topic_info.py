"""A topic as the log manager knows it, and Kafka's rules for topic names."""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from pylog.core.errors import InvalidTopicError

_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME = 249


@dataclass
class TopicInfo:
    """A topic as the log manager knows it: name, id, partition count, resolved config and the overrides set
    on it."""
    name: str
    topic_id: uuid.UUID
    num_partitions: int
    config: Any
    overrides: dict[str, str] = field(default_factory=dict)



def validate_topic_name(name: str) -> None:
    """Raise InvalidTopicError for a name Kafka refuses (empty, . or .., over 249 characters, other than
    ASCII letters, digits, . _ -)."""
    if not name:
        raise InvalidTopicError("topic name is empty")
    if name in (".", ".."):
        raise InvalidTopicError(f"topic name cannot be {name!r}")
    if len(name) > MAX_TOPIC_NAME:
        raise InvalidTopicError(f"topic name is {len(name)} characters, more than {MAX_TOPIC_NAME}")
    if not _LEGAL.match(name):
        raise InvalidTopicError(
            f"topic name {name!r} is illegal: it may contain only ASCII letters, digits, '.', '_' and '-'")
