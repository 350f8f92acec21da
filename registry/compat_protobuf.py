"""Protobuf compatibility, by the changes Confluent's registry rules out.

Messages are matched by full name, fields by number. Incompatible (as Confluent
documents): PACKAGE_CHANGED, MESSAGE_REMOVED, FIELD_KIND_CHANGED (scalar,
enum and message swapped), FIELD_SCALAR_KIND_CHANGED outside the wire-compatible
groups (int32/uint32/int64/uint64/bool, sint32/sint64, fixed32/sfixed32,
fixed64/sfixed64, string/bytes), FIELD_NAMED_TYPE_CHANGED, FIELD_NUMERIC_LABEL_CHANGED
(a numeric field turned repeated or back), REQUIRED_FIELD_ADDED,
REQUIRED_FIELD_REMOVED, ONEOF_FIELD_REMOVED, MULTIPLE_FIELDS_MOVED_TO_ONEOF and
FIELD_MOVED_TO_EXISTING_ONEOF. Adding or removing optional fields, renaming
fields, adding messages and enum values, and string/bytes/message fields turned
repeated are compatible.
"""
from __future__ import annotations

_MESSAGE, _ENUM, _GROUP = 11, 14, 10
_SCALAR_NAMES = {
    1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64", 7: "fixed32", 8: "bool",
    9: "string", 12: "bytes", 13: "uint32", 15: "sfixed32", 16: "sfixed64", 17: "sint32", 18: "sint64",
}
_GROUPS = [{"int32", "uint32", "int64", "uint64", "bool"}, {"sint32", "sint64"}, {"fixed32", "sfixed32"},
           {"fixed64", "sfixed64"}, {"string", "bytes"}]
_REPEATED, _REQUIRED = 3, 2


def _messages(fdp) -> dict:
    out = {}

    def walk(msgs, prefix):
        for m in msgs:
            full = f"{prefix}.{m.name}" if prefix else m.name
            if not m.options.map_entry:
                out[full] = m
            walk(m.nested_type, full)
    walk(fdp.message_type, fdp.package)
    return out


def _kind(f) -> str:
    if f.type in (_MESSAGE, _GROUP):
        return "message"
    if f.type == _ENUM:
        return "enum"
    return "scalar"


def _real_oneof(m, f):
    if f.HasField("oneof_index") and not f.proto3_optional:
        return m.oneof_decl[f.oneof_index].name
    return None


def _compare_field(name, fo, fu, out):
    path = f"{name}.{fu.name}#{fu.number}"
    ko, ku = _kind(fo), _kind(fu)
    if ko != ku:
        out.append(f"FIELD_KIND_CHANGED at '{path}': {ko} -> {ku}")
        return
    if ko == "scalar":
        so, su = _SCALAR_NAMES.get(fo.type), _SCALAR_NAMES.get(fu.type)
        if so != su and not any(so in g and su in g for g in _GROUPS):
            out.append(f"FIELD_SCALAR_KIND_CHANGED at '{path}': {so} -> {su}")
            return
    elif fo.type_name.lstrip(".") != fu.type_name.lstrip("."):
        out.append(f"FIELD_NAMED_TYPE_CHANGED at '{path}': {fo.type_name.lstrip('.')} -> {fu.type_name.lstrip('.')}")
        return
    if (fo.label == _REPEATED) != (fu.label == _REPEATED):
        if ko == "message" or _SCALAR_NAMES.get(fu.type) in ("string", "bytes"):
            return  # FIELD_STRING_OR_BYTES_LABEL_CHANGED: compatible
        out.append(f"FIELD_NUMERIC_LABEL_CHANGED at '{path}': repeated changed")


def _compare_message(name, mo, mu, out):
    fo = {f.number: f for f in mo.field}
    fu = {f.number: f for f in mu.field}
    for num, f in fo.items():
        if num not in fu and f.label == _REQUIRED:
            out.append(f"REQUIRED_FIELD_REMOVED at '{name}.{f.name}#{num}'")
    moved: dict[str, list[str]] = {}
    for num, f in fu.items():
        old = fo.get(num)
        if old is None:
            if f.label == _REQUIRED:
                out.append(f"REQUIRED_FIELD_ADDED at '{name}.{f.name}#{num}'")
            continue
        _compare_field(name, old, f, out)
        o1, o2 = _real_oneof(mo, old), _real_oneof(mu, f)
        if o1 is None and o2 is not None:
            moved.setdefault(o2, []).append(f.name)
    old_oneofs = {}
    for f in mo.field:
        o = _real_oneof(mo, f)
        if o is not None:
            old_oneofs.setdefault(o, set()).add(f.number)
    for o, names in moved.items():
        if o in old_oneofs:
            out.append(f"FIELD_MOVED_TO_EXISTING_ONEOF at '{name}.{o}': {names}")
        elif len(names) > 1:
            out.append(f"MULTIPLE_FIELDS_MOVED_TO_ONEOF at '{name}.{o}': {names}")
    for o, nums in old_oneofs.items():
        for num in nums:
            f = fu.get(num)
            if f is None or _real_oneof(mu, f) != o:
                out.append(f"ONEOF_FIELD_REMOVED at '{name}.{o}': field #{num}")


def incompatibilities(reader, writer) -> list[str]:
    """Why `reader` (the update) breaks data written with `writer` (the original); [] when it does not."""
    out: list[str] = []
    orig, upd = writer.fdp, reader.fdp
    if orig.package != upd.package:
        out.append(f"PACKAGE_CHANGED: {orig.package!r} -> {upd.package!r}")
        return out
    mo, mu = _messages(orig), _messages(upd)
    for name, m in mo.items():
        if name not in mu:
            out.append(f"MESSAGE_REMOVED at '{name}'")
            continue
        _compare_message(name, m, mu[name], out)
    return out
