"""Versioned structs embedded in other data: an int16 version then the struct.

Used for the consumer protocol (JoinGroup metadata, SyncGroup assignments)
and the `__consumer_offsets` keys/values. They share the field declarations
and the compiled codecs of the wire protocol.
"""
from __future__ import annotations

import struct

from pylog.core.protocol.compiler import compile_decoder, compile_encoder
from pylog.core.protocol.errors import InvalidRequestError
from pylog.core.protocol.schema import parse_versions
from pylog.core.protocol.types import Truncated
from pylog.core.records.errors import CorruptRecordError

__all__ = ["Embedded", "MalformedDataError", "decode_typed_record"]

_I16 = struct.Struct(">h")
_FAILURES = (Truncated, CorruptRecordError, struct.error, IndexError, ValueError, UnicodeDecodeError, OverflowError, TypeError)


class MalformedDataError(InvalidRequestError):
    """Embedded bytes (subscription, assignment, offsets record) that do not parse."""


class Embedded:
    """One embedded schema: name, valid versions, first flexible version, fields.

    newer_as_max: decode a version above the newest known one with the newest
    schema, ignoring what follows (the consumer protocol only ever appends
    fields, and Kafka reads it that way)."""

    def __init__(self, name, versions, flexible, fields, newer_as_max=False):
        self.name = name
        self.min_version, self.max_version = parse_versions(versions)
        flex = parse_versions(flexible)
        self.flexible_min = flex[0] if flex else None
        self.fields = fields
        self.newer_as_max = newer_as_max
        self._codecs = {}

    def codec(self, version, kind: str):
        """The "decode" or "encode" function for one version, compiled once."""
        c = self._codecs.get((version, kind))
        if c is None:
            flexible = self.flexible_min is not None and version >= self.flexible_min
            compile_fn = compile_decoder if kind == "decode" else compile_encoder
            c = self._codecs[(version, kind)] = compile_fn(self.fields, version, flexible)
        return c

    def encode_body(self, body: dict, version: int) -> bytes:
        """The struct at `version`, without the version prefix."""
        if not self.min_version <= version <= self.max_version:
            raise ValueError(f"{self.name} has no version {version}")
        out = bytearray()
        self.codec(version, "encode")(body, out, None)
        return bytes(out)

    def encode(self, body: dict, version: int) -> bytes:
        """int16 version + struct."""
        return _I16.pack(version) + self.encode_body(body, version)

    def decode_body(self, data, version: int, pos: int = 0, strict: bool = True) -> dict:
        """The struct at `version` from data[pos:]; strict: no trailing bytes (MalformedDataError)."""
        buf = data if isinstance(data, memoryview) else memoryview(data)
        try:
            body, end = self.codec(version, "decode")(buf, pos, len(buf))
        except _FAILURES as e:
            raise MalformedDataError(f"malformed {self.name} v{version}: {e or type(e).__name__}") from None
        if strict and end != len(buf):
            raise MalformedDataError(f"{self.name} v{version} has {len(buf) - end} trailing bytes")
        return body

    def decode(self, data) -> tuple[int, dict]:
        """(version, body) from int16 version + struct."""
        buf = data if isinstance(data, memoryview) else memoryview(data)
        if len(buf) < 2:
            raise MalformedDataError(f"{self.name}: {len(buf)} bytes is too short for a version")
        (version,) = _I16.unpack_from(buf, 0)
        if version < self.min_version:
            raise MalformedDataError(f"{self.name}: unknown version {version}")
        use = version
        if version > self.max_version:
            if not self.newer_as_max:
                raise MalformedDataError(f"{self.name}: unknown version {version}")
            use = self.max_version
        return version, self.decode_body(buf, use, 2, strict=(use == version))


def decode_typed_record(record_types: dict, key, value, topic: str, kind: str) -> tuple[int, dict, dict | None]:
    """A record of an internal topic whose key starts with its int16 record type, as
    `__consumer_offsets` and `__share_group_state` hold: (record type, key fields, value fields
    or None for a tombstone). `record_types` maps a type to its (key, value) schemas; values
    newer than version 0 are read with the version-0 schema (tagged fields only grow).
    MalformedDataError (naming the `topic`, or the `kind` of record) for bytes that do not parse
    or an unknown type."""
    if key is None or len(key) < 2:
        raise MalformedDataError(f"{topic} key shorter than its type")
    rtype = int.from_bytes(bytes(key[:2]), "big", signed=True)
    schemas = record_types.get(rtype)
    if schemas is None:
        raise MalformedDataError(f"not a {kind} record type: {rtype}")
    k = schemas[0].decode_body(key, rtype, 2)
    if value is None:
        return rtype, k, None
    if len(value) < 2:
        raise MalformedDataError(f"{schemas[1].name}: too short for a version")
    return rtype, k, schemas[1].decode_body(value, 0, 2, strict=False)
