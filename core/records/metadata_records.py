"""Decoder for KRaft `__cluster_metadata` records (the value of each record).

A metadata record value is: frame version (unsigned varint, 1), record type =
apiKey (unsigned varint), record version (unsigned varint), then the message
in its schema (every version flexible: compact strings/arrays, tagged fields).

Each record type is declared once below, in the wire protocol's `Field` form,
with the type ids, names, versions, defaults and tags of Kafka's metadata
record specs (metadata/src/main/resources/common/metadata/*.json); the
protocol's compiled codec decodes them and `schema_json` renders Kafka's
JSON. A type or version not declared here is still named and shown as type
and version, with its bytes in base64.
"""
from __future__ import annotations

import json

from pylog.core.protocol.embedded import Embedded, MalformedDataError
from pylog.core.protocol.schema import Field as F
from pylog.core.protocol.types import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    STRING,
    UINT16,
    UUID,
    Array,
    Truncated,
    read_uvarint,
    uvarint_bytes,
)
from pylog.core.records.errors import CorruptRecordError
from pylog.core.records.kafka_types import b64
from pylog.core.records.schema_json import to_kafka_json

FRAME_VERSION = 1  # the only frame version Kafka reads (0 was the 2.8 preview's)

_ENDPOINT = [F("name", STRING), F("host", STRING), F("port", UINT16), F("security_protocol", INT16)]
_FEATURE = [F("name", STRING), F("min_supported_version", INT16), F("max_supported_version", INT16)]
_NULL_I32S = dict(nullable="0+", default=None)

