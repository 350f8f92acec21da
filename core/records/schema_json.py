"""Kafka's JSON rendering of a struct decoded with a declared schema.

The internal-topic decoders (`__consumer_offsets`, `__cluster_metadata`)
declare their records with the wire protocol's `Field`s and decode them with
its compiled codec; this module turns the decoded dict into the JSON Kafka's
generated `*JsonConverter.write` produces, so kafka-dump-log parsers keep
working: camelCase keys in schema order, only the fields of that version,
tagged fields only when they differ from their default, UUIDs in Kafka's
URL-safe base64 text, bytes in standard base64.
"""
from __future__ import annotations

import json
import uuid

from pylog.core.protocol.embedded import MalformedDataError
from pylog.core.protocol.schema import default_of
from pylog.core.protocol.types import BYTES, UUID, Array, Prim, Struct
from pylog.core.records.errors import CorruptRecordError
from pylog.core.records.kafka_types import b64, uuid_text


def camel(name: str) -> str:
    """snake_case declaration name -> Kafka's JSON key ("leader_epoch" -> "leaderEpoch")."""
    head, *rest = name.split("_")
    return head + "".join(p[:1].upper() + p[1:] for p in rest)


def to_kafka_json(fields, version: int, data: dict) -> dict:
    out = {}
    for f in fields:
        if not f.present(version):
            continue
        value = data.get(f.name)
        if f.is_tagged(version) and value == default_of(f):
            continue
        out[camel(f.name)] = _value(f.type, value, version)
    return out


def _value(t, value, version: int):
    if value is None:
        return None
    if isinstance(t, Prim):
        if t is UUID:
            return uuid_text(value) if isinstance(value, uuid.UUID) else value
        if t is BYTES:
            return b64(bytes(value))
        return value
    if isinstance(t, Array):
        elem = t.elem
        if isinstance(elem, list):
            return [to_kafka_json(elem, version, x) for x in value]
        return [_value(elem, x, version) for x in value]
    if isinstance(t, Struct):
        return to_kafka_json(t.fields, version, value)
    raise TypeError(t)


__all__ = ["camel", "to_kafka_json"]


def decode_versioned(schema, data) -> tuple[int, dict]:
    """(version, Kafka JSON) of an int16 version + struct record of an internal topic.

    Bytes after the struct are ignored, as Kafka's reader does; an unknown
    version or a short struct is a CorruptRecordError.
    """
    version = int.from_bytes(bytes(data[:2]), "big", signed=True) if len(data) >= 2 else None
    if version is None or not schema.min_version <= version <= schema.max_version:
        raise CorruptRecordError(f"unknown {schema.name} version {version}")
    try:
        body = schema.decode_body(data, version, 2, strict=False)
    except MalformedDataError as e:
        raise CorruptRecordError(str(e)) from None
    return version, to_kafka_json(schema.fields, version, body)


def format_dump_record(key, value, offset: int, decode_key, decode_value) -> tuple[str | None, str | None]:
    """(key text, payload text) of one internal-topic record as kafka-dump-log's decoders print it:
    key `{"type":"1","data":{...}}`, value `{"version":"3","data":{...}}`, `<DELETE>` for a
    tombstone, an "Error at offset" line for a bad one. `decode_value(key_type, value)`."""
    if key is None:
        return f"Error at offset {offset}, skipping. Missing key", None
    try:
        ktype, kdata = decode_key(key)
        key_text = json.dumps({"type": str(ktype), "data": kdata}, separators=(",", ":"))
        if value is None:
            return key_text, "<DELETE>"
        vver, vdata = decode_value(ktype, value)
        return key_text, json.dumps({"version": str(vver), "data": vdata}, separators=(",", ":"))
    except CorruptRecordError as e:
        return f"Error at offset {offset}, skipping. {e}", None
