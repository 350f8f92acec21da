"""Zig-zag varints: known encodings, round trips, and malformed input."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pylog.core.records.errors import CorruptRecordError
from pylog.core.records.varint import (
    decode_uvarint,
    decode_varint,
    decode_varlong,
    encode_uvarint,
    encode_varint,
    size_of_uvarint,
    size_of_varint,
    unzigzag,
    write_uvarint,
    write_varint,
    zigzag,
)

INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)


@pytest.mark.parametrize(
    "value, encoded",
    [
        (0, b"\x00"),
        (-1, b"\x01"),
        (1, b"\x02"),
        (63, b"\x7e"),
        (-64, b"\x7f"),
        (64, b"\x80\x01"),
        (-65, b"\x81\x01"),
        (8191, b"\xfe\x7f"),
        (-8192, b"\xff\x7f"),
        (8192, b"\x80\x80\x01"),
        (2**31 - 1, b"\xfe\xff\xff\xff\x0f"),
        (-(2**31), b"\xff\xff\xff\xff\x0f"),
        (-(2**63), b"\xff" * 9 + b"\x01"),
    ],
)
def test_known_encodings(value, encoded):
    assert encode_varint(value) == encoded
    assert size_of_varint(value) == len(encoded)
    decoder = decode_varint if -(2**31) <= value < 2**31 else decode_varlong
    assert decoder(b"\xaa" + encoded + b"\xbb", 1) == (value, 1 + len(encoded))


@given(INT64)
def test_varlong_round_trip(value):
    enc = encode_varint(value)
    assert len(enc) == size_of_varint(value)
    assert decode_varlong(enc) == (value, len(enc))
    out = bytearray(b"x")
    write_varint(out, value)
    assert bytes(out[1:]) == enc
    assert unzigzag(zigzag(value)) == value


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_uvarint_round_trip(value):
    enc = encode_uvarint(value)
    assert len(enc) == size_of_uvarint(value)
    assert decode_uvarint(memoryview(enc)) == (value, len(enc))
    out = bytearray()
    write_uvarint(out, value)
    assert bytes(out) == enc


def test_uvarint_rejects_negative():
    with pytest.raises(ValueError):
        encode_uvarint(-1)


def test_truncated_varint_is_corrupt_record():
    with pytest.raises(CorruptRecordError):
        decode_varint(b"\x80\x80")
    with pytest.raises(CorruptRecordError):
        decode_varint(b"")


def test_overlong_varint_is_rejected():
    # six continuation bytes cannot be a 32-bit varint
    with pytest.raises(CorruptRecordError):
        decode_varint(b"\x80\x80\x80\x80\x80\x01")
    with pytest.raises(CorruptRecordError):
        decode_varlong(b"\x80" * 10 + b"\x01")
