"""Helpers for the protocol tests: hypothesis strategies built from the schemas,
normalisation of expected decode results, and a bridge to kafka-python 3.x's
JSON-driven `kafka.protocol` classes (the golden peer)."""
from __future__ import annotations

import uuid

import pytest
from support.examples import examples
from hypothesis import HealthCheck, given, settings, strategies as st

from pylog.core.protocol import API_NAMES, SCHEMAS
from pylog.core.protocol import types as T
from pylog.core.protocol.schema import default_of
from pylog.core.protocol.types import Array, Prim, Struct

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
    "uint32": (0, 2**32 - 1),
    "varint": (-(2**31), 2**31 - 1),
    "varlong": (-(2**63), 2**63 - 1),
    "uvarint": (0, 2**31 - 1),
}

_text = st.text(max_size=8)
_uuids = st.one_of(st.just(T.ZERO_UUID), st.uuids())


# strategies built once per (schema fields, version, flexible): hypothesis works out a new
# strategy's properties (can it be empty, are its values reusable) walking all of it, which cost
# more than drawing from it when every example of every case built its tree again
_STRUCTS: dict = {}
_PRIMS: dict = {}


def prim_strategy(t: Prim):
    s = _PRIMS.get(t.name)
    if s is None:
        s = _PRIMS[t.name] = _prim_strategy(t)
    return s


def _prim_strategy(t: Prim):
    if t.name in _INT_RANGES:
        lo, hi = _INT_RANGES[t.name]
        return st.one_of(st.integers(lo, hi), st.sampled_from([lo, hi, 0, -1 if lo < 0 else 1]))
    if t is T.BOOL:
        return st.booleans()
    if t is T.FLOAT64:
        return st.floats(allow_nan=False)
    if t is T.UUID:
        return _uuids
    if t is T.STRING:
        return _text
    if t is T.BYTES or t is T.RECORDS:
        return st.binary(max_size=24)
    raise TypeError(t)


def field_strategy(f, version, flexible):
    t = f.type
    if isinstance(t, Prim):
        s = prim_strategy(t)
    elif isinstance(t, Struct):
        s = struct_strategy(t.fields, version, flexible)
    else:
        elem = t.elem
        if isinstance(elem, list):
            es = struct_strategy(elem, version, flexible)
        else:
            es = prim_strategy(elem)
        s = st.lists(es, max_size=3)
    if f.is_nullable(version) or t is T.RECORDS:
        s = st.one_of(st.none(), s)
    return s


def struct_strategy(fields, version, flexible):
    """The strategy of a struct's fields present in `version`."""
    key = (id(fields), version, flexible)
    hit = _STRUCTS.get(key)
    if hit is None or hit[0] is not fields:
        hit = _STRUCTS[key] = (fields, _struct_strategy(fields, version, flexible))
    return hit[1]


def _struct_strategy(fields, version, flexible):
    d = {}
    for f in fields:
        if not f.present(version):
            continue
        if f.tag is not None and not flexible:
            continue
        d[f.name] = field_strategy(f, version, flexible)
    return st.fixed_dictionaries(d)


def api_cases(keys=None) -> list:
    """(api key, version, "request" or "response") for every declared version of every API (or of `keys`)."""
    return [(key, v, direction) for key, api in SCHEMAS.items() if keys is None or key in keys
            for v in range(api.min_version, api.max_version + 1) for direction in ("request", "response")]


def case_id(case) -> str:
    key, version, direction = case
    return f"{API_NAMES[key]}-v{version}-{direction}"


def for_each_case(cases: list, max_examples: int):
    """Run the decorated test(case, data) once per case, with a hypothesis `data` to draw from."""
    def wrap(test):
        test = given(data=st.data())(test)
        test = settings(max_examples=examples(max_examples), deadline=None, suppress_health_check=list(HealthCheck))(test)
        return pytest.mark.parametrize("case", cases, ids=list(map(case_id, cases)))(test)
    return wrap


def draw_body(data, case) -> tuple:
    """(fields, flexible, body, expected) for an api_cases case: a hypothesis body of its
    schema and what decoding the body's encoding must give."""
    key, version, direction = case
    api = SCHEMAS[key]
    flexible = api.is_flexible(version)
    fields = api.request if direction == "request" else api.response
    body = data.draw(struct_strategy(fields, version, flexible))
    return fields, flexible, body, normalize(fields, version, flexible, body)


def normalize(fields, version, flexible, value):
    """What decoding the encoding of `value` must give: absent fields take defaults."""
    out = {}
    for f in fields:
        here = f.present(version) and not (f.tag is not None and not flexible)
        if not here or f.name not in value:
            out[f.name] = default_of(f)
            continue
        v = value[f.name]
        t = f.type
        if v is None:
            out[f.name] = None if (f.is_nullable(version) or t is T.RECORDS) else default_of(f)
        elif isinstance(t, Struct):
            out[f.name] = normalize(t.fields, version, flexible, v)
        elif isinstance(t, Array) and isinstance(t.elem, list):
            out[f.name] = [normalize(t.elem, version, flexible, e) for e in v]
        elif isinstance(v, (bytearray, memoryview)):
            out[f.name] = bytes(v)
        else:
            out[f.name] = list(v) if isinstance(v, (list, tuple)) else v
    return out


