"""Records of a v2 batch's records section, encoded: one record, its headers, its size.

The layout is the one record_decode reads; the compiled fast path (pylog.core.records.fastpath)
replaces encode_record.
"""
from __future__ import annotations

from pylog.core.records import fastpath
from pylog.core.records.varint import encode_varint_py as encode_varint

__all__ = ["encode_headers", "encode_record", "encode_record_py", "record_size"]


def encode_headers(headers) -> bytes:
    """A record's headers section: count, then each key (str or bytes) and value
    (bytes, str as UTF-8, or None). The one encoder of record headers."""
    out = bytearray(encode_varint(len(headers)))
    for hkey, hval in headers:
        kb = hkey.encode("utf-8") if isinstance(hkey, str) else bytes(hkey)
        out += encode_varint(len(kb))
        out += kb
        if hval is None:
            out += b"\x01"
        else:
            if isinstance(hval, str):
                hval = hval.encode("utf-8")
            out += encode_varint(len(hval))
            out += hval
    return bytes(out)


def encode_record(offset_delta: int, timestamp_delta: int, key, value, headers=()) -> bytes:
    """One record's bytes, length prefix included."""
    parts = [b"\x00", encode_varint(timestamp_delta), encode_varint(offset_delta)]
    for field in (key, value):
        if field is None:
            parts.append(b"\x01")
        else:
            parts.append(encode_varint(len(field)))
            parts.append(bytes(field))
    parts.append(encode_headers(headers) if headers else b"\x00")
    body = b"".join(parts)
    return encode_varint(len(body)) + body


encode_record_py = encode_record
encode_record = fastpath.choose("encode_record", encode_record_py)


def record_size(offset_delta: int, timestamp_delta: int, key, value, headers=()) -> int:
    """Encoded size of one record (length prefix included), for size estimates."""
    return len(encode_record(offset_delta, timestamp_delta, key, value, headers))
