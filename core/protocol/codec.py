"""Framing-level codec: headers plus the compiled body codecs. No I/O.

Frames handed to the decoders exclude the 4-byte size prefix; the encoders
return bytes that include it (ready to write to a socket).

Request header v1: api_key int16, api_version int16, correlation_id int32,
client_id nullable string (int16 length, never compact); v2 adds a tagged
field section. Response header v0: correlation_id; v1 adds tagged fields.
"""
from __future__ import annotations

import struct
from typing import Any, NamedTuple

from pylog.core.errors import ErrorCode
from pylog.core.protocol.apis import SCHEMAS
from pylog.core.protocol.errors import (
    InvalidRequestError,
    UnknownApiKeyError,
    UnsupportedVersionError,
    attach_header,
)
from pylog.core.protocol.schema import API_VERSIONS_KEY
from pylog.core.protocol.types import Truncated, skip_tagged_fields
from pylog.core.records.errors import CorruptRecordError

__all__ = [
    "RequestHeader", "Request",
    "decode_request_header", "decode_request", "encode_request",
    "decode_response", "encode_response", "encode_response_parts",
    "encode_request_body", "decode_request_body", "encode_response_body", "decode_response_body",
]

_HDR = struct.Struct(">hhi")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_SIZE = struct.Struct(">i")

# Everything a bad frame can make the generated decoders raise.
_DECODE_FAILURES = (Truncated, CorruptRecordError, struct.error, IndexError, ValueError, UnicodeDecodeError,
                    OverflowError, TypeError, RecursionError, MemoryError)


class RequestHeader(NamedTuple):
    """A request header (v1, or v2 with tagged fields for flexible versions)."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    header_version: int


class Request(NamedTuple):
    """A decoded request: header fields and the body as a dict with every field of its version."""

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None
    body: dict
    header_version: int

    @property
    def header(self) -> RequestHeader:
        """The header fields alone."""
        return RequestHeader(self.api_key, self.api_version, self.correlation_id,
                             self.client_id, self.header_version)

    @property
    def api_name(self) -> str:
        """Kafka's name for the API (e.g. "Fetch")."""
        s = SCHEMAS.get(self.api_key)
        return s.name if s else f"Unknown({self.api_key})"


def _view(frame) -> memoryview:
    mv = frame if isinstance(frame, memoryview) else memoryview(frame)
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    return mv


def _header_version_for(api_key: int, api_version: int) -> int:
    schema = SCHEMAS.get(api_key)
    if schema is None:
        return 1
    if schema.flexible_min is not None and api_version >= schema.flexible_min:
        return 2
    return 1


def _read_client_id(buf, pos, end):
    (n,) = _I16.unpack_from(buf, pos)
    pos += 2
    if n == -1:
        return None, pos
    if n < 0 or pos + n > end:
        raise Truncated("bad client_id length")
    return str(buf[pos:pos + n], "utf-8"), pos + n


def decode_request_header(frame) -> tuple[RequestHeader, int]:
    """Parse the request header; return it and the offset of the body.

    Raises InvalidRequestError (with .header None or partial) for a frame too
    short or malformed to hold a header. Unknown keys/versions are NOT
    checked here (see decode_request)."""
    buf = _view(frame)
    end = len(buf)
    if end < 8:
        raise attach_header(InvalidRequestError(f"request frame of {end} bytes is shorter than a header"), None)
    api_key, api_version, correlation_id = _HDR.unpack_from(buf, 0)
    hv = _header_version_for(api_key, api_version)
    partial = RequestHeader(api_key, api_version, correlation_id, None, hv)
    try:
        client_id, pos = _read_client_id(buf, 8, end)
        if hv >= 2:
            pos = skip_tagged_fields(buf, pos, end)
    except _DECODE_FAILURES as e:
        raise attach_header(InvalidRequestError(f"malformed request header: {e}"), partial) from None
    return RequestHeader(api_key, api_version, correlation_id, client_id, hv), pos