# apiKey -> (Kafka's MetadataRecordType name, schema)
_SPECS = {
    0: ("REGISTER_BROKER_RECORD", Embedded("RegisterBrokerRecord", "0-4", "0+", [
        F("broker_id", INT32),
        F("is_migrating_zk_broker", BOOL, "2+", default=False),
        F("incarnation_id", UUID),
        F("broker_epoch", INT64),
        F("end_points", _ENDPOINT),
        F("features", _FEATURE),
        F("rack", STRING, nullable="0+"),
        F("fenced", BOOL, default=True),
        F("in_controlled_shutdown", BOOL, "1+", default=False),
        F("log_dirs", Array(UUID), "3+", tag=0),
        # Kafka 4.3 (cordoned log dirs): tagged, null when the broker cordons nothing
        F("cordoned_log_dirs", Array(UUID), "4+", tag=1, nullable="4+", default=None),
    ])),
    1: ("UNREGISTER_BROKER_RECORD", Embedded("UnregisterBrokerRecord", "0", "0+", [
        F("broker_id", INT32), F("broker_epoch", INT64)])),
    2: ("TOPIC_RECORD", Embedded("TopicRecord", "0", "0+", [F("name", STRING), F("topic_id", UUID)])),
    3: ("PARTITION_RECORD", Embedded("PartitionRecord", "0-2", "0+", [
        F("partition_id", INT32, default=-1),
        F("topic_id", UUID),
        F("replicas", Array(INT32)),
        F("isr", Array(INT32)),
        # nullable in the first specs (2.8-3.x); reading null as well costs nothing
        F("removing_replicas", Array(INT32), nullable="0+"),
        F("adding_replicas", Array(INT32), nullable="0+"),
        F("leader", INT32, default=-1),
        F("leader_recovery_state", INT8, tag=0, default=0),
        F("leader_epoch", INT32, default=-1),
        F("partition_epoch", INT32, default=-1),
        F("directories", Array(UUID), "1+"),
        F("eligible_leader_replicas", Array(INT32), "2+", tag=1, nullable="2+", default=None),
        F("last_known_elr", Array(INT32), "2+", tag=2, nullable="2+", default=None),
    ])),
    4: ("CONFIG_RECORD", Embedded("ConfigRecord", "0", "0+", [
        F("resource_type", INT8), F("resource_name", STRING), F("name", STRING),
        F("value", STRING, nullable="0+")])),
    5: ("PARTITION_CHANGE_RECORD", Embedded("PartitionChangeRecord", "0-2", "0+", [
        F("partition_id", INT32, default=-1),
        F("topic_id", UUID),
        F("isr", Array(INT32), tag=0, **_NULL_I32S),
        F("leader", INT32, tag=1, default=-2),
        F("replicas", Array(INT32), tag=2, **_NULL_I32S),
        F("removing_replicas", Array(INT32), tag=3, **_NULL_I32S),
        F("adding_replicas", Array(INT32), tag=4, **_NULL_I32S),
        F("leader_recovery_state", INT8, tag=5, default=-1),
        F("directories", Array(UUID), "1+", tag=8, nullable="1+", default=None),
        F("eligible_leader_replicas", Array(INT32), "2+", tag=6, nullable="2+", default=None),
        F("last_known_elr", Array(INT32), "2+", tag=7, nullable="2+", default=None),
    ])),
    7: ("FENCE_BROKER_RECORD", Embedded("FenceBrokerRecord", "0", "0+", [F("id", INT32), F("epoch", INT64)])),
    8: ("UNFENCE_BROKER_RECORD", Embedded("UnfenceBrokerRecord", "0", "0+", [F("id", INT32), F("epoch", INT64)])),
    9: ("REMOVE_TOPIC_RECORD", Embedded("RemoveTopicRecord", "0", "0+", [F("topic_id", UUID)])),
    10: ("DELEGATION_TOKEN_RECORD", Embedded("DelegationTokenRecord", "0", "0+", [
        F("owner", STRING), F("requester", STRING), F("renewers", Array(STRING)), F("issue_timestamp", INT64),
        F("max_timestamp", INT64), F("expiration_timestamp", INT64), F("token_id", STRING)])),
    11: ("USER_SCRAM_CREDENTIAL_RECORD", Embedded("UserScramCredentialRecord", "0", "0+", [
        F("name", STRING), F("mechanism", INT8), F("salt", BYTES), F("stored_key", BYTES), F("server_key", BYTES),
        F("iterations", INT32)])),
    12: ("FEATURE_LEVEL_RECORD", Embedded("FeatureLevelRecord", "0", "0+", [
        F("name", STRING), F("feature_level", INT16)])),
    14: ("CLIENT_QUOTA_RECORD", Embedded("ClientQuotaRecord", "0", "0+", [
        F("entity", [F("entity_type", STRING), F("entity_name", STRING, nullable="0+")]),
        F("key", STRING), F("value", FLOAT64), F("remove", BOOL)])),
    15: ("PRODUCER_IDS_RECORD", Embedded("ProducerIdsRecord", "0", "0+", [
        F("broker_id", INT32), F("broker_epoch", INT64, default=-1), F("next_producer_id", INT64)])),
    17: ("BROKER_REGISTRATION_CHANGE_RECORD", Embedded("BrokerRegistrationChangeRecord", "0-3", "0+", [
        F("broker_id", INT32),
        F("broker_epoch", INT64),
        F("fenced", INT8, tag=0),
        F("in_controlled_shutdown", INT8, "1+", tag=1),
        F("log_dirs", Array(UUID), "2+", tag=2),
        F("cordoned_log_dirs", Array(UUID), "3+", tag=3, nullable="3+", default=None),
    ])),
    18: ("ACCESS_CONTROL_ENTRY_RECORD", Embedded("AccessControlEntryRecord", "0", "0+", [
        F("id", UUID), F("resource_type", INT8), F("resource_name", STRING), F("pattern_type", INT8),
        F("principal", STRING), F("host", STRING), F("operation", INT8), F("permission_type", INT8)])),
    19: ("REMOVE_ACCESS_CONTROL_ENTRY_RECORD", Embedded("RemoveAccessControlEntryRecord", "0", "0+", [
        F("id", UUID)])),
    20: ("NO_OP_RECORD", Embedded("NoOpRecord", "0", "0+", [])),
    21: ("ZK_MIGRATION_STATE_RECORD", Embedded("ZkMigrationStateRecord", "0", "0+", [
        F("zk_migration_state", INT8)])),
    22: ("REMOVE_USER_SCRAM_CREDENTIAL_RECORD", Embedded("RemoveUserScramCredentialRecord", "0", "0+", [
        F("name", STRING), F("mechanism", INT8)])),
    23: ("BEGIN_TRANSACTION_RECORD", Embedded("BeginTransactionRecord", "0", "0+", [
        F("name", STRING, tag=0, nullable="0+", default=None)])),
    24: ("END_TRANSACTION_RECORD", Embedded("EndTransactionRecord", "0", "0+", [])),
    25: ("ABORT_TRANSACTION_RECORD", Embedded("AbortTransactionRecord", "0", "0+", [
        F("reason", STRING, tag=0, nullable="0+", default=None)])),
    26: ("REMOVE_DELEGATION_TOKEN_RECORD", Embedded("RemoveDelegationTokenRecord", "0", "0+", [
        F("token_id", STRING)])),
    27: ("REGISTER_CONTROLLER_RECORD", Embedded("RegisterControllerRecord", "0", "0+", [
        F("controller_id", INT32), F("incarnation_id", UUID), F("zk_migration_ready", BOOL),
        F("end_points", _ENDPOINT), F("features", _FEATURE)])),
    28: ("CLEAR_ELR_RECORD", Embedded("ClearElrRecord", "0", "0+", [F("topic_name", STRING)])),
}

