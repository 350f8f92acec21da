"""KIP-848 consumer-group records of `__consumer_offsets`, in Kafka's schemas.

A key's int16 prefix names the record type (Kafka's coordinator record api
key): 3 ConsumerGroupMetadata, 4 ConsumerGroupPartitionMetadata (no longer
written since Kafka 4.1, still read), 5 ConsumerGroupMemberMetadata,
6 ConsumerGroupTargetAssignmentMetadata, 7 ConsumerGroupTargetAssignmentMember,
8 ConsumerGroupCurrentMemberAssignment, 16 ConsumerGroupRegularExpression.
Values are int16 version 0 + a flexible struct; a null value is a tombstone.
(Types 0-2 are the classic ones in internal_records.py.)
"""
from __future__ import annotations

from pylog.core.protocol.embedded import Embedded, MalformedDataError, decode_typed_record
from pylog.core.protocol.schema import Field as F
from pylog.core.protocol.types import Array, BYTES, INT8, INT32, INT64, STRING, UUID, Struct

__all__ = ["GROUP_METADATA", "PARTITION_METADATA", "MEMBER_METADATA", "TARGET_METADATA", "TARGET_MEMBER",
           "CURRENT_ASSIGNMENT", "REGULAR_EXPRESSION", "RECORD_TYPES", "encode_key", "encode_value",
           "decode", "MalformedDataError"]

GROUP_METADATA, PARTITION_METADATA, MEMBER_METADATA = 3, 4, 5
TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT = 6, 7, 8
REGULAR_EXPRESSION = 16

_GROUP = [F("group_id", STRING)]
_MEMBER = [F("group_id", STRING), F("member_id", STRING)]


def _tps(tagged_epochs: bool = False):
    fields = [F("topic_id", UUID), F("partitions", Array(INT32))]
    if tagged_epochs:
        # KIP-1251: the epoch each partition was assigned at (tagged, absent when unknown)
        fields.append(F("assignment_epochs", Array(INT32), nullable="0+", tag=0, default=None))
    return fields


def _key(name, type_, fields):
    return Embedded(name, str(type_), "none", fields)


def _value(name, fields):
    return Embedded(name, "0", "0+", fields)


RECORD_TYPES = {
    GROUP_METADATA: (_key("ConsumerGroupMetadataKey", 3, _GROUP), _value("ConsumerGroupMetadataValue", [
        F("epoch", INT32),
        # KIP-1101 (4.1): a hash of the subscribed topics' metadata; a change means a rebalance
        F("metadata_hash", INT64, tag=0, default=0),
        F("creation_time_ms", INT64, tag=1, default=-1),
    ])),
    PARTITION_METADATA: (_key("ConsumerGroupPartitionMetadataKey", 4, _GROUP),
                         _value("ConsumerGroupPartitionMetadataValue", [
        F("topics", [
            F("topic_id", UUID),
            F("topic_name", STRING),
            F("num_partitions", INT32),
            F("partition_metadata", [F("partition", INT32), F("racks", Array(STRING))]),
        ]),
    ])),
    MEMBER_METADATA: (_key("ConsumerGroupMemberMetadataKey", 5, _MEMBER), _value("ConsumerGroupMemberMetadataValue", [
        F("instance_id", STRING, nullable="0+", default=None),
        F("rack_id", STRING, nullable="0+", default=None),
        F("client_id", STRING),
        F("client_host", STRING),
        F("subscribed_topic_names", Array(STRING)),
        F("subscribed_topic_regex", STRING, nullable="0+", default=None),
        F("rebalance_timeout_ms", INT32, default=-1),
        F("server_assignor", STRING, nullable="0+", default=None),
        # set only for members that joined with the classic protocol (a migrating group)
        F("classic_member_metadata", Struct(
            F("session_timeout_ms", INT32),
            F("supported_protocols", [F("name", STRING), F("metadata", BYTES)]),
        ), nullable="0+", tag=0, default=None),
    ])),
    TARGET_METADATA: (_key("ConsumerGroupTargetAssignmentMetadataKey", 6, _GROUP),
                      _value("ConsumerGroupTargetAssignmentMetadataValue", [
        F("assignment_epoch", INT32),
        F("assignment_timestamp", INT64, tag=0, default=0),  # KIP-1263 (4.3)
    ])),
    TARGET_MEMBER: (_key("ConsumerGroupTargetAssignmentMemberKey", 7, _MEMBER),
                    _value("ConsumerGroupTargetAssignmentMemberValue", [
        F("topic_partitions", _tps()),
    ])),
    CURRENT_ASSIGNMENT: (_key("ConsumerGroupCurrentMemberAssignmentKey", 8, _MEMBER),
                         _value("ConsumerGroupCurrentMemberAssignmentValue", [
        F("member_epoch", INT32),
        F("previous_member_epoch", INT32),
        F("state", INT8),
        F("assigned_partitions", _tps(True)),
        F("partitions_pending_revocation", _tps(True)),
    ])),
    REGULAR_EXPRESSION: (_key("ConsumerGroupRegularExpressionKey", 16, [
        F("group_id", STRING), F("regular_expression", STRING)]), _value("ConsumerGroupRegularExpressionValue", [
        F("topics", Array(STRING)),
        F("version", INT64),
        F("timestamp", INT64),
    ])),
}


def encode_key(record_type: int, fields: dict) -> bytes:
    """The key of a record type (its int16 type prefix included)."""
    return RECORD_TYPES[record_type][0].encode(fields, record_type)


def encode_value(record_type: int, fields: dict) -> bytes:
    """The value (version 0) of a record type."""
    return RECORD_TYPES[record_type][1].encode(fields, 0)


def decode(key, value) -> tuple[int, dict, dict | None]:
    """(record type, key fields, value fields or None for a tombstone); raises
    MalformedDataError for bytes that do not parse or a type that is not a consumer-group one.
    Values newer than version 0 are read with the version-0 schema (tagged fields only grow)."""
    return decode_typed_record(RECORD_TYPES, key, value, "__consumer_offsets", "consumer-group")