def decode_request(frame, *, strict: bool = True) -> Request:
    """Decode a whole request frame (without its size prefix).

    strict=False ignores bytes after the body, as Kafka's broker does
    (librdkafka 2.16's AdminClient Metadata v12 request carries 3 extra bytes).
    """
    buf = _view(frame)
    end = len(buf)
    if end < 8:
        raise attach_header(InvalidRequestError(f"request frame of {end} bytes is shorter than a header"), None)
    api_key, api_version, correlation_id = _HDR.unpack_from(buf, 0)
    schema = SCHEMAS.get(api_key)
    if schema is None or not schema.min_version <= api_version <= schema.max_version:
        # Best effort on client_id so the broker can log who asked.
        try:
            client_id, _ = _read_client_id(buf, 8, end)
        except _DECODE_FAILURES:
            client_id = None
        hv = _header_version_for(api_key, api_version)
        header = RequestHeader(api_key, api_version, correlation_id, client_id, hv)
        if schema is None:
            raise attach_header(UnknownApiKeyError(f"unknown api key {api_key}"), header)
        raise attach_header(UnsupportedVersionError(
            f"{schema.name} v{api_version} is not supported (v{schema.min_version}-v{schema.max_version})"), header)
    flexible = schema.flexible_min is not None and api_version >= schema.flexible_min
    hv = 2 if flexible else 1
    client_id = None
    try:
        client_id, pos = _read_client_id(buf, 8, end)
        if flexible:
            pos = skip_tagged_fields(buf, pos, end)
        decode = schema.decoder("request", api_version)
        body, pos = decode(buf, pos, end)
    except _DECODE_FAILURES as e:
        header = RequestHeader(api_key, api_version, correlation_id, client_id, hv)
        raise attach_header(InvalidRequestError(
            f"malformed {schema.name} v{api_version} request: {e or type(e).__name__}"), header) from None
    if pos != end and strict:
        header = RequestHeader(api_key, api_version, correlation_id, client_id, hv)
        raise attach_header(InvalidRequestError(
            f"{schema.name} v{api_version} request has {end - pos} unexpected trailing bytes"), header)
    return Request(api_key, api_version, correlation_id, client_id, body, hv)


def _schema(api_key: int, api_version: int):
    schema = SCHEMAS.get(api_key)
    if schema is None:
        raise UnknownApiKeyError(f"unknown api key {api_key}")
    if not schema.min_version <= api_version <= schema.max_version:
        raise UnsupportedVersionError(
            f"{schema.name} v{api_version} is not supported (v{schema.min_version}-v{schema.max_version})")
    return schema


def _request_prefix(schema, api_key, api_version, correlation_id, client_id) -> bytearray:
    out = bytearray(4)
    out += _HDR.pack(api_key, api_version, correlation_id)
    if client_id is None:
        out += b"\xff\xff"
    else:
        cid = client_id.encode("utf-8")
        out += _I16.pack(len(cid))
        out += cid
    if schema.is_flexible(api_version):
        out.append(0)
    return out


def encode_request(api_key: int, api_version: int, correlation_id: int, client_id: str | None,
                   body: dict) -> bytes:
    """A size-prefixed request frame."""
    schema = _schema(api_key, api_version)
    out = _request_prefix(schema, api_key, api_version, correlation_id, client_id)
    schema.encoder("request", api_version)(body, out, None)
    _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


class RecordsPiece:
    """A record set (bytes-like `data`) that encode_request_parts leaves out of the
    frame's buffer: it becomes a piece of its own, sent as it is."""

    __slots__ = ("data", "length")

    def __init__(self, data):
        self.data = data
        self.length = len(data)


def encode_request_parts(api_key: int, api_version: int, correlation_id: int, client_id: str | None,
                         body: dict) -> list:
    """A size-prefixed request frame as bytes-like pieces for a gathering write: the
    bytes of encode_request for the same body with each RecordsPiece's data in its
    place, those data (a producer's batches) being pieces of their own, not copied.
    A request without one is one piece. No piece is touched after this returns."""
    schema = _schema(api_key, api_version)
    out = _request_prefix(schema, api_key, api_version, correlation_id, client_id)
    parts: list = []
    schema.encoder("request", api_version)(body, out, parts)
    if out or not parts:
        parts.append(out)
    pieces = [p.data if type(p) is RecordsPiece else p for p in parts]
    total = 0
    for p in pieces:
        total += len(p)
    first = pieces[0]
    if type(first) is bytearray:
        _SIZE.pack_into(first, 0, total - 4)
    else:
        pieces[0] = _SIZE.pack(total - 4) + first[4:]
    return pieces


