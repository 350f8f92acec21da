"""What the `_schemas` topic says, applied record by record in offset order (no I/O).

Every registry reading the topic applies the same records with the same rules,
so all of them agree on the state whatever wrote the records. Two registries
racing on one topic are settled here: the record that comes first in the log
wins, and a later one is not applied when it would bind a taken id to another
schema, or give a subject version another schema than the one it has. The
writer of a losing record sees that (its record is in `rejected`) and retries
with the next id or version; it also writes the winner's value again so that
compaction, which keeps the last value of a key, keeps the winner.
"""
from __future__ import annotations

from pylog.registry.records import SchemaVersion, parse_key, parse_value

# a CONFIG record's data-contract settings, beside its compatibility level (Confluent's names)
CONFIG_EXTRAS = ("defaultMetadata", "overrideMetadata", "defaultRuleSet", "overrideRuleSet", "compatibilityGroup",
                 "normalize", "validateFields", "alias")


class RegistryState:
    def __init__(self):
        self.subjects: dict[str, dict[int, SchemaVersion]] = {}
        self.by_id: dict[int, SchemaVersion] = {}  # the first version registered with each id
        self.by_guid: dict[str, int] = {}  # a schema's GUID -> its id
        self.configs: dict[str | None, str] = {}
        self.config_extras: dict[str | None, dict] = {}  # data-contract defaults and overrides per config
        self.modes: dict[str | None, str] = {}
        self.max_id = 0
        self.applied = -1  # offset of the last record applied
        self.rejected: dict[int, SchemaVersion] = {}  # offset -> losing SCHEMA record
        self.changes = 0  # records applied: answers computed at one count stay right until it moves
        self.id_changes: list[int] = []  # every id whose holder in by_id was set, changed or removed, in order
        self.new_versions: list[SchemaVersion] = []  # every version stored, in order (for indexes)

    # ---------------------------------------------------------------- applying
    def apply(self, offset: int, raw_key, raw_value) -> None:
        key = parse_key(raw_key)
        self.applied = max(self.applied, offset)
        self.changes += 1
        if key is None:
            return
        kt = key.get("keytype")
        value = parse_value(raw_value)
        subject = key.get("subject")
        if kt == "SCHEMA":
            self._apply_schema(offset, key, value)
        elif kt == "CONFIG":
            level = (value or {}).get("compatibilityLevel") or (value or {}).get("compatibility")
            if level:
                self.configs[subject] = str(level).upper()
            else:
                self.configs.pop(subject, None)
            extras = {k: v for k, v in (value or {}).items() if k in CONFIG_EXTRAS and v is not None}
            if extras:
                self.config_extras[subject] = extras
            else:
                self.config_extras.pop(subject, None)
        elif kt == "MODE":
            mode = (value or {}).get("mode")
            if mode:
                self.modes[subject] = str(mode).upper()
            else:
                self.modes.pop(subject, None)
        elif kt == "DELETE_SUBJECT" and value:
            upto = int(value.get("version", 0))
            for v in self.subjects.get(subject, {}).values():
                if v.version <= upto:
                    v.deleted = True

    def _apply_schema(self, offset, key, value) -> None:
        subject, version = key.get("subject"), key.get("version")
        versions = self.subjects.get(subject)
        if value is None:  # tombstone: permanently deleted
            if versions is not None:
                gone = versions.pop(int(version), None)
                if not versions:
                    del self.subjects[subject]
                if gone is not None:
                    self._forget_id(gone.id)
            return
        try:
            sv = SchemaVersion.from_value(value)
        except (KeyError, TypeError, ValueError):
            return
        holder = self.by_id.get(sv.id)
        if holder is not None and not holder.same_schema(sv):
            self.rejected[offset] = sv
            return
        current = (versions or {}).get(sv.version)
        if current is not None and (current.id != sv.id or not current.same_schema(sv)):
            self.rejected[offset] = sv
            return
        if current is not None:
            current.deleted = sv.deleted
        else:
            self.subjects.setdefault(subject, {})[sv.version] = sv
            self.new_versions.append(sv)
        if holder is None:
            self.by_id[sv.id] = sv
            self.by_guid[sv.guid] = sv.id
            self.id_changes.append(sv.id)
        self.max_id = max(self.max_id, sv.id)

    def _forget_id(self, schema_id: int) -> None:
        for versions in self.subjects.values():
            for v in versions.values():
                if v.id == schema_id:
                    self.by_id[schema_id] = v
                    self.id_changes.append(schema_id)
                    return
        self.id_changes.append(schema_id)
        gone = self.by_id.pop(schema_id, None)
        if gone is not None:
            self.by_guid.pop(gone.guid, None)

    # ---------------------------------------------------------------- reading
    def versions(self, subject: str, deleted: bool = False) -> list[SchemaVersion]:
        vs = self.subjects.get(subject, {})
        return [vs[k] for k in sorted(vs) if deleted or not vs[k].deleted]

    def subject_names(self, deleted: bool = False) -> list[str]:
        return sorted(s for s in self.subjects if self.versions(s, deleted))

    def latest(self, subject: str, deleted: bool = False) -> SchemaVersion | None:
        vs = self.versions(subject, deleted)
        return vs[-1] if vs else None

    def next_version(self, subject: str) -> int:
        vs = self.subjects.get(subject)
        return max(vs) + 1 if vs else 1

    def referenced_by(self, subject: str, version: int) -> list[int]:
        """Ids of the live schemas whose references name subject/version."""
        out = set()
        for versions in self.subjects.values():
            for v in versions.values():
                if v.deleted:
                    continue
                for r in v.references:
                    if r.get("subject") == subject and int(r.get("version", -1)) == version:
                        out.add(v.id)
        return sorted(out)
