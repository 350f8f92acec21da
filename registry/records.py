"""The `_schemas` topic's records, in Confluent's key and value JSON.

Keys (JSON objects, `keytype` first):
  SCHEMA          {"keytype":"SCHEMA","subject":S,"version":V,"magic":1}
                  value {"subject","version","id","schemaType"?,"references"?,"schema","deleted"},
                  a tombstone when the version is deleted permanently
  CONFIG          {"keytype":"CONFIG","subject":S|null,"magic":0} -> {"compatibilityLevel":L}
  MODE            {"keytype":"MODE","subject":S|null,"magic":0} -> {"mode":M}
  DELETE_SUBJECT  {"keytype":"DELETE_SUBJECT","subject":S,"magic":0} -> {"subject":S,"version":V}
  NOOP            {"keytype":"NOOP","magic":0}
A registry reading the topic from the start rebuilds every id, version, config and
mode; Confluent's and Karapace's registries write and read the same records.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field


def _dumps(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def schema_key(subject: str, version: int) -> bytes:
    return _dumps({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1})


def config_key(subject: str | None) -> bytes:
    return _dumps({"keytype": "CONFIG", "subject": subject, "magic": 0})


def mode_key(subject: str | None) -> bytes:
    return _dumps({"keytype": "MODE", "subject": subject, "magic": 0})


def delete_subject_key(subject: str) -> bytes:
    return _dumps({"keytype": "DELETE_SUBJECT", "subject": subject, "magic": 0})


def noop_key() -> bytes:
    return _dumps({"keytype": "NOOP", "magic": 0})


@dataclass
class SchemaVersion:
    """One subject version: the SCHEMA record's value."""

    subject: str
    version: int
    id: int
    schema_type: str
    schema: str
    references: list = field(default_factory=list)
    deleted: bool = False

    def value(self) -> bytes:
        v = {"subject": self.subject, "version": self.version, "id": self.id}
        if self.schema_type != "AVRO":
            v["schemaType"] = self.schema_type
        if self.references:
            v["references"] = self.references
        v["schema"] = self.schema
        v["deleted"] = self.deleted
        return _dumps(v)

    @classmethod
    def from_value(cls, value: dict) -> "SchemaVersion":
        return cls(subject=value["subject"], version=int(value["version"]), id=int(value["id"]),
                   schema_type=(value.get("schemaType") or "AVRO").upper(), schema=value["schema"],
                   references=list(value.get("references") or []), deleted=bool(value.get("deleted", False)))

    def same_schema(self, other: "SchemaVersion") -> bool:
        return (self.schema_type, self.schema, _refs(self.references)) == \
            (other.schema_type, other.schema, _refs(other.references))


def _refs(refs) -> tuple:
    return tuple((r.get("name"), r.get("subject"), int(r.get("version", 0))) for r in refs)


def parse_key(raw: bytes | None) -> dict | None:
    """A record key as a dict, None when it is not one of the registry's keys."""
    if raw is None:
        return None
    try:
        k = json.loads(bytes(raw))
    except (ValueError, UnicodeDecodeError):
        return None
    return k if isinstance(k, dict) and "keytype" in k else None


def parse_value(raw: bytes | None):
    if raw is None:
        return None
    try:
        return json.loads(bytes(raw))
    except (ValueError, UnicodeDecodeError):
        return None
