"""Keys and values of the `__consumer_offsets` records, in Kafka's schemas.

Key: int16 version + struct. Versions 0 and 1 are OffsetCommitKey (group,
topic, partition); version 2 is GroupMetadataKey (group). A null value is a
tombstone (offset deleted / group removed).
Values: int16 version + struct: OffsetCommitValue v0-4, GroupMetadataValue
v0-4 (v4+ flexible in both).
The group coordinator's other record types (consumer groups 3-8 and 16, share groups 10-15,
streams groups 17 and 19-23) have their own modules; `decode_record` reads them all.
"""
from __future__ import annotations

from pylog.core.protocol import consumer_group_records as _consumer
from pylog.core.protocol import share_group_records as _share
from pylog.core.protocol import streams_group_records as _streams
from pylog.core.protocol.embedded import Embedded, MalformedDataError
from pylog.core.protocol.schema import Field as F
from pylog.core.protocol.types import BYTES, INT32, INT64, STRING, UUID

__all__ = [
    "OFFSET_COMMIT_KEY", "GROUP_METADATA_KEY", "OFFSET_COMMIT_VALUE", "GROUP_METADATA_VALUE",
    "encode_offset_commit_key", "encode_group_metadata_key", "encode_offset_commit_value",
    "encode_group_metadata_value", "decode_key", "decode_value", "decode_record", "MalformedDataError",
]

OFFSET_COMMIT_KEY = Embedded("OffsetCommitKey", "0-1", "none", [
    F("group", STRING),
    F("topic", STRING),
    F("partition", INT32),
])

GROUP_METADATA_KEY = Embedded("GroupMetadataKey", "2", "none", [
    F("group", STRING),
])

OFFSET_COMMIT_VALUE = Embedded("OffsetCommitValue", "0-4", "4+", [
    F("offset", INT64),
    F("leader_epoch", INT32, "3+", default=-1),
    F("metadata", STRING),
    F("commit_timestamp", INT64),
    F("expire_timestamp", INT64, "1", default=-1),
    # Kafka 4.x's coordinator records the committed topic's id (tagged, absent when unknown)
    F("topic_id", UUID, "4+", tag=0),
])

GROUP_METADATA_VALUE = Embedded("GroupMetadataValue", "0-4", "4+", [
    F("protocol_type", STRING),
    F("generation", INT32),
    F("protocol", STRING, nullable="0+"),
    F("leader", STRING, nullable="0+"),
    F("current_state_timestamp", INT64, "2+", default=-1),
    F("members", [
        F("member_id", STRING),
        F("group_instance_id", STRING, "3+", nullable="3+", default=None),
        F("client_id", STRING),
        F("client_host", STRING),
        F("rebalance_timeout", INT32, "1+"),
        F("session_timeout", INT32),
        F("subscription", BYTES),
        F("assignment", BYTES),
    ]),
])

OFFSET_COMMIT = "offset_commit"
GROUP_METADATA = "group_metadata"


def encode_offset_commit_key(group: str, topic: str, partition: int, version: int = 1) -> bytes:
    """OffsetCommitKey (version prefix included)."""
    return OFFSET_COMMIT_KEY.encode({"group": group, "topic": topic, "partition": partition}, version)


def encode_group_metadata_key(group: str) -> bytes:
    """GroupMetadataKey v2 (version prefix included)."""
    return GROUP_METADATA_KEY.encode({"group": group}, 2)


def encode_offset_commit_value(value: dict, version: int = 3) -> bytes:
    """{"offset", "leader_epoch", "metadata", "commit_timestamp", "expire_timestamp"(v1)}."""
    return OFFSET_COMMIT_VALUE.encode(value, version)


def encode_group_metadata_value(value: dict, version: int = 3) -> bytes:
    """GroupMetadataValue (version prefix included): protocol, generation, leader, members."""
    return GROUP_METADATA_VALUE.encode(value, version)


def decode_key(data) -> tuple[str, int, dict]:
    """(kind, version, fields) where kind is "offset_commit" or "group_metadata"."""
    if len(data) < 2:
        raise MalformedDataError("__consumer_offsets key shorter than its version")
    version = int.from_bytes(bytes(data[:2]), "big", signed=True)
    if version in (0, 1):
        return OFFSET_COMMIT, version, OFFSET_COMMIT_KEY.decode(data)[1]
    if version == 2:
        return GROUP_METADATA, version, GROUP_METADATA_KEY.decode(data)[1]
    raise MalformedDataError(f"unknown __consumer_offsets key version {version}")


def decode_value(kind: str, data) -> tuple[int, dict] | None:
    """(version, fields) for a value of the given key kind; None for a tombstone."""
    if data is None:
        return None
    schema = OFFSET_COMMIT_VALUE if kind == OFFSET_COMMIT else GROUP_METADATA_VALUE
    return schema.decode(data)


# the coordinator record families beside the classic ones, by the kind decode_record names them
_FAMILIES = (("consumer_group", _consumer), ("share_group", _share), ("streams_group", _streams))


def decode_record(key, value) -> dict:
    """A whole record as one dict: {"kind", "key_version", "key", "value_version", "value"}
    (value and value_version None for tombstones). Every record type Kafka 4.4's group
    coordinator writes decodes: for the consumer, share and streams group types, "kind" is
    the family and "key_version" the record type. Handy for dump tools."""
    rtype = int.from_bytes(bytes(key[:2]), "big", signed=True) if key is not None and len(key) >= 2 else None
    for family, codec in _FAMILIES:
        if rtype in codec.RECORD_TYPES:
            _, k, v = codec.decode(key, value)
            version = None if v is None else int.from_bytes(bytes(value[:2]), "big", signed=True)
            return {"kind": family, "key_version": rtype, "key": k, "value_version": version, "value": v}
    kind, kv, k = decode_key(key)
    decoded = decode_value(kind, value)
    return {
        "kind": kind,
        "key_version": kv,
        "key": k,
        "value_version": None if decoded is None else decoded[0],
        "value": None if decoded is None else decoded[1],
    }
