"""The registry's operations over its store, with Confluent's rules and errors.

Writes are serialised per subject within one registry (a lock per subject; ids
are reserved under a lock of their own, so registrations under different subjects
wait for the store side by side) and settled between registries by the log order
(see state.py): a registration picks the next id and version, writes its SCHEMA
record, and checks once it is applied that it won; when another registry's record
came first it tries again from the new state.
"""
from __future__ import annotations

import threading

from pylog.registry import contracts
from pylog.registry import errors as E
from pylog.registry.compat import DEFAULT_LEVEL, LEVELS, check
from pylog.registry.records import (
    SchemaVersion, config_key, delete_subject_key, mode_key, schema_key,
)
from pylog.core.schemas.codecs import SchemaError, parse

MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")
_MAX_ATTEMPTS = 20


class Registry:
    def __init__(self, store, read_only: bool = False, dek=None):
        self.store = store
        self.dek = dek  # the DEK registry (dek.DekRegistry) served beside the schemas
        self.state = store.state
        self.id_lock = threading.Lock()
        self.subject_locks: dict[str, threading.Lock] = {}
        self.reserved_id = 0  # the highest id this registry handed to a registration in flight
        self.forced_read_only = read_only
        self._parsed: dict = {}  # (type, text, references) -> parsed, for schemas in requests
        self._parsed_versions: dict = {}  # (subject, version) -> (the SchemaVersion, its parsed schema)
        self._indexed: dict = {}  # id -> the SchemaVersion its canonical form was indexed from
        self._by_canonical: dict = {}  # (type, canonical, references, contract) -> id
        self._ids_seen = 0  # how many of the state's id_changes are in _by_canonical
        self._index_lock = threading.Lock()
        self._by_subject: dict = {}  # subject -> (type, canonical) -> [SchemaVersion] (see _same_schema)
        self._versions_seen = 0  # how many of the state's new_versions are in _by_subject

    # ---------------------------------------------------------------- parsing
    def resolve_refs(self, refs, seen=None) -> list[tuple[str, str, str]]:
        """[(name, type, text)] of every reference, transitive ones first."""
        out: list = []
        seen = set() if seen is None else seen
        for r in refs or []:
            if not isinstance(r, dict) or not isinstance(r.get("name"), str) or not isinstance(r.get("subject"), str):
                raise E.invalid_schema("a reference needs a name, a subject and a version")
            sv = self._version_or_none(r["subject"], r.get("version", -1), deleted=True)
            if sv is None:
                raise E.invalid_schema(f"reference {r['name']!r}: subject {r['subject']!r} version "
                                       f"{r.get('version')} not found")
            if r["name"] in seen:
                continue
            seen.add(r["name"])
            out += self.resolve_refs(sv.references, seen)
            out.append((r["name"], sv.schema_type, sv.schema))
        return out

    def parsed(self, schema_type: str, text: str, refs):
        key = (schema_type, text, repr(refs))
        p = self._parsed.get(key)
        if p is None:
            try:
                p = parse(schema_type, text, self.resolve_refs(refs))
            except SchemaError as e:
                raise E.invalid_schema(str(e)) from None
            except RecursionError:
                raise E.invalid_schema("the schema nests too deeply") from None
            if len(self._parsed) > 4096:
                self._parsed.clear()
            self._parsed[key] = p
        return p

    def parsed_version(self, sv: SchemaVersion):
        """A stored version's parsed schema, kept as long as that version is the one stored."""
        key = (sv.subject, sv.version)
        kept = self._parsed_versions.get(key)
        if kept is not None and kept[0] is sv:
            return kept[1]
        p = self.parsed(sv.schema_type, sv.schema, sv.references)
        self._parsed_versions[key] = (sv, p)
        return p

    # ---------------------------------------------------------------- reading
    def _version_or_none(self, subject: str, version, deleted: bool = False) -> SchemaVersion | None:
        v = parse_version(version)
        if v == -1:
            return self.state.latest(subject, deleted)
        sv = self.state.subjects.get(subject, {}).get(v)
        return sv if sv is not None and (deleted or not sv.deleted) else None

    def version(self, subject: str, version, deleted: bool = False) -> SchemaVersion:
        v = parse_version(version)
        if not self.state.versions(subject, deleted=True):
            raise E.subject_not_found(subject)
        sv = self._version_or_none(subject, v, deleted)
        if sv is None:
            raise E.version_not_found(subject, version)
        return sv

    def config_extras(self, subject: str | None) -> dict:
        """The data-contract settings (defaultMetadata, overrideRuleSet, ...) in force for `subject`."""
        st = self.state
        return st.config_extras.get(subject) or st.config_extras.get(None) or {}

    def compatibility_group(self, subject: str, metadata: dict | None) -> list[SchemaVersion]:
        """The live versions a new one is checked against: with a `compatibilityGroup` config, only
        those whose metadata property of that name has the new version's value (a major version)."""
        versions = self.state.versions(subject)
        group = self.config_extras(subject).get("compatibilityGroup")
        if not group:
            return versions
        want = ((metadata or {}).get("properties") or {}).get(group)
        return [v for v in versions if ((v.metadata or {}).get("properties") or {}).get(group) == want]

    def schema_by_guid(self, guid: str) -> SchemaVersion:
        sid = self.state.by_guid.get(guid.lower())
        if sid is None:
            raise E.schema_not_found()
        return self.schema_by_id(sid)

    def compatibility(self, subject: str | None) -> str:
        return self.state.configs.get(subject) or self.state.configs.get(None) or DEFAULT_LEVEL

    def mode(self, subject: str | None) -> str:
        if self.forced_read_only:
            return "READONLY"
        return self.state.modes.get(subject) or self.state.modes.get(None) or "READWRITE"

    def check_writable(self, subject: str | None) -> None:
        if self.mode(subject) in ("READONLY", "READONLY_OVERRIDE"):
            raise E.read_only(subject)

    def schema_by_id(self, schema_id: int) -> SchemaVersion:
        sv = self.state.by_id.get(schema_id)
        if sv is None:
            raise E.schema_not_found()
        return sv

    # ---------------------------------------------------------------- registering
    def body_schema(self, body):
        if not isinstance(body, dict) or not isinstance(body.get("schema"), str):
            raise E.invalid_schema("the request needs a \"schema\" string")
        schema_type = (body.get("schemaType") or "AVRO")
        if not isinstance(schema_type, str) or schema_type.upper() not in ("AVRO", "JSON", "PROTOBUF"):
            raise E.RestError(422, E.INVALID_SCHEMA, f"Invalid schema type {schema_type!r}")
        refs = body.get("references") or []
        if not isinstance(refs, list):
            raise E.invalid_schema("\"references\" must be a list")
        refs = [{"name": r.get("name"), "subject": r.get("subject"), "version": parse_version(r.get("version", -1))}
                if isinstance(r, dict) else r for r in refs]
        schema_type = schema_type.upper()
        return schema_type, body["schema"], refs

    def lookup(self, subject: str, body, deleted: bool = False) -> SchemaVersion:
        schema_type, text, refs = self.body_schema(body)
        p = self.parsed(schema_type, text, refs)
        if not self.state.versions(subject, deleted=True):
            raise E.subject_not_found(subject)
        md, rs = contracts.body_contract(body)
        match = self._find(subject, schema_type, p, refs, deleted,
                           None if md is None and rs is None else (md, rs))
        if match is None:
            raise E.schema_not_found()
        return match

    def _find(self, subject, schema_type, p, refs, deleted=False, contract=None):
        """The lowest version of `subject` with this schema (and these references and contract)."""
        found = None
        for v in self._same_schema(subject, schema_type, p.canonical):
            if self.state.subjects.get(subject, {}).get(v.version) is not v or (v.deleted and not deleted):
                continue  # deleted since, permanently or softly
            if contract is not None and (v.metadata, v.rule_set) != contract:
                continue
            if _refs_eq(v.references, refs) and (found is None or v.version < found.version):
                found = v
        return found

    def _same_schema(self, subject: str, schema_type: str, canonical: str) -> list[SchemaVersion]:
        """Every version ever stored under `subject` whose schema has this canonical form, from an
        index that takes in the versions the state stored since it was last asked."""
        with self._index_lock:
            stored = self.state.new_versions
            while self._versions_seen < len(stored):
                v = stored[self._versions_seen]
                self._versions_seen += 1
                try:
                    canon = self.parsed_version(v).canonical
                except E.RestError:
                    continue  # a version that no longer parses matches nothing
                self._by_subject.setdefault(v.subject, {}).setdefault((v.schema_type, canon), []).append(v)
            return list(self._by_subject.get(subject, {}).get((schema_type, canonical), ()))

    def register(self, subject: str, body, normalize: bool = False) -> int:
        schema_type, text, refs = self.body_schema(body)
        mode = self.mode(subject)
        if mode in ("READONLY", "READONLY_OVERRIDE"):
            raise E.read_only(subject)
        p = self.parsed(schema_type, text, refs)
        stored_text = p.canonical if (normalize or schema_type in ("AVRO", "JSON")) and schema_type != "PROTOBUF" \
            else text
        with self.subject_lock(subject):
            for _ in range(_MAX_ATTEMPTS):
                contract = contracts.effective(self, subject, body, self.state.latest(subject))
                if mode == "IMPORT":
                    got = self._import_one(subject, body, schema_type, stored_text, refs, p, contract)
                else:
                    got = self._register_once(subject, schema_type, stored_text, refs, p, contract)
                if got is not None:
                    return got
            raise E.RestError(500, E.STORE_ERROR, "Error while registering schema: lost every race for an id")

    def _register_once(self, subject, schema_type, text, refs, p, contract) -> int | None:
        existing = self._find(subject, schema_type, p, refs, contract=contract)
        if existing is not None:
            return existing.id
        level = self.compatibility(subject)
        olds = [] if level == "NONE" else self.compatibility_group(subject, contract[0])
        if not level.endswith("_TRANSITIVE"):
            olds = olds[-1:]  # the level checks the latest alone
        problems = check(level, p, [self.parsed_version(v) for v in olds])
        if problems:
            raise E.RestError(409, E.INCOMPATIBLE_SCHEMA,
                              f"Schema being registered is incompatible with an earlier schema for subject "
                              f"\"{subject}\", details: [{'; '.join(problems[:20])}]")
        schema_id = self._id_for(schema_type, p, refs, contract)
        holder = self.state.by_id.get(schema_id)
        if holder is not None:
            text = holder.schema  # one id, one stored text (a Protobuf schema may come as source or base64)
        sv = SchemaVersion(subject, self.state.next_version(subject), schema_id, schema_type, text, refs,
                           metadata=contract[0], rule_set=contract[1])
        return sv.id if self._write_version(sv) else None

    def _import_one(self, subject, body, schema_type, text, refs, p, contract) -> int | None:
        try:
            schema_id, version = int(body["id"]), int(body.get("version") or self.state.next_version(subject))
        except (KeyError, TypeError, ValueError):
            raise E.RestError(422, E.INVALID_SCHEMA, "Registering in IMPORT mode needs an \"id\" and a \"version\"") \
                from None
        holder = self.state.by_id.get(schema_id)
        if holder is not None and self.parsed_version(holder).canonical != p.canonical:
            raise E.RestError(422, E.ID_DOES_NOT_MATCH,
                              f"Overwrite new schema with id {schema_id} is not permitted.")
        sv = SchemaVersion(subject, version, schema_id, schema_type, text, refs,
                           metadata=contract[0], rule_set=contract[1])
        if not self._write_version(sv):
            raise E.RestError(422, E.ID_DOES_NOT_MATCH, f"Schema id {schema_id} or version {version} is taken")
        return schema_id

    def subject_lock(self, subject: str) -> threading.Lock:
        with self.id_lock:
            return self.subject_locks.setdefault(subject, threading.Lock())

    def _id_for(self, schema_type, p, refs, contract) -> int:
        with self.id_lock:
            return self._id_for_locked(schema_type, p, refs, contract)

    def _id_for_locked(self, schema_type, p, refs, contract) -> int:
        """The id of this schema when any subject has it (ids are per schema), else the next one."""
        changes = self.state.id_changes
        while self._ids_seen < len(changes):
            sid = changes[self._ids_seen]
            self._ids_seen += 1
            holder = self.state.by_id.get(sid)
            if holder is None or self._indexed.get(sid) is holder:
                continue
            self._indexed[sid] = holder
            try:
                canon = self.parsed_version(holder).canonical
            except E.RestError:
                continue
            self._by_canonical[(holder.schema_type, canon, _refs_key(holder.references),
                                _contract_key((holder.metadata, holder.rule_set)))] = sid
        sid = self._by_canonical.get((schema_type, p.canonical, _refs_key(refs), _contract_key(contract)))
        if sid is not None and self._indexed.get(sid) is self.state.by_id.get(sid):
            return sid
        self.reserved_id = max(self.reserved_id, self.state.max_id) + 1
        return self.reserved_id

    def _write_version(self, sv: SchemaVersion) -> bool:
        """Write the SCHEMA record; True when the log applied it (no other registry came first)."""
        offset = self.store.write(schema_key(sv.subject, sv.version), sv.value())
        with self.store.cond:
            lost = self.state.rejected.pop(offset, None)
            winner = self.state.subjects.get(sv.subject, {}).get(sv.version)
        if lost is None:
            return True
        if winner is not None and winner is not lost:
            # our record is now the key's last value: write the winner's again for compaction
            self.store.write(schema_key(winner.subject, winner.version), winner.value())
        return False

    # ---------------------------------------------------------------- deleting
    def _check_unreferenced(self, subject: str, version: int) -> None:
        """A version another schema references cannot be deleted (REFERENCE_EXISTS)."""
        refs = self.state.referenced_by(subject, version)
        if refs:
            raise E.RestError(422, E.REFERENCE_EXISTS, f"One or more references exist to the schema "
                                                       f"{{subject={subject}, version={version}}}: ids {refs}")

    def delete_subject(self, subject: str, permanent: bool) -> list[int]:
        self.check_writable(subject)
        with self.subject_lock(subject):
            all_versions = self.state.versions(subject, deleted=True)
            if not all_versions:
                raise E.subject_not_found(subject)
            live = self.state.versions(subject)
            for v in all_versions:
                self._check_unreferenced(subject, v.version)
            if permanent:
                if live:
                    raise E.RestError(404, E.SUBJECT_NOT_SOFT_DELETED,
                                      f"Subject '{subject}' was not deleted first before being permanently deleted")
                for v in all_versions:
                    self.store.write(schema_key(subject, v.version), None)
                self.store.write(config_key(subject), None) if subject in self.state.configs else None
                return [v.version for v in all_versions]
            if not live:
                raise E.RestError(404, E.SUBJECT_SOFT_DELETED,
                                  f"Subject '{subject}' was soft deleted.Set permanent=true to delete permanently")
            for v in live:
                self.store.write(schema_key(subject, v.version), v.but(deleted=True).value())
            import json
            self.store.write(delete_subject_key(subject),
                             json.dumps({"subject": subject, "version": live[-1].version}).encode())
            return [v.version for v in live]

    def delete_version(self, subject: str, version, permanent: bool) -> int:
        self.check_writable(subject)
        v = parse_version(version)
        with self.subject_lock(subject):
            if not self.state.versions(subject, deleted=True):
                raise E.subject_not_found(subject)
            # a soft-deleted version named by number is found, to answer 40406 (soft deleted already)
            sv = self._version_or_none(subject, v, deleted=permanent or v != -1)
            if sv is None:
                raise E.version_not_found(subject, version)
            self._check_unreferenced(subject, sv.version)
            if permanent:
                if not sv.deleted:
                    raise E.RestError(404, E.SCHEMA_VERSION_NOT_SOFT_DELETED,
                                      f"Subject '{subject}' Version {sv.version} was not deleted first before "
                                      f"being permanently deleted")
                self.store.write(schema_key(subject, sv.version), None)
                return sv.version
            if sv.deleted:
                raise E.RestError(404, E.SCHEMA_VERSION_SOFT_DELETED,
                                  f"Subject '{subject}' Version {sv.version} was soft deleted.Set permanent=true "
                                  f"to delete permanently")
            self.store.write(schema_key(subject, sv.version), sv.but(deleted=True).value())
            return sv.version

    # ---------------------------------------------------------------- config and mode
    def set_config(self, subject: str | None, body) -> dict:
        """PUT /config: the level and the data-contract settings given, over the ones set before."""
        from pylog.registry.state import CONFIG_EXTRAS

        level = body.get("compatibility", body.get("compatibilityLevel")) if isinstance(body, dict) else None
        extras = {k: body[k] for k in CONFIG_EXTRAS if isinstance(body, dict) and body.get(k) is not None}
        if (level is None and not extras) or (level is not None and (not isinstance(level, str)
                                                                     or level.upper() not in LEVELS)):
            raise E.RestError(422, E.INVALID_COMPATIBILITY_LEVEL,
                              f"Invalid compatibility level. Valid values are {', '.join(LEVELS)}")
        for k in ("defaultMetadata", "overrideMetadata", "defaultRuleSet", "overrideRuleSet"):
            if k in extras and not isinstance(extras[k], dict):
                raise E.RestError(422, E.INVALID_COMPATIBILITY_LEVEL, f"Invalid config: {k} must be an object")
        self.check_writable(subject)
        value = dict(self.state.config_extras.get(subject) or {})
        value.update(extras)
        level = (level or self.state.configs.get(subject) or "").upper()
        if level:
            value["compatibilityLevel"] = level
        import json
        self.store.write(config_key(subject), json.dumps(value).encode())
        return {"compatibility": level, **extras} if level else extras

    def delete_config(self, subject: str | None) -> str:
        self.check_writable(subject)
        old = self.compatibility(subject)
        if subject is not None and subject not in self.state.configs:
            if not self.state.versions(subject, deleted=True):
                raise E.subject_not_found(subject)
        self.store.write(config_key(subject), None)
        return old

    def set_mode(self, subject: str | None, body, force: bool = False) -> str:
        mode = body.get("mode") if isinstance(body, dict) else None
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise E.RestError(422, E.INVALID_MODE, f"Invalid mode. Valid values are {', '.join(MODES)}")
        mode = mode.upper()
        if self.forced_read_only:
            raise E.read_only(subject)
        if mode == "IMPORT" and not force:
            has = self.state.versions(subject) if subject else self.state.subject_names()
            if has:
                raise E.RestError(422, E.OPERATION_NOT_PERMITTED,
                                  "Cannot import since found existing subjects")
        import json
        self.store.write(mode_key(subject), json.dumps({"mode": mode}).encode())
        return mode

    def delete_mode(self, subject: str) -> str:
        old = self.mode(subject)
        self.store.write(mode_key(subject), None)
        return old


def parse_version(version) -> int:
    """A version as Confluent takes it: 1..2^31-1, "latest" or -1 (both: the latest)."""
    if version in ("latest", -1, "-1"):
        return -1
    try:
        v = int(version)
    except (TypeError, ValueError):
        raise E.invalid_version(version) from None
    if isinstance(version, bool) or not 1 <= v <= 2 ** 31 - 1:
        raise E.invalid_version(version)
    return v


def _refs_key(refs) -> tuple:
    return tuple(sorted((r.get("name"), r.get("subject"), int(r.get("version", -1))) for r in refs or []))


def _refs_eq(a, b) -> bool:
    def norm(refs):
        return sorted((r.get("name"), r.get("subject"), int(r.get("version", -1))) for r in refs or [])
    return norm(a) == norm(b)


def _contract_key(contract) -> str:
    import json

    return json.dumps(list(contract or (None, None)), sort_keys=True)
