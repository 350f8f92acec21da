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

from pylog.core.protocol.facts import NO_FACTS, Facts
from pylog.core.protocol.fields import MISSING, Field, default_of, defaults_dict, parse_versions

__all__ = ["Field", "Api", "parse_versions", "MISSING", "default_of", "defaults_dict", "API_VERSIONS_KEY"]

# ApiVersions (declared in apis/meta.py) answers with response header v0 at every version
API_VERSIONS_KEY = 18


class Api:
    """One API: key, name, valid versions, first flexible version, both directions."""

    __slots__ = ("key", "name", "min_version", "max_version", "flexible_min", "request", "response", "facts",
                 "_codecs")

    def __init__(self, key, name, versions, flexible, request, response, facts: Facts = NO_FACTS):
        lo, hi = parse_versions(versions)
        self.key = key
        self.name = name
        self.min_version = lo
        self.max_version = hi
        flex = parse_versions(flexible)
        self.flexible_min = flex[0] if flex else None
        self.request = request
        self.response = response
        self.facts = facts  # what the broker reads of its requests besides the values (facts.py)
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
