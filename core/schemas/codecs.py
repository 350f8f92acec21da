"""One parsed schema per registry type, with the JSON <-> payload codec it implies.

- AVRO: fastavro parses (named types from references first) and encodes and
  decodes the binary encoding; values are JSON as fastavro maps them (records as
  objects, unions untagged, bytes and fixed as strings of code points 0-255,
  as in Avro's JSON encoding).
- JSON: jsonschema validates (the draft the schema names, draft 7 otherwise);
  the payload is the JSON text itself. References are served to `$ref` by name.
- PROTOBUF: protobuf's descriptor pool builds the file (references and Google's
  well-known types first) and json_format maps JSON to messages and back.

`parse(schema_type, text, refs)` raises SchemaError with a one-line reason.
`refs` is [(name, schema_type, text)] in dependency order, transitive ones
included (the registry resolves them).
"""
from __future__ import annotations

import base64
import io
import json
import re
from decimal import Decimal

SCHEMA_TYPES = ("AVRO", "JSON", "PROTOBUF")


class SchemaError(ValueError):
    """A schema that cannot be parsed (the registry answers 42201)."""


class ValueMismatch(ValueError):
    """A value that does not match its schema; `field` names the part at fault when known."""

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


def to_json_value(v):
    """A decoded value made JSON-ready: bytes as Avro's JSON encoding, decimals and times as text."""
    if isinstance(v, dict):
        return {k: to_json_value(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [to_json_value(x) for x in v]
    if isinstance(v, (bytes, bytearray, memoryview)):
        return bytes(v).decode("latin-1")
    if isinstance(v, Decimal):
        return str(v)
    if hasattr(v, "isoformat"):
        return v.isoformat()
    if v is not None and not isinstance(v, (str, int, float, bool)):
        return str(v)
    return v


def _load_json(text: str, what: str):
    try:
        return json.loads(text)
    except (ValueError, TypeError) as e:
        raise SchemaError(f"{what} is not JSON: {e}") from None


# ---------------------------------------------------------------------------- AVRO
class AvroSchema:
    schema_type = "AVRO"

    def __init__(self, text: str, refs=()):
        import fastavro

        self.text = text
        self.obj = _load_json(text, "the Avro schema")
        _avro_structure(self.obj, "")
        named: dict = {}
        self.ref_objs = []
        try:
            for name, _, rtext in refs:
                robj = _load_json(rtext, f"the referenced schema {name!r}")
                self.ref_objs.append(robj)
                fastavro.parse_schema(robj, named_schemas=named, _write_hint=False)
            self.parsed = fastavro.parse_schema(self.obj, named_schemas=dict(named), _write_hint=False)
            # references inlined: fastavro's writer, reader and validator then need no name table
            self.expanded = fastavro.parse_schema(self.obj, named_schemas=named, expand=True)
        except SchemaError:
            raise
        except Exception as e:  # noqa: BLE001 - fastavro raises several kinds for a bad schema
            raise SchemaError(f"invalid Avro schema: {e}") from None
        self.named = named
        self.canonical = json.dumps(self.obj, separators=(",", ":"))
        # JSON strings become bytes only where the schema has bytes or fixed: skip the walk otherwise
        flat = json.dumps(self.expanded)
        self._bytes_in = '"bytes"' in flat or '"fixed"' in flat

    def encode(self, value) -> bytes:
        from fastavro import schemaless_writer
        from fastavro.validation import ValidationError, validate

        if self._bytes_in:
            value = _avro_bytes_in(self.expanded, value, self.named)
        try:
            validate(value, self.expanded, raise_errors=True)
        except ValidationError as e:
            raise ValueMismatch(_avro_validation_message(e), _avro_field(e)) from None
        out = io.BytesIO()
        try:
            schemaless_writer(out, self.expanded, value)
        except Exception as e:  # noqa: BLE001 - a value validate() let through
            raise ValueMismatch(f"does not match the schema: {e}") from None
        return out.getvalue()

    def decode(self, payload, reader: "AvroSchema | None" = None):
        from fastavro import schemaless_reader

        return schemaless_reader(io.BytesIO(bytes(payload)), self.expanded,
                                 reader.expanded if reader is not None else None)


_AVRO_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_UNNAMED = {"null", "boolean", "int", "long", "float", "double", "bytes", "string", "array", "map"}


def _avro_structure(node, path: str) -> None:
    """What the Avro specification requires and fastavro lets pass: records have a fields
    list of uniquely named fields, names are Avro names, unions hold no union and at most
    one of each unnamed type."""
    if isinstance(node, list):
        kinds = []
        for i, b in enumerate(node):
            if isinstance(b, list):
                raise SchemaError(f"invalid Avro schema at {path or '/'}: a union may not hold a union")
            _avro_structure(b, f"{path}/{i}")
            k = b if isinstance(b, str) else (b.get("type") if isinstance(b, dict) else None)
            if k in _UNNAMED:
                if k in kinds:
                    raise SchemaError(f"invalid Avro schema at {path or '/'}: duplicate {k} in union")
                kinds.append(k)
        return
    if not isinstance(node, dict):
        return
    t = node.get("type")
    if t in ("record", "error", "enum", "fixed"):
        name = node.get("name")
        if not isinstance(name, str) or not all(_AVRO_NAME.fullmatch(p) for p in name.split(".")):
            raise SchemaError(f"invalid Avro schema at {path or '/'}: {t} name {name!r} is not an Avro name")
    if t in ("record", "error"):
        fields = node.get("fields")
        if not isinstance(fields, list):
            raise SchemaError(f"invalid Avro schema at {path or '/'}: record {node.get('name')!r} has no fields list")
        seen = set()
        for i, f in enumerate(fields):
            if not isinstance(f, dict) or not isinstance(f.get("name"), str) or "type" not in f:
                raise SchemaError(f"invalid Avro schema at {path}/fields/{i}: a field needs a name and a type")
            if not _AVRO_NAME.fullmatch(f["name"]):
                raise SchemaError(f"invalid Avro schema at {path}/fields/{i}: {f['name']!r} is not an Avro name")
            if f["name"] in seen:
                raise SchemaError(f"invalid Avro schema at {path}/fields/{i}: duplicate field {f['name']!r}")
            seen.add(f["name"])
            _avro_structure(f["type"], f"{path}/fields/{i}/type")
    elif t == "array":
        _avro_structure(node.get("items"), f"{path}/items")
    elif t == "map":
        _avro_structure(node.get("values"), f"{path}/values")
    elif isinstance(t, (dict, list)):
        _avro_structure(t, f"{path}/type")


def _avro_validation_message(e) -> str:
    errs = getattr(e, "errors", None) or [str(e)]
    return "; ".join(str(x) for x in errs[:3])


def _avro_field(e) -> str | None:
    errs = getattr(e, "errors", None) or []
    for x in errs:
        f = getattr(x, "field", None)
        if f:
            return f
    return None


def _avro_bytes_in(schema, value, named):
    """Strings where the schema has bytes or fixed become their code points' bytes (Avro's JSON)."""
    if isinstance(schema, str):
        if schema == "bytes" and isinstance(value, str):
            return value.encode("latin-1", "replace")
        if schema in named:
            return _avro_bytes_in(named[schema], value, named)
        return value
    if isinstance(schema, list):
        if isinstance(value, str) and "string" not in schema and any(
                b == "bytes" or (isinstance(b, dict) and b.get("type") == "fixed") for b in schema):
            return value.encode("latin-1", "replace")
        for b in schema:
            if isinstance(value, dict) and isinstance(b, dict) and b.get("type") == "record":
                return _avro_bytes_in(b, value, named)
        return value
    if not isinstance(schema, dict):
        return value
    t = schema.get("type")
    if t in ("bytes", "fixed") and isinstance(value, str):
        return value.encode("latin-1", "replace")
    if t == "record" and isinstance(value, dict):
        out = dict(value)
        for f in schema.get("fields", ()):
            if f["name"] not in out and "default" in f:  # Avro's JSON defaults, bytes included
                out[f["name"]] = f["default"]
            if f["name"] in out:
                out[f["name"]] = _avro_bytes_in(f["type"], out[f["name"]], named)
        return out
    if t == "array" and isinstance(value, list):
        return [_avro_bytes_in(schema["items"], x, named) for x in value]
    if t == "map" and isinstance(value, dict):
        return {k: _avro_bytes_in(schema["values"], x, named) for k, x in value.items()}
    if isinstance(t, (dict, list)):
        return _avro_bytes_in(t, value, named)
    return value


# ---------------------------------------------------------------------------- JSON
class JsonSchema:
    schema_type = "JSON"

    def __init__(self, text: str, refs=()):
        import jsonschema
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT7

        self.text = text
        self.obj = _load_json(text, "the JSON schema")
        if not isinstance(self.obj, (dict, bool)):
            raise SchemaError("invalid JSON schema: a JSON Schema is an object or a boolean")
        resources = []
        self.ref_objs = {}
        for name, _, rtext in refs:
            robj = _load_json(rtext, f"the referenced schema {name!r}")
            self.ref_objs[name] = robj
            resources.append((name, Resource.from_contents(robj, default_specification=DRAFT7)))
        registry = Registry().with_resources(resources)
        cls = jsonschema.validators.validator_for(self.obj, default=jsonschema.Draft7Validator)
        try:
            cls.check_schema(self.obj)
        except jsonschema.SchemaError as e:
            raise SchemaError(f"invalid JSON schema: {e.message}") from None
        self.validator = cls(self.obj, registry=registry)
        self.canonical = json.dumps(self.obj, separators=(",", ":"))

    def encode(self, value) -> bytes:
        err = next(iter(sorted(self.validator.iter_errors(value), key=lambda e: len(e.path))), None)
        if err is not None:
            path = "/".join(str(p) for p in err.absolute_path)
            raise ValueMismatch(err.message + (f" (at /{path})" if path else ""), path or None)
        return json.dumps(value, separators=(",", ":")).encode()

    def decode(self, payload, reader=None):
        return json.loads(bytes(payload))


# ---------------------------------------------------------------------------- PROTOBUF
def proto_from_text_or_base64(text: str):
    """A FileDescriptorProto from base64 of its bytes (what confluent-kafka registers);
    None when `text` is not base64 of a descriptor (then it is .proto source)."""
    from google.protobuf import descriptor_pb2

    t = text.strip()
    if not t or any(c.isspace() for c in t) or "{" in t or ";" in t:
        return None
    try:
        raw = base64.b64decode(t, validate=True)
    except ValueError:
        return None
    fdp = descriptor_pb2.FileDescriptorProto()
    try:
        fdp.ParseFromString(raw)
    except Exception:  # noqa: BLE001 - protobuf's DecodeError: not a descriptor
        return None
    return fdp


def canonical_proto(fdp) -> bytes:
    """A descriptor's bytes without what compilers add differently (json names, source info)."""
    from google.protobuf import descriptor_pb2

    c = descriptor_pb2.FileDescriptorProto()
    c.CopyFrom(fdp)
    c.ClearField("source_code_info")
    c.ClearField("name")  # the file's name is where a client kept it, not part of the schema

    def strip(msgs):
        for m in msgs:
            for f in m.field:
                f.ClearField("json_name")
            for f in m.extension:
                f.ClearField("json_name")
            strip(m.nested_type)
    strip(c.message_type)
    for f in c.extension:
        f.ClearField("json_name")
    return c.SerializeToString(deterministic=True)


class ProtobufSchema:
    """`compile_text(name, text, {import name: text})` turns .proto source into a
    FileDescriptorProto (protoc's Python module, outside core); without it only the
    serialized form (base64 of a FileDescriptorProto) is accepted."""

    schema_type = "PROTOBUF"
    compile_text = None  # set by commands.schema_registry.proto_text when protoc is installed

    def __init__(self, text: str, refs=(), name: str = "schema.proto"):
        from google.protobuf import descriptor_pool

        self.text = text
        dep_fdps = []
        for rname, _, rtext in refs:
            d = self._to_fdp(rtext, rname, {})
            d.name = rname  # a reference's name is the path the schema imports it by
            dep_fdps.append(d)
        self.fdp = self._to_fdp(text, name, {rname: rtext for rname, _, rtext in refs})
        pool = descriptor_pool.DescriptorPool()
        added = set()
        try:
            for d in [*dep_fdps, self.fdp]:
                for dep in d.dependency:
                    _add_well_known(pool, dep, added)
                if d.name not in added:
                    pool.Add(d)
                    added.add(d.name)
            self.file = pool.FindFileByName(self.fdp.name)
        except SchemaError:
            raise
        except Exception as e:  # noqa: BLE001 - protobuf's TypeError/KeyError for a bad descriptor
            raise SchemaError(f"invalid Protobuf schema: {e}") from None
        self.pool = pool
        self.canonical = base64.b64encode(canonical_proto(self.fdp)).decode()
        self.messages = list(self.file.message_types_by_name.values())

    def _to_fdp(self, text, name, deps):
        fdp = proto_from_text_or_base64(text)
        if fdp is not None:
            if not fdp.name:
                fdp.name = name
            return fdp
        if ProtobufSchema.compile_text is None:
            raise SchemaError("a .proto schema in source form needs protoc (pip install grpcio-tools); "
                              "base64 of a FileDescriptorProto is always accepted")
        return ProtobufSchema.compile_text(name, text, deps)

    def serialized(self) -> str:
        """Base64 of the FileDescriptorProto (the registry's `format=serialized`)."""
        return base64.b64encode(self.fdp.SerializeToString()).decode()

    def message_by_indexes(self, indexes):
        desc = None
        level = self.messages
        for i in indexes:
            if not 0 <= i < len(level):
                raise ValueMismatch(f"message index {i} is not in the schema ({len(level)} messages at that level)")
            desc = level[i]
            level = list(desc.nested_types)
        return desc

    def indexes_of(self, full_name: str | None):
        """Message indexes of a message by full name (the first message when None)."""
        if full_name is None:
            return [0]

        def walk(msgs, path):
            for i, m in enumerate(msgs):
                if m.full_name == full_name or m.name == full_name:
                    return path + [i]
                found = walk(list(m.nested_types), path + [i])
                if found:
                    return found
            return None
        found = walk(self.messages, [])
        if found is None:
            raise ValueMismatch(f"no message {full_name!r} in the schema")
        return found

    def message_class(self, desc):
        from google.protobuf import message_factory

        return message_factory.GetMessageClass(desc)

    def encode(self, value, message: str | None = None) -> bytes:
        from google.protobuf import json_format
        from pylog.core.schemas.wire import encode_indexes

        idx = self.indexes_of(message)
        msg = self.message_class(self.message_by_indexes(idx))()
        try:
            json_format.ParseDict(value, msg)
        except json_format.ParseError as e:
            raise ValueMismatch(str(e)) from None
        return encode_indexes(idx) + msg.SerializeToString()

    def decode(self, payload, reader=None):
        from google.protobuf import json_format
        from pylog.core.schemas.wire import decode_indexes

        idx, n = decode_indexes(payload)
        msg = self.message_class(self.message_by_indexes(idx))()
        msg.ParseFromString(bytes(payload[n:]))
        return json_format.MessageToDict(msg, preserving_proto_field_name=True)


def _add_well_known(pool, dep, added):
    """Google's well-known .proto files a schema imports, from protobuf's own pool."""
    from google.protobuf import descriptor_pb2, descriptor_pool as dp

    if dep in added or not dep.startswith("google/protobuf/"):
        return
    try:
        f = dp.Default().FindFileByName(dep)
    except KeyError:
        _import_well_known(dep)
        try:
            f = dp.Default().FindFileByName(dep)
        except KeyError:
            raise SchemaError(f"unknown import {dep!r}") from None
    fdp = descriptor_pb2.FileDescriptorProto()
    f.CopyToProto(fdp)
    for d in fdp.dependency:
        _add_well_known(pool, d, added)
    pool.Add(fdp)
    added.add(dep)


def _import_well_known(dep: str) -> None:
    import importlib

    mod = "google.protobuf." + dep[len("google/protobuf/"):-len(".proto")].replace("/", ".") + "_pb2"
    try:
        importlib.import_module(mod)
    except ImportError:
        pass


def parse(schema_type: str | None, text: str, refs=(), name: str = "schema.proto"):
    """The parsed schema of a registry type (None or "AVRO", "JSON", "PROTOBUF")."""
    t = (schema_type or "AVRO").upper()
    if not isinstance(text, str):
        raise SchemaError("the schema must be a string")
    if t == "AVRO":
        return AvroSchema(text, refs)
    if t == "JSON":
        return JsonSchema(text, refs)
    if t == "PROTOBUF":
        return ProtobufSchema(text, refs, name)
    raise SchemaError(f"unknown schema type {schema_type!r}: one of AVRO, JSON, PROTOBUF")
