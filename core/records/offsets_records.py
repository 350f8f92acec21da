"""Decoders for `__consumer_offsets` records (classic group coordinator).

Keys start with an int16 version that names the record type: 0 and 1 are
OffsetCommitKey (group, topic, partition), 2 is GroupMetadataKey (group).
Values start with their own int16 version: OffsetCommitValue v0-v4 (v4
flexible) and GroupMetadataValue v0-v4 (v4 flexible). Output dictionaries use
Kafka's JSON field names so the text matches kafka-dump-log's offsets decoder.
"""
from __future__ import annotations

import json

from pylog.core.records.errors import CorruptRecordError
from pylog.core.records.kafka_types import Reader, b64

OFFSET_COMMIT_KEY_VERSIONS = (0, 1)
GROUP_METADATA_KEY_VERSION = 2


def decode_offsets_key(key: bytes) -> tuple[int, dict]:
    """(record type version, data) of a `__consumer_offsets` key."""
    r = Reader(key)
    version = r.int16()
    if version in OFFSET_COMMIT_KEY_VERSIONS:
        return version, {"group": r.string(), "topic": r.string(), "partition": r.int32()}
    if version == GROUP_METADATA_KEY_VERSION:
        return version, {"group": r.string()}
    raise CorruptRecordError(f"unknown __consumer_offsets key type {version}")


def decode_offset_commit_value(value: bytes) -> tuple[int, dict]:
    r = Reader(value)
    version = r.int16()
    if not 0 <= version <= 4:
        raise CorruptRecordError(f"unknown OffsetCommitValue version {version}")
    flexible = version >= 4
    data: dict = {"offset": r.int64()}
    if version >= 3:
        data["leaderEpoch"] = r.int32()
    data["metadata"] = r.string(compact=flexible)
    data["commitTimestamp"] = r.int64()
    if version == 1:
        data["expireTimestamp"] = r.int64()
    if flexible:
        r.tagged_fields()
    return version, data


def decode_group_metadata_value(value: bytes) -> tuple[int, dict]:
    r = Reader(value)
    version = r.int16()
    if not 0 <= version <= 4:
        raise CorruptRecordError(f"unknown GroupMetadataValue version {version}")
    c = version >= 4

    def member() -> dict:
        m = {"memberId": r.string(compact=c)}
        if version >= 3:
            m["groupInstanceId"] = r.string(compact=c, nullable=True)
        m["clientId"] = r.string(compact=c)
        m["clientHost"] = r.string(compact=c)
        if version >= 1:
            m["rebalanceTimeout"] = r.int32()
        m["sessionTimeout"] = r.int32()
        m["subscription"] = b64(r.bytes_(compact=c))
        m["assignment"] = b64(r.bytes_(compact=c))
        if c:
            r.tagged_fields()
        return m

    data: dict = {
        "protocolType": r.string(compact=c),
        "generation": r.int32(),
        "protocol": r.string(compact=c, nullable=True),
        "leader": r.string(compact=c, nullable=True),
    }
    if version >= 2:
        data["currentStateTimestamp"] = r.int64()
    data["members"] = r.array(member, compact=c)
    if c:
        r.tagged_fields()
    return version, data


def format_offsets_record(key: bytes | None, value: bytes | None, offset: int) -> tuple[str | None, str | None]:
    """Kafka's OffsetsMessageParser text: key `{"type":"1","data":{...}}`, value
    `{"version":"3","data":{...}}` or `<DELETE>` for a tombstone."""
    if key is None:
        return f"Error at offset {offset}, skipping. Missing key", None
    try:
        ktype, kdata = decode_offsets_key(key)
        key_text = json.dumps({"type": str(ktype), "data": kdata}, separators=(",", ":"))
        if value is None:
            return key_text, "<DELETE>"
        if ktype == GROUP_METADATA_KEY_VERSION:
            vver, vdata = decode_group_metadata_value(value)
        else:
            vver, vdata = decode_offset_commit_value(value)
        return key_text, json.dumps({"version": str(vver), "data": vdata}, separators=(",", ":"))
    except CorruptRecordError as e:
        return f"Error at offset {offset}, skipping. {e}", None