def decode_response(api_key: int, api_version: int, frame) -> tuple[int, dict]:
    """(correlation_id, body) from a response frame without its size prefix.

    Raises InvalidRequestError for a malformed or truncated response (the
    name is Kafka's; a client should treat it as a broken connection)."""
    schema = _schema(api_key, api_version)
    buf = _view(frame)
    end = len(buf)
    try:
        (correlation_id,) = _I32.unpack_from(buf, 0)
        pos = 4
        if schema.response_header_version(api_version) >= 1:
            pos = skip_tagged_fields(buf, pos, end)
        if api_key == API_VERSIONS_KEY and api_version > 0 and _api_versions_fallback(buf, pos, end):
            # A broker that does not know the requested ApiVersions version
            # answers UNSUPPORTED_VERSION with a v0 body (KIP-511); so does pylog.
            body, pos = schema.decoder("response", 0)(buf, pos, end)
        else:
            body, pos = schema.decoder("response", api_version)(buf, pos, end)
    except _DECODE_FAILURES as e:
        raise InvalidRequestError(f"malformed {schema.name} v{api_version} response: {e or type(e).__name__}") from None
    return correlation_id, body


def _api_versions_fallback(buf, pos, end) -> bool:
    (error_code,) = _I16.unpack_from(buf, pos)
    return error_code == ErrorCode.UNSUPPORTED_VERSION


def _response_prefix(schema, api_version, correlation_id) -> bytearray:
    out = bytearray(4)
    out += _I32.pack(correlation_id)
    if schema.response_header_version(api_version) >= 1:
        out.append(0)
    return out


def encode_response(api_key: int, api_version: int, correlation_id: int, body: dict) -> bytes:
    """A size-prefixed response frame."""
    schema = _schema(api_key, api_version)
    out = _response_prefix(schema, api_version, correlation_id)
    schema.encoder("response", api_version)(body, out, None)
    _SIZE.pack_into(out, 0, len(out) - 4)
    return bytes(out)


def encode_response_parts(api_key: int, api_version: int, correlation_id: int,
                          body: dict) -> tuple[int, list[Any]]:
    """A response as a list of parts for zero-copy sends.

    `records` values may be objects with a `.length` attribute (a file slice);
    each such object appears as-is in the list, between `bytes` parts that
    hold everything else (the first one starts with the 4-byte size prefix).
    Returns (total bytes on the wire including the prefix, parts); a response
    without file slices is a single bytes-like part."""
    schema = _schema(api_key, api_version)
    out = _response_prefix(schema, api_version, correlation_id)
    parts: list = []
    schema.encoder("response", api_version)(body, out, parts)
    if not parts:
        _SIZE.pack_into(out, 0, len(out) - 4)
        return len(out), [out]
    if out:
        parts.append(bytes(out))
    total = 0
    for p in parts:
        total += len(p) if isinstance(p, bytes) else p.length
    first = parts[0]
    parts[0] = _SIZE.pack(total - 4) + first[4:]
    return total, parts


# Body-only helpers (no header): embedded schemas and tests use these.

def encode_request_body(api_key: int, api_version: int, body: dict) -> bytes:
    """A request body without header or size prefix."""
    schema = _schema(api_key, api_version)
    out = bytearray()
    schema.encoder("request", api_version)(body, out, None)
    return bytes(out)


def encode_response_body(api_key: int, api_version: int, body: dict) -> bytes:
    """A response body without header or size prefix."""
    schema = _schema(api_key, api_version)
    out = bytearray()
    schema.encoder("response", api_version)(body, out, None)
    return bytes(out)


def _decode_body(direction, api_key, api_version, data):
    schema = _schema(api_key, api_version)
    buf = _view(data)
    try:
        body, pos = schema.decoder(direction, api_version)(buf, 0, len(buf))
    except _DECODE_FAILURES as e:
        raise InvalidRequestError(f"malformed {schema.name} v{api_version} {direction}: {e or type(e).__name__}") from None
    if pos != len(buf):
        raise InvalidRequestError(f"{schema.name} v{api_version} {direction} has {len(buf) - pos} trailing bytes")
    return body


def decode_request_body(api_key: int, api_version: int, data) -> dict:
    """A request body (no header); raises InvalidRequestError on malformed or trailing bytes."""
    return _decode_body("request", api_key, api_version, data)


def decode_response_body(api_key: int, api_version: int, data) -> dict:
    """A response body (no header); raises InvalidRequestError on malformed or trailing bytes."""
    return _decode_body("response", api_key, api_version, data)
