"""The declarative schema form: Field, Api.

Each API is declared once as data (apis/*.py):

    Field("partition_index", INT32)
    Field("topics", [Field(...), ...], versions="4+", nullable="1+")   # array of struct
    Field("replica_nodes", Array(INT32))                              # array of primitive
    Field("current_leader", Struct(Field(...)), tag=0, versions="12+")  # tagged field

Version strings follow Kafka's message specs: "3+", "3-7", "5", "none".
The codec (compiler.py) compiles each (struct, version) into generated
Python once and caches it.
"""
from __future__ import annotations

from pylog.core.protocol.types import Array, Prim, Struct

__all__ = ["Field", "Api", "parse_versions", "MISSING", "default_of", "defaults_dict", "API_VERSIONS_KEY"]

MAX_VERSION = 0x7FFF
# ApiVersions (declared in apis/meta.py) answers with response header v0 at every version
API_VERSIONS_KEY = 18


class _Missing:
    def __repr__(self):
        return "MISSING"


MISSING = _Missing()


def parse_versions(spec) -> tuple[int, int] | None:
    """"3+" -> (3, 32767), "3-7" -> (3, 7), "5" -> (5, 5), "none"/None -> None."""
    if spec is None or spec == "none":
        return None
    if isinstance(spec, tuple):
        return spec
    spec = str(spec).strip()
    if spec.endswith("+"):
        return int(spec[:-1]), MAX_VERSION
    if "-" in spec:
        lo, hi = spec.split("-")
        return int(lo), int(hi)
    return int(spec), int(spec)


class Field:
    """One field of a struct.

    type: a Prim, Array(...), Struct(...), or a list of Fields (array of struct).
    versions: where the field exists; nullable: where it may be null;
    tag: tagged-field number (the field then lives in the tagged section in
    the versions given by `tagged`, default = `versions`); default: the value
    used when the field is absent from an encoded dict or from the version.
    """

    __slots__ = ("name", "type", "versions", "nullable", "tag", "tagged", "default")

    def __init__(self, name, type, versions="0+", nullable=None, tag=None, tagged=None, default=MISSING):
        if isinstance(type, list):
            type = Array(type)
        self.name = name
        self.type = type
        self.versions = parse_versions(versions)
        self.nullable = parse_versions(nullable)
        self.tag = tag
        self.tagged = parse_versions(tagged) if tagged is not None else (self.versions if tag is not None else None)
        self.default = default

    def present(self, version: int) -> bool:
        """The field exists at `version`."""
        v = self.versions
        return v is not None and v[0] <= version <= v[1]

    def is_tagged(self, version: int) -> bool:
        """The field lives in the tagged section at `version`."""
        t = self.tagged
        return t is not None and t[0] <= version <= t[1]

    def is_nullable(self, version: int) -> bool:
        """The field may be null at `version`."""
        n = self.nullable
        return n is not None and n[0] <= version <= n[1]

    def __repr__(self):
        return f"Field({self.name!r}, {self.type!r})"


def default_of(field: Field):
    """A fresh default value for a field (lists and dicts are new objects)."""
    d = field.default
    t = field.type
    if d is not MISSING:
        if isinstance(d, list):
            return list(d)
        return d
    if isinstance(t, Prim):
        return t.default
    if isinstance(t, Array):
        return []
    if isinstance(t, Struct):
        return defaults_dict(t.fields)
    raise TypeError(t)


def defaults_dict(fields) -> dict:
    """A struct with every field at its default."""
    return {f.name: default_of(f) for f in fields}


class Api:
    """One API: key, name, valid versions, first flexible version, both directions."""

    __slots__ = ("key", "name", "min_version", "max_version", "flexible_min", "request", "response", "_codecs")

    def __init__(self, key, name, versions, flexible, request, response):
        lo, hi = parse_versions(versions)
        self.key = key
        self.name = name
        self.min_version = lo
        self.max_version = hi
        flex = parse_versions(flexible)
        self.flexible_min = flex[0] if flex else None
        self.request = request
        self.response = response
        self._codecs = {}

    def is_flexible(self, version: int) -> bool:
        """`version` uses compact types and tagged fields (KIP-482)."""
        return self.flexible_min is not None and version >= self.flexible_min

    def supports(self, version: int) -> bool:
        """`version` is in the declared range."""
        return self.min_version <= version <= self.max_version

    def request_header_version(self, version: int) -> int:
        """Request header v2 for flexible versions, else v1."""
        return 2 if self.is_flexible(version) else 1

    def response_header_version(self, version: int) -> int:
        """Response header v1 for flexible versions, else v0 (ApiVersions: always v0)."""
        # ApiVersions answers with header v0 always, so a client that sent a
        # too-new version can still read the error and fall back.
        if self.key == API_VERSIONS_KEY:
            return 0
        return 1 if self.is_flexible(version) else 0

    def decoder(self, direction: str, version: int):
        """The decode function of the 'request' or 'response' at version, compiled once."""
        return self._codecs.get((direction, version, "decode")) or self._compile(direction, version, "decode")

    def encoder(self, direction: str, version: int):
        """The encode function of the 'request' or 'response' at version, compiled once."""
        return self._codecs.get((direction, version, "encode")) or self._compile(direction, version, "encode")

    def codec(self, direction: str, version: int):
        """(decode, encode) for 'request' or 'response' at version."""
        return self.decoder(direction, version), self.encoder(direction, version)

    def _compile(self, direction: str, version: int, kind: str):
        from pylog.core.protocol.compiler import compile_decoder, compile_encoder

        fields = self.request if direction == "request" else self.response
        fn = (compile_decoder if kind == "decode" else compile_encoder)(fields, version, self.is_flexible(version))
        self._codecs[(direction, version, kind)] = fn
        return fn

    def __repr__(self):
        return f"Api({self.key}, {self.name!r}, v{self.min_version}-{self.max_version})"
