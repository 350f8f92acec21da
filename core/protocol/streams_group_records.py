"""Streams-group records of `__consumer_offsets` (KIP-1071), in Kafka 4.4's schemas.

Key prefixes (Kafka's coordinator record api keys): 17 StreamsGroupMetadata (group epoch),
19 StreamsGroupMemberMetadata, 20 StreamsGroupTargetAssignmentMetadata,
21 StreamsGroupTargetAssignmentMember, 22 StreamsGroupCurrentMemberAssignment,
23 StreamsGroupTopology. Values are int16 version 0 + a flexible struct; a null value is
a tombstone.
"""
from __future__ import annotations

from pylog.core.protocol.embedded import Embedded, MalformedDataError, decode_typed_record
from pylog.core.protocol.schema import Field as F
from pylog.core.protocol.types import Array, INT8, INT16, INT32, INT64, STRING, UINT16, Struct

__all__ = ["GROUP_METADATA", "MEMBER_METADATA", "TARGET_METADATA", "TARGET_MEMBER", "CURRENT_ASSIGNMENT",
           "TOPOLOGY", "RECORD_TYPES", "encode_key", "encode_value", "decode", "is_streams_record",
           "MalformedDataError"]

GROUP_METADATA, MEMBER_METADATA, TARGET_METADATA, TARGET_MEMBER, CURRENT_ASSIGNMENT, TOPOLOGY = 17, 19, 20, 21, 22, 23

_GROUP = [F("group_id", STRING)]
_MEMBER = [F("group_id", STRING), F("member_id", STRING)]


def _tasks(tagged_epochs: bool = False):
    fields = [F("subtopology_id", STRING), F("partitions", Array(INT32))]
    if tagged_epochs:  # the epoch each task was assigned at (tagged, absent when unknown)
        fields.append(F("assignment_epochs", Array(INT32), nullable="0+", tag=0, default=None))
    return fields


def _topic_info():
    return [F("name", STRING), F("partitions", INT32), F("replication_factor", INT16),
            F("topic_configs", [F("key", STRING), F("value", STRING)])]


def _key(name, type_, fields):
    return Embedded(name, str(type_), "none", fields)


def _value(name, fields):
    return Embedded(name, "0", "0+", fields)


RECORD_TYPES = {
    GROUP_METADATA: (_key("StreamsGroupMetadataKey", 17, _GROUP), _value("StreamsGroupMetadataValue", [
        F("epoch", INT32),
        F("metadata_hash", INT64),
        F("validated_topology_epoch", INT32, tag=0, default=-1),
        # the assignment configs the last target assignment was computed with (standby replicas, ...)
        F("last_assignment_configs", [F("key", STRING), F("value", STRING)], nullable="0+", tag=1, default=None),
        F("stored_description_topology_epoch", INT32, tag=2, default=-1),
        F("failed_description_topology_epoch", INT32, tag=3, default=-1),
    ])),
    MEMBER_METADATA: (_key("StreamsGroupMemberMetadataKey", 19, _MEMBER), _value("StreamsGroupMemberMetadataValue", [
        F("instance_id", STRING, nullable="0+", default=None),
        F("rack_id", STRING, nullable="0+", default=None),
        F("client_id", STRING),
        F("client_host", STRING),
        F("rebalance_timeout_ms", INT32, default=-1),
        F("topology_epoch", INT32),
        F("process_id", STRING),
        F("user_endpoint", Struct(F("host", STRING), F("port", UINT16)), nullable="0+", default=None),
        F("client_tags", [F("key", STRING), F("value", STRING)]),
    ])),
    TARGET_METADATA: (_key("StreamsGroupTargetAssignmentMetadataKey", 20, _GROUP),
                      _value("StreamsGroupTargetAssignmentMetadataValue", [
        F("assignment_epoch", INT32),
        F("assignment_timestamp", INT64, tag=0, default=0),
    ])),
    TARGET_MEMBER: (_key("StreamsGroupTargetAssignmentMemberKey", 21, _MEMBER),
                    _value("StreamsGroupTargetAssignmentMemberValue", [
        F("active_tasks", _tasks()),
        F("standby_tasks", _tasks()),
        F("warmup_tasks", _tasks()),
    ])),
    CURRENT_ASSIGNMENT: (_key("StreamsGroupCurrentMemberAssignmentKey", 22, _MEMBER),
                         _value("StreamsGroupCurrentMemberAssignmentValue", [
        F("member_epoch", INT32),
        F("previous_member_epoch", INT32),
        F("state", INT8),
        F("active_tasks", _tasks(True)),
        F("standby_tasks", _tasks(True)),
        F("warmup_tasks", _tasks(True)),
        F("active_tasks_pending_revocation", _tasks(True)),
        F("standby_tasks_pending_revocation", _tasks(True)),
        F("warmup_tasks_pending_revocation", _tasks(True)),
    ])),
    TOPOLOGY: (_key("StreamsGroupTopologyKey", 23, _GROUP), _value("StreamsGroupTopologyValue", [
        F("epoch", INT32),
        F("subtopologies", [
            F("subtopology_id", STRING),
            F("source_topics", Array(STRING)),
            F("source_topic_regex", Array(STRING)),
            F("state_changelog_topics", _topic_info()),
            F("repartition_sink_topics", Array(STRING)),
            F("repartition_source_topics", _topic_info()),
            F("copartition_groups", [
                F("source_topics", Array(INT16)),
                F("source_topic_regex", Array(INT16)),
                F("repartition_source_topics", Array(INT16)),
            ]),
        ]),
    ])),
}


def is_streams_record(key) -> bool:
    """True when a `__consumer_offsets` key is one of the streams-group record types."""
    return key is not None and len(key) >= 2 and int.from_bytes(bytes(key[:2]), "big", signed=True) in RECORD_TYPES


def encode_key(record_type: int, fields: dict) -> bytes:
    """The key of a record type (its int16 type prefix included)."""
    return RECORD_TYPES[record_type][0].encode(fields, record_type)


def encode_value(record_type: int, fields: dict) -> bytes:
    """The value (version 0) of a record type."""
    return RECORD_TYPES[record_type][1].encode(fields, 0)


def decode(key, value) -> tuple[int, dict, dict | None]:
    """(record type, key fields, value fields or None for a tombstone); MalformedDataError otherwise."""
    return decode_typed_record(RECORD_TYPES, key, value, "__consumer_offsets", "streams-group")
