"""Random and mutated frames fed to decode_request: it returns a Request or
raises one of the contract's errors (InvalidRequestError, its subclass
UnknownApiKeyError, UnsupportedVersionError) -- nothing else, never a hang."""
from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from support.examples import examples
from support.protocol_support import struct_strategy
from pylog.core.protocol import (
    SCHEMAS,
    InvalidRequestError,
    Request,
    UnknownApiKeyError,
    UnsupportedVersionError,
    decode_request,
    decode_request_header,
    encode_request,
)

ALLOWED = (InvalidRequestError, UnsupportedVersionError)
PAIRS = [(k, v) for k, api in SCHEMAS.items() for v in range(api.min_version, api.max_version + 1)]


def check(frame):
    try:
        req = decode_request(frame)
    except ALLOWED as e:
        assert hasattr(e, "header")
        return None
    assert isinstance(req, Request)
    return req


@st.composite
def valid_frames(draw):
    key, version = draw(st.sampled_from(PAIRS))
    api = SCHEMAS[key]
    body = draw(struct_strategy(api.request, version, api.is_flexible(version)))
    return encode_request(key, version, 1, "fuzz", body)[4:]


@st.composite
def mutated_frames(draw):
    frame = bytearray(draw(valid_frames()))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "set", "truncate", "extend", "insert", "delete"]))
        if op == "flip" and frame:
            i = draw(st.integers(0, len(frame) - 1))
            frame[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "set" and frame:
            i = draw(st.integers(0, len(frame) - 1))
            frame[i] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF, 0x01]))
        elif op == "truncate":
            frame = frame[:draw(st.integers(0, len(frame)))]
        elif op == "extend":
            frame += draw(st.binary(min_size=1, max_size=8))
        elif op == "insert":
            i = draw(st.integers(0, len(frame)))
            frame[i:i] = draw(st.binary(min_size=1, max_size=4))
        elif op == "delete" and frame:
            i = draw(st.integers(0, len(frame) - 1))
            del frame[i:i + draw(st.integers(1, 4))]
    return bytes(frame)


@settings(max_examples=examples(800), deadline=5000, suppress_health_check=list(HealthCheck))
@given(frame=mutated_frames())
def test_mutated_frames(frame):
    check(frame)


@settings(max_examples=examples(300), deadline=5000, suppress_health_check=list(HealthCheck))
@given(key_version=st.sampled_from(PAIRS), tail=st.binary(max_size=64))
def test_random_bodies_after_a_valid_header(key_version, tail):
    key, version = key_version
    check(struct.pack(">hhi", key, version, 3) + b"\x00\x01c" + tail)


@settings(max_examples=examples(300), deadline=5000, suppress_health_check=list(HealthCheck))
@given(frame=st.binary(max_size=64))
def test_random_bytes(frame):
    check(frame)


@pytest.mark.parametrize("n", [2**31 - 1, 2**20])
def test_huge_counts_are_rejected_quickly(n):
    # Metadata v1 with a topics array claiming n entries but no bytes behind it.
    frame = struct.pack(">hhih", 3, 1, 5, -1) + struct.pack(">i", n)
    with pytest.raises(InvalidRequestError) as e:
        decode_request(frame)
    assert e.value.header.correlation_id == 5
    # Flexible: a 5-byte uvarint count.
    frame = struct.pack(">hhih", 3, 9, 5, -1) + b"\x00" + b"\xff\xff\xff\xff\x07"
    with pytest.raises(InvalidRequestError):
        decode_request(frame)


def test_errors_carry_the_header():
    with pytest.raises(UnknownApiKeyError) as e:
        decode_request(struct.pack(">hhih", 999, 0, 77, 1) + b"x")
    assert isinstance(e.value, InvalidRequestError)
    assert e.value.header.api_key == 999 and e.value.header.client_id == "x"
    with pytest.raises(UnsupportedVersionError) as e:
        decode_request(struct.pack(">hhih", 18, 99, 78, -1))
    assert e.value.header.correlation_id == 78 and e.value.header.api_version == 99
    assert e.value.correlation_id == 78
    with pytest.raises(InvalidRequestError) as e:
        decode_request(b"\x00\x12\x00")
    assert e.value.header is None
    # Trailing garbage after a complete body is rejected too.
    frame = encode_request(18, 0, 5, "c", {})[4:] + b"\x00"
    with pytest.raises(InvalidRequestError) as e:
        decode_request(frame)
    assert e.value.header.correlation_id == 5
    assert decode_request(frame, strict=False).correlation_id == 5
    hdr, pos = decode_request_header(encode_request(18, 3, 6, "cc", {})[4:])
    assert (hdr.api_key, hdr.api_version, hdr.correlation_id, hdr.client_id, hdr.header_version, pos) == (18, 3, 6, "cc", 2, 13)


def test_invalid_utf8_is_an_invalid_request():
    frame = bytearray(encode_request(19, 2, 1, "c", {"topics": [{"name": "ab", "num_partitions": 1}]})[4:])
    i = frame.index(b"ab")
    frame[i] = 0xFF
    with pytest.raises(InvalidRequestError):
        decode_request(bytes(frame))


@st.composite
def mutated_responses(draw):
    key, version = draw(st.sampled_from(PAIRS))
    api = SCHEMAS[key]
    from pylog.core.protocol import encode_response

    frame = bytearray(encode_response(key, version, 1, draw(struct_strategy(api.response, version, api.is_flexible(version))))[4:])
    for _ in range(draw(st.integers(1, 3))):
        if frame and draw(st.booleans()):
            frame[draw(st.integers(0, len(frame) - 1))] ^= 1 << draw(st.integers(0, 7))
        else:
            frame = frame[:draw(st.integers(0, len(frame)))]
    return key, version, bytes(frame)


@settings(max_examples=examples(400), deadline=5000, suppress_health_check=list(HealthCheck))
@given(case=mutated_responses())
def test_mutated_responses_raise_only_invalid_request(case):
    from pylog.core.protocol import decode_response

    key, version, frame = case
    try:
        corr, body = decode_response(key, version, frame)
    except InvalidRequestError:
        return
    assert isinstance(body, dict)
