"""The "consumer" embedded protocol: JoinGroup protocol metadata
(ConsumerProtocolSubscription) and SyncGroup assignments
(ConsumerProtocolAssignment), each an int16 version then the struct.
Versions 0-3, never flexible; a newer version is read as v3 (fields are only
ever appended)."""
from __future__ import annotations

from pylog.core.protocol.embedded import Embedded, MalformedDataError
from pylog.core.protocol.schema import Field as F
from pylog.core.protocol.types import Array, BYTES, INT32, STRING

__all__ = ["SUBSCRIPTION", "ASSIGNMENT", "encode_subscription", "decode_subscription",
           "encode_assignment", "decode_assignment", "MalformedDataError"]

_TOPIC_PARTITIONS = [
    F("topic", STRING),
    F("partitions", Array(INT32)),
]

SUBSCRIPTION = Embedded("ConsumerProtocolSubscription", "0-3", "none", [
    F("topics", Array(STRING)),
    F("user_data", BYTES, nullable="0+", default=None),
    F("owned_partitions", _TOPIC_PARTITIONS, "1+"),
    F("generation_id", INT32, "2+", default=-1),
    F("rack_id", STRING, "3+", nullable="3+", default=None),
], newer_as_max=True)

ASSIGNMENT = Embedded("ConsumerProtocolAssignment", "0-3", "none", [
    F("assigned_partitions", _TOPIC_PARTITIONS),
    F("user_data", BYTES, nullable="0+", default=None),
], newer_as_max=True)


def encode_subscription(subscription: dict, version: int = 3) -> bytes:
    """{"topics": [...], "user_data": b|None, "owned_partitions": [{"topic", "partitions"}],
    "generation_id": int, "rack_id": str|None} -> bytes for JoinGroup's protocol metadata."""
    return SUBSCRIPTION.encode(subscription, version)


def decode_subscription(data) -> dict:
    """Bytes -> subscription dict (every field present; "version" added)."""
    version, body = SUBSCRIPTION.decode(data)
    body["version"] = version
    return body


def encode_assignment(assignment: dict, version: int = 3) -> bytes:
    """{"assigned_partitions": [{"topic", "partitions"}], "user_data": b|None} -> bytes."""
    return ASSIGNMENT.encode(assignment, version)


def decode_assignment(data) -> dict:
    """Bytes -> assignment dict ("version" added). Empty bytes (what a member
    gets when the leader assigned it nothing) decode as an empty assignment."""
    if len(data) == 0:
        return {"assigned_partitions": [], "user_data": None, "version": 0}
    version, body = ASSIGNMENT.decode(data)
    body["version"] = version
    return body