def plain(value):
    """Decoded dicts with memoryviews turned into bytes (for == and repr)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    if isinstance(value, memoryview):
        return bytes(value)
    return value


# --- kafka-python bridge ------------------------------------------------------

def kp_classes():
    """{api_key: (RequestClass, ResponseClass)} from kafka-python's JSON-driven package."""
    import kafka.protocol.admin as admin
    import kafka.protocol.consumer as consumer
    import kafka.protocol.metadata as metadata
    import kafka.protocol.producer as producer
    import kafka.protocol.sasl as sasl
    from kafka.protocol.api_message import ApiMessage

    out = {}
    for mod in (admin, consumer, metadata, producer, sasl):
        for name in dir(mod):
            cls = getattr(mod, name)
            if isinstance(cls, type) and issubclass(cls, ApiMessage) and cls is not ApiMessage:
                key = cls.API_KEY
                req, resp = out.get(key, (None, None))
                if cls.is_request():
                    req = cls
                else:
                    resp = cls
                out[key] = (req, resp)
    return out


# kafka-python renames Metadata's *_authorized_operations to
# `authorized_operations` and exposes the int32 as a set of bit numbers.
_KP_ALIASES = {"authorized_operations": ("topic_authorized_operations", "cluster_authorized_operations")}


def _bits_from_int(v):
    bits = {i for i in range(32) if ((v & 0xFFFFFFFF) >> i) & 1}
    return None if bits == {31} else bits


def _int_from_bits(bits):
    if bits is None:
        bits = {31}
    n = 0
    for b in bits:
        n |= 1 << b
    return n - (1 << 32) if n >= 1 << 31 else n


def _is_bitfield(kf):
    return getattr(getattr(kf, "_type", None), "__name__", "") == "BitField"


# fields Kafka renamed after the specs kafka-python ships (kafka-python name -> Kafka 4.4's)
_KP_RENAMES = {"generation_id": "generation_id_or_member_epoch"}


def _our_name(kp_name, by_name):
    for alias in _KP_ALIASES.get(kp_name, ()):
        if alias in by_name:
            return alias
    renamed = _KP_RENAMES.get(kp_name)
    return renamed if renamed in by_name and kp_name not in by_name else kp_name


def kp_max_version(kp, key, direction) -> int:
    """The newest version kafka-python's classes know of an API."""
    req, resp = kp[key]
    return (req if direction == "request" else resp)._valid_versions[1]


def to_kp(cls, fields, version, flexible, value):
    """Build a kafka-python data object from a pylog dict (same snake_case names)."""
    kp_fields = cls._struct.fields
    kwargs = {}
    by_name = {f.name: f for f in fields}
    for name, kf in kp_fields.items():
        if not kf.for_version_q(version):
            continue
        ours = _our_name(name, by_name)
        if ours not in value:
            continue
        v = value[ours]
        pf = by_name[ours]
        if (ours != name and name in _KP_ALIASES) or _is_bitfield(kf):
            kwargs[name] = _bits_from_int(v)
            continue
        if pf.tag is not None and flexible:
            # pylog writes a tagged field only when it differs from its default.
            if v == default_of(pf):
                continue
        if kf.is_struct_array() and v is not None:
            sub = pf.type.elem
            v = [to_kp(kf.data_class, sub, version, flexible, e) for e in v]
        elif kf.is_struct() and v is not None:
            v = to_kp(kf.data_class, pf.type.fields, version, flexible, v)
        elif isinstance(v, (bytearray, memoryview)):
            v = bytes(v)
        kwargs[name] = v
    return cls(version=version, **kwargs) if hasattr(cls, "API_KEY") else cls(**kwargs)


def from_kp(obj, fields, version, flexible):
    """A kafka-python decoded object as a pylog-shaped dict (only fields in version)."""
    out = {}
    for f in fields:
        if not f.present(version) or (f.tag is not None and not flexible):
            continue
        kp_name = next((k for k, names in _KP_ALIASES.items() if f.name in names and k in obj._struct.fields),
                       None)
        if kp_name is not None:
            out[f.name] = _int_from_bits(getattr(obj, kp_name))
            continue
        kp_field = next((k for k, ours in _KP_RENAMES.items()
                         if ours == f.name and k in obj._struct.fields), f.name)
        v = getattr(obj, kp_field)
        if _is_bitfield(obj._struct.fields.get(f.name)):
            out[f.name] = _int_from_bits(v)
            continue
        t = f.type
        if v is None and f.tag is not None:
            out[f.name] = default_of(f)  # kafka-python leaves an absent tagged field as None
            continue
        if isinstance(t, Struct) and v is not None:
            v = from_kp(v, t.fields, version, flexible)
        elif isinstance(t, Array) and isinstance(t.elem, list) and v is not None:
            v = [from_kp(e, t.elem, version, flexible) for e in v]
        elif isinstance(v, (bytearray, memoryview)):
            v = bytes(v)
        elif t is T.UUID and v is None:
            v = T.ZERO_UUID  # kafka-python decodes the all-zero uuid as None
        elif t is T.UUID and not isinstance(v, uuid.UUID):
            v = uuid.UUID(bytes=bytes(v)) if isinstance(v, (bytes, bytearray)) else uuid.UUID(str(v))
        out[f.name] = v
    return out


def decoded_subset(expected, got) -> bool:
    """Every field a test set equals what pylog decoded (the rest are defaults)."""
    if isinstance(expected, dict):
        return all(k in got and decoded_subset(v, got[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return len(expected) == len(got) and all(decoded_subset(e, g) for e, g in zip(expected, got))
    if isinstance(expected, bytes):
        return bytes(got) == expected
    return expected == got


def assert_body_matches(what: str, key: int, version: int, direction: str, body: dict, theirs: bytes) -> None:
    """pylog encodes `body` to Kafka's bytes `theirs` and decodes them back to it."""
    from pylog.core.protocol.codec import (
        decode_request_body, decode_response_body, encode_request_body, encode_response_body,
    )

    enc = encode_request_body if direction == "request" else encode_response_body
    dec = decode_request_body if direction == "request" else decode_response_body
    assert enc(key, version, body) == theirs, what
    assert decoded_subset(body, dec(key, version, theirs)), what
