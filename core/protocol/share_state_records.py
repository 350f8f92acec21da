"""Records of `__share_group_state`, in the schemas of Kafka's share coordinator.

A key's int16 prefix names the record type: 0 ShareSnapshot (the whole state of
one share-partition), 1 ShareUpdate (a delta over the latest snapshot). Both
keys hold (group id, topic id, partition); values are int16 version 0 + a
flexible struct whose state batches carry the delivery state (0 available,
2 acknowledged, 4 archived) and the delivery count of an offset range.
"""
from __future__ import annotations

from pylog.core.protocol.embedded import Embedded, MalformedDataError, decode_typed_record
from pylog.core.protocol.schema import Field as F
from pylog.core.protocol.types import INT8, INT16, INT32, INT64, STRING, UUID

__all__ = ["SNAPSHOT", "UPDATE", "encode_key", "encode_value", "decode", "MalformedDataError", "TOPIC"]

TOPIC = "__share_group_state"
SNAPSHOT, UPDATE = 0, 1

_KEY = [F("group_id", STRING), F("topic_id", UUID), F("partition", INT32)]
_BATCHES = F("state_batches", [
    F("first_offset", INT64),
    F("last_offset", INT64),
    F("delivery_state", INT8),
    F("delivery_count", INT16),
])
# KIP-1226 (4.2): offsets at or above the start offset whose delivery is complete; -1 unknown
_COMPLETE = F("delivery_complete_count", INT32, tag=0, default=-1)

RECORD_TYPES = {
    SNAPSHOT: (Embedded("ShareSnapshotKey", "0", "none", _KEY), Embedded("ShareSnapshotValue", "0", "0+", [
        F("snapshot_epoch", INT32),
        F("state_epoch", INT32),
        F("leader_epoch", INT32),
        F("start_offset", INT64),
        _COMPLETE,
        F("create_timestamp", INT64),
        F("write_timestamp", INT64),
        _BATCHES,
    ])),
    UPDATE: (Embedded("ShareUpdateKey", "1", "none", _KEY), Embedded("ShareUpdateValue", "0", "0+", [
        F("snapshot_epoch", INT32),
        F("leader_epoch", INT32),
        F("start_offset", INT64),
        _COMPLETE,
        _BATCHES,
    ])),
}


def encode_key(record_type: int, group_id: str, topic_id, partition: int) -> bytes:
    """The key of a record type (its int16 type prefix included)."""
    return RECORD_TYPES[record_type][0].encode(
        {"group_id": group_id, "topic_id": topic_id, "partition": partition}, record_type)


def encode_value(record_type: int, fields: dict) -> bytes:
    """The value (version 0) of a record type."""
    return RECORD_TYPES[record_type][1].encode(fields, 0)


def decode(key, value) -> tuple[int, dict, dict | None]:
    """(record type, key fields, value fields or None for a tombstone); MalformedDataError
    for bytes that do not parse."""
    return decode_typed_record(RECORD_TYPES, key, value, TOPIC, TOPIC)
