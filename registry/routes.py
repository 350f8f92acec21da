"""Confluent's REST API: one function per route, each answering (status, JSON body).

Paths and answers follow Confluent's API reference: /schemas, /subjects,
/compatibility, /config, /mode and /. Query flags are Confluent's
(`deleted`, `permanent`, `normalize`, `verbose`, `defaultToGlobal`,
`subjectPrefix`, `latestOnly`, `format`, `force`).
"""
from __future__ import annotations

import base64

from pylog.registry import errors as E
from pylog.registry.compat import check
from pylog.registry.registry import parse_version


def _flag(q: dict, name: str, default: bool = False) -> bool:
    v = q.get(name)
    return default if v is None else v.lower() == "true"


def version_json(reg, sv, fmt: str | None = None) -> dict:
    """A schema version as Confluent's REST API answers it: subject, version, id and the schema."""
    return {"subject": sv.subject, "version": sv.version, "id": sv.id, **_schema_only(reg, sv, fmt)}


def schema_text(reg, sv, fmt: str | None) -> str:
    """The schema as stored, but Protobuf as Confluent answers it: `format=serialized` is base64 of
    the FileDescriptorProto, otherwise .proto source (printed when it was registered serialized)."""
    if sv.schema_type == "PROTOBUF":
        from pylog.core.schemas.codecs import proto_from_text_or_base64

        if fmt == "serialized":
            return reg.parsed_version(sv).serialized()
        if fmt in (None, "", "default", "ignore_extensions") and proto_from_text_or_base64(sv.schema) is not None:
            from pylog.core.schemas.proto_print import to_proto_text

            return to_proto_text(reg.parsed_version(sv).fdp)
    return sv.schema


def _schema_only(reg, sv, fmt=None) -> dict:
    out = {}
    if sv.schema_type != "AVRO":
        out["schemaType"] = sv.schema_type
    if sv.references:
        out["references"] = sv.references
    if sv.metadata:
        out["metadata"] = sv.metadata
    if sv.rule_set:
        out["ruleSet"] = sv.rule_set
    out["schema"] = schema_text(reg, sv, fmt)
    out["guid"] = sv.guid
    return out


def _raw_schema(sv):
    import json

    if sv.schema_type in ("AVRO", "JSON"):
        try:
            return json.loads(sv.schema)
        except ValueError:
            pass
    return sv.schema


def _page(items: list, q: dict) -> list:
    """Confluent's offset and limit (-1: all) on list answers."""
    try:
        offset = max(0, int(q.get("offset", 0)))
        limit = int(q.get("limit", -1))
    except ValueError:
        raise E.RestError(422, E.INVALID_PAGINATION, "offset and limit must be integers") from None
    items = items[offset:]
    return items if limit < 0 else items[:limit]


