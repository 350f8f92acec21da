"""Share-group records of `__consumer_offsets` (KIP-932), in Kafka 4.4's schemas.

A key's int16 prefix names the record type (Kafka's coordinator record api
key): 10 ShareGroupMemberMetadata, 11 ShareGroupMetadata, 12
ShareGroupTargetAssignmentMetadata, 13 ShareGroupTargetAssignmentMember, 14
ShareGroupCurrentMemberAssignment, 15 ShareGroupStatePartitionMetadata.
Values are int16 version 0 + a flexible struct; a null value is a tombstone.
"""
from __future__ import annotations

from pylog.core.protocol.embedded import Embedded, MalformedDataError, decode_typed_record
from pylog.core.protocol.schema import Field as F
from pylog.core.protocol.types import Array, INT8, INT32, INT64, STRING, UUID

__all__ = ["MEMBER_METADATA", "GROUP_METADATA", "TARGET_METADATA", "TARGET_MEMBER", "CURRENT_ASSIGNMENT",
           "STATE_PARTITION_METADATA", "RECORD_TYPES", "encode_key", "encode_value", "decode", "is_share_record",
           "MalformedDataError"]

MEMBER_METADATA, GROUP_METADATA, TARGET_METADATA = 10, 11, 12
TARGET_MEMBER, CURRENT_ASSIGNMENT, STATE_PARTITION_METADATA = 13, 14, 15

_GROUP = [F("group_id", STRING)]
_MEMBER = [F("group_id", STRING), F("member_id", STRING)]
_TPS = [F("topic_id", UUID), F("partitions", Array(INT32))]
_TOPIC_PARTITIONS = [F("topic_id", UUID), F("topic_name", STRING), F("partitions", Array(INT32))]


def _key(name, type_, fields):
    return Embedded(name, str(type_), "none", fields)


def _value(name, fields):
    return Embedded(name, "0", "0+", fields)


RECORD_TYPES = {
    MEMBER_METADATA: (_key("ShareGroupMemberMetadataKey", 10, _MEMBER), _value("ShareGroupMemberMetadataValue", [
        F("rack_id", STRING, nullable="0+", default=None),
        F("client_id", STRING),
        F("client_host", STRING),
        F("subscribed_topic_names", Array(STRING)),
    ])),
    GROUP_METADATA: (_key("ShareGroupMetadataKey", 11, _GROUP), _value("ShareGroupMetadataValue", [
        F("epoch", INT32),
        F("metadata_hash", INT64),
    ])),
    TARGET_METADATA: (_key("ShareGroupTargetAssignmentMetadataKey", 12, _GROUP),
                      _value("ShareGroupTargetAssignmentMetadataValue", [
        F("assignment_epoch", INT32),
        F("assignment_timestamp", INT64, tag=0, default=0),
    ])),
    TARGET_MEMBER: (_key("ShareGroupTargetAssignmentMemberKey", 13, _MEMBER),
                    _value("ShareGroupTargetAssignmentMemberValue", [F("topic_partitions", _TPS)])),
    CURRENT_ASSIGNMENT: (_key("ShareGroupCurrentMemberAssignmentKey", 14, _MEMBER),
                         _value("ShareGroupCurrentMemberAssignmentValue", [
        F("member_epoch", INT32),
        F("previous_member_epoch", INT32),
        F("state", INT8),
        F("assigned_partitions", _TPS),
    ])),
    STATE_PARTITION_METADATA: (_key("ShareGroupStatePartitionMetadataKey", 15, _GROUP),
                               _value("ShareGroupStatePartitionMetadataValue", [
        F("initializing_topics", _TOPIC_PARTITIONS),
        F("initialized_topics", _TOPIC_PARTITIONS),
        F("deleting_topics", [F("topic_id", UUID), F("topic_name", STRING)]),
    ])),
}


def is_share_record(key) -> bool:
    """True when a `__consumer_offsets` key is one of the share-group record types."""
    return key is not None and len(key) >= 2 and int.from_bytes(bytes(key[:2]), "big", signed=True) in RECORD_TYPES


def encode_key(record_type: int, fields: dict) -> bytes:
    """The key of a record type (its int16 type prefix included)."""
    return RECORD_TYPES[record_type][0].encode(fields, record_type)


def encode_value(record_type: int, fields: dict) -> bytes:
    """The value (version 0) of a record type."""
    return RECORD_TYPES[record_type][1].encode(fields, 0)


def decode(key, value) -> tuple[int, dict, dict | None]:
    """(record type, key fields, value fields or None for a tombstone); raises MalformedDataError."""
    return decode_typed_record(RECORD_TYPES, key, value, "__consumer_offsets", "share-group")
