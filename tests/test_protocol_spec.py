"""Cross-check every pylog declaration against Kafka's own message specs.

The reference peer's kafka-clients jar (tests/kafka/pom.xml) holds Kafka's message JSON
files; for each API and version pylog declares, the fields present (order, snake_case name, type,
nullability, tag, default) must match the spec's. This catches a field
declared in the wrong place or version range even where two fields share a
type (which a pure byte round trip cannot)."""
from __future__ import annotations

import json
import os
import re

import pytest

from pylog.core.protocol import SCHEMAS
from pylog.core.protocol import types as T
from pylog.core.protocol.schema import MISSING, parse_versions
from pylog.core.protocol.types import Array, Prim, Struct


_TYPES = {"int8": T.INT8, "int16": T.INT16, "int32": T.INT32, "int64": T.INT64, "uint16": T.UINT16,
          "uint32": T.UINT32, "float64": T.FLOAT64, "bool": T.BOOL, "uuid": T.UUID, "string": T.STRING,
          "bytes": T.BYTES, "records": T.RECORDS}


def snake(name):
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name)
    s = re.sub(r"([A-Z]+)([A-Z][a-z])", r"\1_\2", s)
    return s.lower()


def load(name):
    """The spec of the reference peer (the pinned kafka-clients jar): the versions Kafka
    serves are the ones pylog declares against."""
    return json.loads(re.sub(r"//.*", "", _kafka_clients_spec(name)))


def _kafka_clients_spec(name):
    import zipfile

    from support.kafka_peer import classpath

    jar = next(p for p in classpath().split(os.pathsep) if os.path.basename(p).startswith("kafka-clients-"))
    with zipfile.ZipFile(jar) as z:
        return z.read(f"common/message/{name}.json").decode()


def in_range(spec, v):
    r = parse_versions(spec)
    return r is not None and r[0] <= v <= r[1]


def spec_default(f, t):
    d = f.get("default")
    if d is None:
        return MISSING
    if isinstance(t, Prim):
        if t in (T.INT8, T.INT16, T.INT32, T.INT64):
            return int(d, 0) if isinstance(d, str) else int(d)
        if t is T.BOOL:
            return str(d).lower() == "true"
        if t is T.STRING:
            return None if d == "null" else d
    return MISSING


def compare(spec_fields, common, ours, v, flexible, path):
    present = [f for f in spec_fields if in_range(f["versions"], v)]
    theirs_regular = [f for f in present if not ("tag" in f and flexible and in_range(f.get("taggedVersions", f["versions"]), v))]
    theirs_regular = [f for f in theirs_regular if not ("tag" in f and not flexible)]
    theirs_tagged = sorted([f for f in present if "tag" in f and flexible], key=lambda f: f["tag"])
    our_present = [f for f in ours if f.present(v)]
    our_regular = [f for f in our_present if not (f.tag is not None)]
    our_tagged = sorted([f for f in our_present if f.tag is not None and flexible], key=lambda f: f.tag)
    assert [snake(f["name"]) for f in theirs_regular] == [f.name for f in our_regular], f"{path} v{v}"
    assert [(f["tag"], snake(f["name"])) for f in theirs_tagged] == [(f.tag, f.name) for f in our_tagged], f"{path} v{v} tags"
    for sf, of in zip(theirs_regular + theirs_tagged, our_regular + our_tagged):
        where = f"{path}.{of.name} v{v}"
        ty = sf["type"]
        nullable = in_range(sf.get("nullableVersions"), v)
        assert nullable == of.is_nullable(v) or of.type is T.RECORDS, where + " nullability"
        if ty.startswith("[]"):
            inner = ty[2:]
            assert isinstance(of.type, Array), where
            if inner in _TYPES:
                assert of.type.elem is _TYPES[inner], where
            else:
                sub = sf.get("fields") or common[inner]
                assert isinstance(of.type.elem, list), where
                compare(sub, common, of.type.elem, v, flexible, where)
        elif ty in _TYPES:
            assert of.type is _TYPES[ty], where
            d = spec_default(sf, of.type)
            if d is not MISSING:
                assert of.default == d, where + f" default {of.default!r} != {d!r}"
            elif of.default is not MISSING and of.type is not T.STRING:
                assert of.default == _TYPES[ty].default, where + " default"
        else:
            sub = sf.get("fields") or common[ty]
            assert isinstance(of.type, Struct), where
            compare(sub, common, of.type.fields, v, flexible, where)


CASES = [(key, d) for key in SCHEMAS for d in ("request", "response")]


@pytest.mark.parametrize("key,direction", CASES, ids=[f"{SCHEMAS[k].name}-{d}" for k, d in CASES])
def test_declaration_matches_kafka_spec(key, direction):
    api = SCHEMAS[key]
    spec = load(api.name + direction.capitalize())
    assert spec["apiKey"] == key
    valid = parse_versions(spec["validVersions"])
    assert valid[0] <= api.min_version and api.max_version <= valid[1]
    flex = parse_versions(spec["flexibleVersions"])
    assert (flex[0] if flex else None) == api.flexible_min
    common = {c["name"]: c["fields"] for c in spec.get("commonStructs", [])}
    ours = api.request if direction == "request" else api.response
    for v in range(api.min_version, api.max_version + 1):
        compare(spec["fields"], common, ours, v, api.is_flexible(v), api.name + direction.capitalize())
