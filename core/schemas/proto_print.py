"""A FileDescriptorProto printed as .proto source: what the registry serves for a
Protobuf schema registered in serialized form (Confluent's registry answers .proto
text unless `format=serialized` is asked). Covers proto2/proto3 messages, nested
types, enums, oneofs, maps, packages, imports and the common file options."""
from __future__ import annotations

_SCALARS = {
    1: "double", 2: "float", 3: "int64", 4: "uint64", 5: "int32", 6: "fixed64", 7: "fixed32",
    8: "bool", 9: "string", 12: "bytes", 13: "uint32", 15: "sfixed32", 16: "sfixed64",
    17: "sint32", 18: "sint64",
}
_LABEL = {1: "optional", 2: "required", 3: "repeated"}
_GROUP, _MESSAGE, _ENUM = 10, 11, 14


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


def to_proto_text(fdp) -> str:
    syntax = fdp.syntax or "proto2"
    out = [f"syntax = {_quote(syntax)};"]
    if fdp.package:
        out.append(f"package {fdp.package};")
    for i, dep in enumerate(fdp.dependency):
        kind = "public " if i in fdp.public_dependency else ""
        out.append(f"import {kind}{_quote(dep)};")
    o = fdp.options
    for name in ("java_package", "java_outer_classname", "go_package", "csharp_namespace", "objc_class_prefix",
                 "php_namespace", "ruby_package"):
        if o.HasField(name):
            out.append(f"option {name} = {_quote(getattr(o, name))};")
    if o.HasField("java_multiple_files"):
        out.append(f"option java_multiple_files = {str(o.java_multiple_files).lower()};")
    out.append("")
    for m in fdp.message_type:
        _message(m, out, "", syntax)
    for e in fdp.enum_type:
        _enum(e, out, "")
    return "\n".join(out) + "\n"


def _type_name(f) -> str:
    if f.type in (_MESSAGE, _ENUM, _GROUP):
        return f.type_name[1:] if f.type_name.startswith(".") else f.type_name
    return _SCALARS[f.type]


def _message(m, out, ind, syntax):
    out.append(f"{ind}message {m.name} {{")
    inner = ind + "  "
    maps = {n.name: n for n in m.nested_type if n.options.map_entry}
    for e in m.enum_type:
        _enum(e, out, inner)
    fields = list(m.field)
    map_field_of = {}
    for f in fields:
        if f.type == _MESSAGE and f.label == 3:
            entry = f.type_name.rsplit(".", 1)[-1]
            if entry in maps:
                map_field_of[entry] = f
    # protoc lists nested types in declaration order, a map field's entry where the field is
    # declared: messages are printed between the fields so that the order (and with it the
    # message indexes of the wire format) comes out the same
    pos = 0
    done_oneofs: set = set()
    for n in m.nested_type:
        if n.options.map_entry:
            f = map_field_of.get(n.name)
            if f is not None:
                while pos < len(fields):
                    pos += 1
                    _field(m, fields[pos - 1], maps, out, inner, syntax, done_oneofs)
                    if fields[pos - 1] is f:
                        break
        else:
            _message(n, out, inner, syntax)
    while pos < len(fields):
        _field(m, fields[pos], maps, out, inner, syntax, done_oneofs)
        pos += 1
    for r in m.reserved_range:
        out.append(f"{inner}reserved {r.start}" + (f" to {r.end - 1};" if r.end - 1 > r.start else ";"))
    for n in m.reserved_name:
        out.append(f"{inner}reserved {_quote(n)};")
    out.append(f"{ind}}}")


def _field(m, f, maps, out, inner, syntax, done_oneofs):
    if f.HasField("oneof_index") and not f.proto3_optional:
        if f.oneof_index in done_oneofs:
            return
        done_oneofs.add(f.oneof_index)
        out.append(f"{inner}oneof {m.oneof_decl[f.oneof_index].name} {{")
        for g in m.field:
            if g.HasField("oneof_index") and not g.proto3_optional and g.oneof_index == f.oneof_index:
                out.append(f"{inner}  {_type_name(g)} {g.name} = {g.number};")
        out.append(f"{inner}}}")
        return
    entry = maps.get(f.type_name.rsplit(".", 1)[-1]) if f.type == _MESSAGE and f.label == 3 else None
    if entry is not None:
        k, v = entry.field[0], entry.field[1]
        out.append(f"{inner}map<{_type_name(k)}, {_type_name(v)}> {f.name} = {f.number};")
        return
    label = _LABEL[f.label]
    if syntax == "proto3" and label == "optional" and not f.proto3_optional:
        label = ""
    opts = []
    if f.HasField("default_value"):
        dv = f.default_value
        opts.append(f"default = {_quote(dv) if f.type in (9, 12) else dv}")
    if f.options.HasField("packed"):
        opts.append(f"packed = {str(f.options.packed).lower()}")
    suffix = f" [{', '.join(opts)}]" if opts else ""
    out.append(f"{inner}{label + ' ' if label else ''}{_type_name(f)} {f.name} = {f.number}{suffix};")


def _enum(e, out, ind):
    out.append(f"{ind}enum {e.name} {{")
    for v in e.value:
        out.append(f"{ind}  {v.name} = {v.number};")
    out.append(f"{ind}}}")
