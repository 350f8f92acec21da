"""Decoder for KRaft `__cluster_metadata` records (the value of each record).

A metadata record value is: frame version (unsigned varint, 0 or 1), record
type = apiKey (unsigned varint), record version (unsigned varint), then the
message in its schema. Every record type is named; the fields are decoded for
the common ones (FeatureLevel, Topic, Partition, RemoveTopic, NoOp, ProducerIds)
and the rest are shown as type and version with the undecoded bytes in base64.
"""
from __future__ import annotations

import json

from pylog.core.records.errors import CorruptRecordError
from pylog.core.records.kafka_types import Reader, b64

RECORD_TYPES = {
    0: "REGISTER_BROKER_RECORD",
    1: "UNREGISTER_BROKER_RECORD",
    2: "TOPIC_RECORD",
    3: "PARTITION_RECORD",
    4: "CONFIG_RECORD",
    5: "PARTITION_CHANGE_RECORD",
    6: "ACCESS_CONTROL_ENTRY_RECORD",
    7: "REMOVE_ACCESS_CONTROL_ENTRY_RECORD",
    8: "FENCE_BROKER_RECORD",
    9: "UNFENCE_BROKER_RECORD",
    10: "REMOVE_TOPIC_RECORD",
    11: "USER_SCRAM_CREDENTIAL_RECORD",
    12: "FEATURE_LEVEL_RECORD",
    14: "CLIENT_QUOTA_RECORD",
    15: "PRODUCER_IDS_RECORD",
    17: "BROKER_REGISTRATION_CHANGE_RECORD",
    20: "NO_OP_RECORD",
}


def _feature_level(r: Reader, version: int) -> dict:
    return {"name": r.string(compact=True), "featureLevel": r.int16()}


def _topic(r: Reader, version: int) -> dict:
    return {"name": r.string(compact=True), "topicId": r.uuid()}


def _partition(r: Reader, version: int) -> dict:
    i32 = r.int32
    d = {
        "partitionId": i32(),
        "topicId": r.uuid(),
        "replicas": r.array(i32, compact=True),
        "isr": r.array(i32, compact=True),
        "removingReplicas": r.array(i32, compact=True, nullable=True),
        "addingReplicas": r.array(i32, compact=True, nullable=True),
        "leader": i32(),
    }
    if version >= 1:
        d["leaderRecoveryState"] = 0
    d["leaderEpoch"] = i32()
    d["partitionEpoch"] = i32()
    if version >= 1:
        d["directories"] = r.array(r.uuid, compact=True)
    return d


def _producer_ids(r: Reader, version: int) -> dict:
    return {"brokerId": r.int32(), "brokerEpoch": r.int64(), "nextProducerId": r.int64()}


_DECODERS = {12: _feature_level, 2: _topic, 3: _partition, 15: _producer_ids}


def decode_metadata_record(value: bytes) -> dict:
    """{'type': NAME, 'version': v, 'data': {...}}; raises CorruptRecordError when undecodable."""
    r = Reader(value)
    frame = r.uvarint()
    if frame not in (0, 1):
        raise CorruptRecordError(f"unknown metadata record frame version {frame}")
    api_key = r.uvarint()
    version = r.uvarint()
    name = RECORD_TYPES.get(api_key, f"UNKNOWN_RECORD_TYPE_{api_key}")
    decoder = _DECODERS.get(api_key)
    if decoder is None:
        return {"type": name, "version": version, "data": {"raw": b64(r.buf[r.pos:])}}
    data = decoder(r, version)
    tags = r.tagged_fields()
    if api_key == 3 and 0 in tags:  # PartitionRecord tag 0: LeaderRecoveryState int8
        data["leaderRecoveryState"] = int.from_bytes(tags[0][:1], "big", signed=True)
    return {"type": name, "version": version, "data": data}


def format_metadata_record(value: bytes | None, offset: int) -> str:
    """Kafka's ClusterMetadataLogMessageParser text (or its error line)."""
    if value is None:
        return f"Error at {offset}, skipping. Missing value"
    try:
        return json.dumps(decode_metadata_record(value), separators=(",", ":"))
    except CorruptRecordError as e:
        return f"Error at {offset}, skipping. {e}"