# apiKey -> Kafka's MetadataRecordType name (ids 6, 13 and 16 are unassigned)
RECORD_TYPES = {key: name for key, (name, _) in _SPECS.items()}
_KEYS = {name: key for key, name in RECORD_TYPES.items()}


def encode_metadata_record(record_type: str, version: int, data: dict) -> bytes:
    """A metadata record value: frame version, apiKey, version, then the body (fields by pylog name)."""
    key = _KEYS[record_type]
    body = _SPECS[key][1].encode_body(data, version)
    return uvarint_bytes(FRAME_VERSION) + uvarint_bytes(key) + uvarint_bytes(version) + body


def decode_metadata_record(value: bytes) -> dict:
    """{'type': NAME, 'version': v, 'data': {...}}; raises CorruptRecordError when undecodable.

    A type or version this table does not know decodes to {'raw': base64 of the message}."""
    value = bytes(value)
    try:
        frame, pos = read_uvarint(value, 0)
        if frame != FRAME_VERSION:
            raise CorruptRecordError(f"unknown metadata record frame version {frame} (only {FRAME_VERSION} is read)")
        api_key, pos = read_uvarint(value, pos)
        version, pos = read_uvarint(value, pos)
    except Truncated as e:
        raise CorruptRecordError(f"metadata record header: {e}") from None
    spec = _SPECS.get(api_key)
    name = spec[0] if spec else f"UNKNOWN_RECORD_TYPE_{api_key}"
    if spec is None or not spec[1].min_version <= version <= spec[1].max_version:
        return {"type": name, "version": version, "data": {"raw": b64(value[pos:])}}
    schema = spec[1]
    try:
        body = schema.decode_body(value, version, pos)
    except MalformedDataError as e:
        raise CorruptRecordError(str(e)) from None
    return {"type": name, "version": version, "data": to_kafka_json(schema.fields, version, body)}


def format_metadata_record(value: bytes | None, offset: int) -> str:
    """Kafka's ClusterMetadataLogMessageParser text (or its error line)."""
    if value is None:
        return f"Error at {offset}, skipping. Missing value"
    try:
        return json.dumps(decode_metadata_record(value), separators=(",", ":"), ensure_ascii=False)
    except CorruptRecordError as e:
        return f"Error at {offset}, skipping. {e}"
