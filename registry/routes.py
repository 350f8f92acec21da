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
    out["schema"] = schema_text(reg, sv, fmt)
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


def route(reg, method: str, parts: list[str], q: dict, body):
    """(status, JSON) for a request; RestError for Confluent's error answers."""
    st = reg.state
    n = len(parts)
    if n == 0:
        return 200, {}
    head = parts[0]
    if head == "schemas":
        if n == 1 and method == "GET":
            prefix = q.get("subjectPrefix", "")
            deleted, latest_only = _flag(q, "deleted"), _flag(q, "latestOnly")
            out = []
            for s in st.subject_names(deleted):
                if not s.startswith(prefix):
                    continue
                vs = st.versions(s, deleted)
                out += [version_json(reg, v) for v in (vs[-1:] if latest_only else vs)]
            return 200, _page(out, q)
        if n == 2 and parts[1] == "types" and method == "GET":
            return 200, ["JSON", "PROTOBUF", "AVRO"]
        if n >= 3 and parts[1] == "ids" and method == "GET":
            sv = reg.schema_by_id(_id(parts[2]))
            if n == 3:
                return 200, _schema_only(reg, sv, q.get("format"))
            if n == 4 and parts[3] == "schema":
                return 200, _raw_schema(sv)
            deleted = _flag(q, "deleted")
            holders = [v for s in st.subject_names(True) for v in st.versions(s, deleted) if v.id == sv.id]
            if n == 4 and parts[3] == "subjects":
                return 200, sorted({v.subject for v in holders})
            if n == 4 and parts[3] == "versions":
                return 200, [{"subject": v.subject, "version": v.version} for v in holders]
    elif head == "subjects":
        return _subjects(reg, method, parts, q, body)
    elif head == "compatibility" and n >= 4 and parts[1] == "subjects" and parts[3] == "versions" \
            and method == "POST":
        return _compatibility(reg, parts[2], parts[4] if n == 5 else None, q, body)
    elif head in ("config", "mode") and n <= 2:
        return _subject_setting(reg, head, method, parts[1] if n == 2 else None, q, body)
    elif head == "contexts" and n == 1 and method == "GET":
        return 200, ["."]
    raise E.RestError(404, 404, "HTTP 404 Not Found")


def _subject_setting(reg, head: str, method: str, subject: str | None, q: dict, body):
    """GET, PUT, DELETE /config[/SUBJECT] (the compatibility level) and /mode[/SUBJECT]."""
    config = head == "config"
    if method == "GET":
        if subject is not None and subject not in (reg.state.configs if config else reg.state.modes) \
                and not _flag(q, "defaultToGlobal"):
            code, what = ((E.SUBJECT_LEVEL_COMPATIBILITY_NOT_CONFIGURED, "compatibility") if config
                          else (E.SUBJECT_LEVEL_MODE_NOT_CONFIGURED, "mode"))
            raise E.RestError(404, code, f"Subject '{subject}' does not have subject-level {what} configured")
        return 200, {"compatibilityLevel": reg.compatibility(subject)} if config else {"mode": reg.mode(subject)}
    if method == "PUT":
        return 200, ({"compatibility": reg.set_config(subject, body)} if config
                     else {"mode": reg.set_mode(subject, body, _flag(q, "force"))})
    if method == "DELETE" and (config or subject is not None):
        return 200, {"compatibilityLevel": reg.delete_config(subject)} if config else {"mode": reg.delete_mode(subject)}
    raise _not_allowed()


def _not_allowed():
    return E.RestError(405, 405, "HTTP 405 Method Not Allowed")


def _subjects(reg, method, parts, q, body):
    st = reg.state
    n = len(parts)
    deleted = _flag(q, "deleted")
    if n == 1:
        if method != "GET":
            raise _not_allowed()
        prefix = q.get("subjectPrefix", "")
        names = [s for s in st.subject_names(deleted or _flag(q, "deletedOnly")) if s.startswith(prefix)]
        if _flag(q, "deletedOnly"):
            live = set(st.subject_names())
            names = [s for s in names if s not in live]
        return 200, _page(names, q)
    subject = parts[1]
    if n == 2:
        if method == "POST":
            sv = reg.lookup(subject, body, deleted)
            return 200, version_json(reg, sv)
        if method == "DELETE":
            return 200, reg.delete_subject(subject, _flag(q, "permanent"))
        raise _not_allowed()
    if parts[2] != "versions":
        raise E.RestError(404, 404, "HTTP 404 Not Found")
    if n == 3:
        if method == "GET":
            vs = st.versions(subject, deleted or _flag(q, "deletedOnly"))
            if not vs:
                raise E.subject_not_found(subject)
            if _flag(q, "deletedOnly"):
                vs = [v for v in vs if v.deleted]
            return 200, _page([v.version for v in vs], q)
        if method == "POST":
            schema_id = reg.register(subject, body, _flag(q, "normalize"))
            return 200, {"id": schema_id}
        raise _not_allowed()
    version = parts[3]
    if n == 4:
        if method == "GET":
            sv = reg.version(subject, version, deleted)
            return 200, version_json(reg, sv, q.get("format"))
        if method == "DELETE":
            return 200, reg.delete_version(subject, version, _flag(q, "permanent"))
        raise _not_allowed()
    if n == 5 and method == "GET":
        if parts[4] == "schema":
            return 200, _raw_schema(reg.version(subject, version, deleted))
        if parts[4] == "referencedby":
            sv = reg.version(subject, version, True)
            return 200, _page(st.referenced_by(subject, sv.version), q)
    raise E.RestError(404, 404, "HTTP 404 Not Found")


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
