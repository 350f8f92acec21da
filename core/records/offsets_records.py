"""Decoders for `__consumer_offsets` records (classic group coordinator), as kafka-dump-log prints them.

Keys start with an int16 version that names the record type: 0 and 1 are
OffsetCommitKey (group, topic, partition), 2 is GroupMetadataKey (group).
Values start with their own int16 version: OffsetCommitValue v0-v4 (v4
flexible) and GroupMetadataValue v0-v4 (v4 flexible). Types 3-8 and 16 are the
KIP-848 consumer-group records (`pylog.core.protocol.consumer_group_records`), 10-15 the
share-group ones (`pylog.core.protocol.share_group_records`). The schemas are the
group coordinator's own declarations (`pylog.core.protocol.internal_records`),
decoded by the protocol codec; this module only renders them with Kafka's
JSON field names (`schema_json`) so the text matches kafka-dump-log's
offsets decoder.
"""
from __future__ import annotations

import base64

from pylog.core.protocol import consumer_group_records as cgr
from pylog.core.protocol import consumer_protocol as cp
from pylog.core.protocol import internal_records as ir
from pylog.core.protocol import share_group_records as sgr
from pylog.core.records.errors import CorruptRecordError
from pylog.core.records.schema_json import decode_versioned, format_dump_record, to_kafka_json

OFFSET_COMMIT_KEY_VERSIONS = (0, 1)
GROUP_METADATA_KEY_VERSION = 2


def decode_offsets_key(key: bytes) -> tuple[int, dict]:
    """(record type version, data) of a `__consumer_offsets` key."""
    version = int.from_bytes(bytes(key[:2]), "big", signed=True) if len(key) >= 2 else None
    if version in OFFSET_COMMIT_KEY_VERSIONS:
        return decode_versioned(ir.OFFSET_COMMIT_KEY, key)
    if version == GROUP_METADATA_KEY_VERSION:
        return decode_versioned(ir.GROUP_METADATA_KEY, key)
    if version in cgr.RECORD_TYPES:
        return decode_versioned(cgr.RECORD_TYPES[version][0], key)
    if version in sgr.RECORD_TYPES:
        return decode_versioned(sgr.RECORD_TYPES[version][0], key)
    raise CorruptRecordError(f"unknown __consumer_offsets key type {version}")


def decode_offset_commit_value(value: bytes) -> tuple[int, dict]:
    return decode_versioned(ir.OFFSET_COMMIT_VALUE, value)


def decode_group_metadata_value(value: bytes) -> tuple[int, dict]:
    """GroupMetadataValue as Kafka's JSON; for protocolType "consumer" each member's subscription and
    assignment are decoded too (Kafka 4's offsets decoder does; bytes it cannot read stay base64)."""
    version, data = decode_versioned(ir.GROUP_METADATA_VALUE, value)
    if data.get("protocolType") == "consumer":
        for member in data.get("members") or ():
            for field, schema in (("subscription", cp.SUBSCRIPTION), ("assignment", cp.ASSIGNMENT)):
                member[field] = _consumer_protocol_json(schema, member.get(field))
    return version, data


def _consumer_protocol_json(schema, text):
    if not isinstance(text, str):
        return text
    try:
        raw = base64.b64decode(text, validate=True)
        version = int.from_bytes(raw[:2], "big", signed=True)
        if len(raw) < 2 or not schema.min_version <= version <= schema.max_version:
            return text
        return to_kafka_json(schema.fields, version, schema.decode_body(raw, version, 2, strict=False))
    except (ValueError, cp.MalformedDataError):
        return text


def format_offsets_record(key: bytes | None, value: bytes | None, offset: int) -> tuple[str | None, str | None]:
    """Kafka's OffsetsMessageParser text: key `{"type":"1","data":{...}}`, value
    `{"version":"3","data":{...}}` or `<DELETE>` for a tombstone."""
    return format_dump_record(key, value, offset, decode_offsets_key, _decode_offsets_value)


def _decode_offsets_value(ktype: int, value: bytes) -> tuple[int, dict]:
    if ktype == GROUP_METADATA_KEY_VERSION:
        return decode_group_metadata_value(value)
    if ktype in cgr.RECORD_TYPES:
        return decode_versioned(cgr.RECORD_TYPES[ktype][1], value)
    if ktype in sgr.RECORD_TYPES:
        return decode_versioned(sgr.RECORD_TYPES[ktype][1], value)
    return decode_offset_commit_value(value)