def _id(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise E.RestError(404, E.SCHEMA_NOT_FOUND, "Schema not found") from None


def _root(reg, m, q, body):
    return 200, {}


def _list_schemas(reg, m, q, body):
    st = reg.state
    prefix = q.get("subjectPrefix", "")
    deleted, latest_only = _flag(q, "deleted"), _flag(q, "latestOnly")
    out = []
    for s in st.subject_names(deleted):
        if not s.startswith(prefix):
            continue
        vs = st.versions(s, deleted)
        out += [version_json(reg, v) for v in (vs[-1:] if latest_only else vs)]
    return 200, _page(out, q)


def _types(reg, m, q, body):
    return 200, ["JSON", "PROTOBUF", "AVRO"]


def _by_id(reg, m, q, body):
    return 200, _schema_only(reg, reg.schema_by_id(_id(m["id"])), q.get("format"))


def _by_id_schema(reg, m, q, body):
    return 200, _raw_schema(reg.schema_by_id(_id(m["id"])))


def _id_holders(reg, m, q):
    sv = reg.schema_by_id(_id(m["id"]))
    st, deleted = reg.state, _flag(q, "deleted")
    return [v for s in st.subject_names(True) for v in st.versions(s, deleted) if v.id == sv.id]


def _by_id_subjects(reg, m, q, body):
    return 200, sorted({v.subject for v in _id_holders(reg, m, q)})


def _by_id_versions(reg, m, q, body):
    return 200, [{"subject": v.subject, "version": v.version} for v in _id_holders(reg, m, q)]


def _contexts(reg, m, q, body):
    """The default context and every context a `:.ctx:subject` name puts a subject in."""
    names = {"."} | {s[1:].split(":", 1)[0] for s in reg.state.subject_names()
                     if s.startswith(":.") and ":" in s[2:]}
    return 200, _page(sorted(names), q)


def _config_get(reg, m, q, body):
    return _subject_setting(reg, "config", "GET", m.get("subject"), q, body)


def _config_put(reg, m, q, body):
    return _subject_setting(reg, "config", "PUT", m.get("subject"), q, body)


def _config_delete(reg, m, q, body):
    return _subject_setting(reg, "config", "DELETE", m.get("subject"), q, body)


def _mode_get(reg, m, q, body):
    return _subject_setting(reg, "mode", "GET", m.get("subject"), q, body)


def _mode_put(reg, m, q, body):
    return _subject_setting(reg, "mode", "PUT", m.get("subject"), q, body)


def _mode_delete(reg, m, q, body):
    return _subject_setting(reg, "mode", "DELETE", m.get("subject"), q, body)


def _compat_latest(reg, m, q, body):
    return _compatibility(reg, m["subject"], None, q, body)


def _compat_version(reg, m, q, body):
    return _compatibility(reg, m["subject"], m["version"], q, body)


def _subject_setting(reg, head: str, method: str, subject: str | None, q: dict, body):
    """GET, PUT, DELETE /config[/SUBJECT] (the compatibility level) and /mode[/SUBJECT]."""
    config = head == "config"
    if method == "GET":
        has = (subject in reg.state.configs or subject in reg.state.config_extras) if config \
            else subject in reg.state.modes
        if subject is not None and not has \
                and not _flag(q, "defaultToGlobal"):
            code, what = ((E.SUBJECT_LEVEL_COMPATIBILITY_NOT_CONFIGURED, "compatibility") if config
                          else (E.SUBJECT_LEVEL_MODE_NOT_CONFIGURED, "mode"))
            raise E.RestError(404, code, f"Subject '{subject}' does not have subject-level {what} configured")
        if not config:
            return 200, {"mode": reg.mode(subject)}
        extras = reg.state.config_extras.get(subject) if subject is not None and not _flag(q, "defaultToGlobal") \
            else reg.config_extras(subject)
        return 200, {"compatibilityLevel": reg.compatibility(subject), **(extras or {})}
    if method == "PUT":
        return 200, (reg.set_config(subject, body) if config
                     else {"mode": reg.set_mode(subject, body, _flag(q, "force"))})
    if method == "DELETE" and (config or subject is not None):
        return 200, {"compatibilityLevel": reg.delete_config(subject)} if config else {"mode": reg.delete_mode(subject)}
    raise E.RestError(405, 405, "HTTP 405 Method Not Allowed")


def _subjects_list(reg, m, q, body):
    st = reg.state
    prefix = q.get("subjectPrefix", "")
    deleted_only = _flag(q, "deletedOnly")
    names = [s for s in st.subject_names(_flag(q, "deleted") or deleted_only) if s.startswith(prefix)]
    if deleted_only:
        live = set(st.subject_names())
        names = [s for s in names if s not in live]
    return 200, _page(names, q)


def _subject_lookup(reg, m, q, body):
    return 200, version_json(reg, reg.lookup(m["subject"], body, _flag(q, "deleted")))


def _subject_delete(reg, m, q, body):
    return 200, reg.delete_subject(m["subject"], _flag(q, "permanent"))


def _versions_list(reg, m, q, body):
    subject = m["subject"]
    deleted_only = _flag(q, "deletedOnly")
    vs = reg.state.versions(subject, _flag(q, "deleted") or deleted_only)
    if not vs:
        raise E.subject_not_found(subject)
    if deleted_only:
        vs = [v for v in vs if v.deleted]
    return 200, _page([v.version for v in vs], q)


def _register(reg, m, q, body):
    schema_id = reg.register(m["subject"], body, _flag(q, "normalize"))
    return 200, {"id": schema_id, "guid": reg.schema_by_id(schema_id).guid}


def _by_guid(reg, m, q, body):
    sv = reg.schema_by_guid(m["guid"])
    return 200, {"id": sv.id, **_schema_only(reg, sv, q.get("format"))}


def _subject_metadata(reg, m, q, body):
    """GET /subjects/S/metadata?key=K&value=V...: the latest version whose metadata has those properties."""
    from pylog.registry.contracts import matches_properties

    getall = getattr(q, "getall", None)
    keys, values = (getall("key", []), getall("value", [])) if getall else ([q.get("key")], [q.get("value")])
    wanted = [(k, v) for k, v in zip(keys, values) if k is not None]
    vs = reg.state.versions(m["subject"], _flag(q, "deleted"))
    if not reg.state.versions(m["subject"], True):
        raise E.subject_not_found(m["subject"])
    for sv in reversed(vs):
        if matches_properties(sv, wanted):
            return 200, version_json(reg, sv, q.get("format"))
    raise E.schema_not_found(f"No schema in subject '{m['subject']}' has the metadata {dict(wanted)}")


def _version_get(reg, m, q, body):
    sv = reg.version(m["subject"], m["version"], _flag(q, "deleted"))
    return 200, version_json(reg, sv, q.get("format"))


def _version_delete(reg, m, q, body):
    return 200, reg.delete_version(m["subject"], m["version"], _flag(q, "permanent"))


def _version_schema(reg, m, q, body):
    return 200, _raw_schema(reg.version(m["subject"], m["version"], _flag(q, "deleted")))


def _referenced_by(reg, m, q, body):
    sv = reg.version(m["subject"], m["version"], True)
    return 200, _page(reg.state.referenced_by(m["subject"], sv.version), q)


def _compatibility(reg, subject, version, q, body):
    st = reg.state
    schema_type, text, refs = reg.body_schema(body)
    p = reg.parsed(schema_type, text, refs)
    level = reg.compatibility(subject)
    if version is None:
        olds = [reg.parsed_version(v) for v in st.versions(subject)]
    else:
        parse_version(version)
        if not st.versions(subject, deleted=True):
            raise E.subject_not_found(subject)
        sv = reg.version(subject, version)
        olds = [reg.parsed_version(sv)]
        # one version named: the level's direction, against that version alone
        level = level.replace("_TRANSITIVE", "")
    problems = check(level, p, olds)
    out = {"is_compatible": not problems}
    if _flag(q, "verbose"):
        out["messages"] = problems
    return 200, out


def basic_auth_ok(header: str | None, users: dict[str, str]) -> str | None:
    """The user a `Basic` Authorization header names when its password is right."""
    if not header or not header.startswith("Basic "):
        return None
    try:
        user, _, password = base64.b64decode(header[6:]).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return None
    import hmac

    want = users.get(user)
    if want is None or not hmac.compare_digest(want.encode(), password.encode()):
        return None
    return user


# (method, path, answer, blocking): the registry's REST API, declared. `blocking` answers write to
# the store (or may wait on it) and run on worker threads; the others answer from memory on the loop.
ROUTES = [
    ("GET", "/", _root, False),
    ("GET", "/schemas", _list_schemas, False),
    ("GET", "/schemas/types", _types, False),
    ("GET", "/schemas/ids/{id}", _by_id, False),
    ("GET", "/schemas/ids/{id}/schema", _by_id_schema, False),
    ("GET", "/schemas/ids/{id}/subjects", _by_id_subjects, False),
    ("GET", "/schemas/ids/{id}/versions", _by_id_versions, False),
    ("GET", "/schemas/guids/{guid}", _by_guid, False),
    ("GET", "/subjects/{subject}/metadata", _subject_metadata, False),
    ("GET", "/subjects", _subjects_list, False),
    ("POST", "/subjects/{subject}", _subject_lookup, False),
    ("DELETE", "/subjects/{subject}", _subject_delete, True),
    ("GET", "/subjects/{subject}/versions", _versions_list, False),
    ("POST", "/subjects/{subject}/versions", _register, True),
    ("GET", "/subjects/{subject}/versions/{version}", _version_get, False),
    ("DELETE", "/subjects/{subject}/versions/{version}", _version_delete, True),
    ("GET", "/subjects/{subject}/versions/{version}/schema", _version_schema, False),
    ("GET", "/subjects/{subject}/versions/{version}/referencedby", _referenced_by, False),
    ("POST", "/compatibility/subjects/{subject}/versions", _compat_latest, False),
    ("POST", "/compatibility/subjects/{subject}/versions/{version}", _compat_version, False),
    ("GET", "/config", _config_get, False),
    ("PUT", "/config", _config_put, True),
    ("DELETE", "/config", _config_delete, True),
    ("GET", "/config/{subject}", _config_get, False),
    ("PUT", "/config/{subject}", _config_put, True),
    ("DELETE", "/config/{subject}", _config_delete, True),
    ("GET", "/mode", _mode_get, False),
    ("PUT", "/mode", _mode_put, True),
    ("GET", "/mode/{subject}", _mode_get, False),
    ("PUT", "/mode/{subject}", _mode_put, True),
    ("DELETE", "/mode/{subject}", _mode_delete, True),
    ("GET", "/contexts", _contexts, False),
]
