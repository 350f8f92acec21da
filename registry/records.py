"""The `_schemas` topic's records, in Confluent's key and value JSON.

Keys (JSON objects, `keytype` first):
  SCHEMA          {"keytype":"SCHEMA","subject":S,"version":V,"magic":1}
                  value {"subject","version","id","schemaType"?,"references"?,"metadata"?,"ruleSet"?,
                  "schema","deleted"} (metadata and ruleSet: a data contract),
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
    metadata: dict | None = None  # a data contract's {"tags", "properties", "sensitive"}
    rule_set: dict | None = None  # a data contract's {"migrationRules", "domainRules", "encodingRules"}

    def value(self) -> bytes:
        v = {"subject": self.subject, "version": self.version, "id": self.id}
        if self.schema_type != "AVRO":
            v["schemaType"] = self.schema_type
        if self.references:
            v["references"] = self.references
        if self.metadata:
            v["metadata"] = self.metadata
        if self.rule_set:
            v["ruleSet"] = self.rule_set
        v["schema"] = self.schema
        v["deleted"] = self.deleted
        return _dumps(v)

    def but(self, **changes) -> "SchemaVersion":
        """A copy with some fields changed (a soft delete)."""
        import dataclasses

        return dataclasses.replace(self, **changes)

    @property
    def guid(self) -> str:
        """The schema's GUID: an MD5 of its text, references and data contract, spelled as a UUID
        (as Confluent derives it), so every registry reading the log agrees on it."""
        g = self.__dict__.get("_guid_cache")
        if g is None:
            import hashlib
            import uuid

            md = hashlib.md5(self.schema.encode())
            for extra in (self.references, self.metadata, self.rule_set):
                if extra:
                    md.update(json.dumps(extra, sort_keys=True, separators=(",", ":")).encode())
            g = str(uuid.UUID(bytes=md.digest()))
            self.__dict__["_guid_cache"] = g
        return g

    @classmethod
    def from_value(cls, value: dict) -> "SchemaVersion":
        return cls(subject=value["subject"], version=int(value["version"]), id=int(value["id"]),
                   schema_type=(value.get("schemaType") or "AVRO").upper(), schema=value["schema"],
                   references=list(value.get("references") or []), deleted=bool(value.get("deleted", False)),
                   metadata=value.get("metadata") or None, rule_set=value.get("ruleSet") or None)

    def same_schema(self, other: "SchemaVersion") -> bool:
        return (self.schema_type, self.schema, _refs(self.references), self.metadata, self.rule_set) == \
            (other.schema_type, other.schema, _refs(other.references), other.metadata, other.rule_set)


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
