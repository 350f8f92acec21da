"""Round trip of every declared API, every version, both directions, with
hypothesis bodies generated from the schema itself."""
from __future__ import annotations

from hypothesis import strategies as st

from support.protocol_support import api_cases, draw_body, for_each_case, plain
from pylog.core.protocol import (
    API_KEYS,
    API_NAMES,
    SCHEMAS,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)

CASES = api_cases()


@for_each_case(CASES, max_examples=8)
def test_round_trip(case, data):
    key, version, direction = case
    fields, flexible, body, expected = draw_body(data, case)
    corr = data.draw(st.integers(-(2**31), 2**31 - 1))
    if direction == "request":
        client_id = data.draw(st.one_of(st.none(), st.text(max_size=6)))
        frame = encode_request(key, version, corr, client_id, body)
        assert int.from_bytes(frame[:4], "big", signed=True) == len(frame) - 4
        req = decode_request(frame[4:])
        assert (req.api_key, req.api_version, req.correlation_id, req.client_id) == (key, version, corr, client_id)
        assert req.header_version == (2 if flexible else 1)
        assert plain(req.body) == expected
        # Re-encoding the decoded body gives the same bytes.
        assert encode_request(key, version, corr, client_id, req.body) == frame
    else:
        frame = encode_response(key, version, corr, body)
        assert int.from_bytes(frame[:4], "big", signed=True) == len(frame) - 4
        got_corr, got = decode_response(key, version, frame[4:])
        assert got_corr == corr
        assert plain(got) == expected
        assert encode_response(key, version, corr, got) == frame


def test_registry():
    assert API_KEYS["Produce"] == 0 and API_NAMES[0] == "Produce"
    # Kafka 4.4.0's ranges (test_kafka44_versions.py compares them with a running node)
    expected = {
        0: (3, 13), 1: (4, 18), 2: (1, 11), 3: (0, 13), 18: (0, 5), 19: (2, 7), 20: (1, 6),
        21: (0, 2), 22: (0, 5), 23: (2, 4), 32: (1, 4), 33: (0, 2), 35: (1, 5), 37: (0, 3),
        44: (0, 1), 60: (0, 2),
        8: (2, 10), 9: (1, 10), 10: (0, 6), 11: (0, 9), 12: (0, 4), 13: (0, 5), 14: (0, 5), 15: (0, 6),
        16: (0, 5), 42: (0, 3), 47: (0, 0), 17: (0, 1),
        24: (0, 5), 25: (0, 4), 26: (0, 5), 28: (0, 6), 61: (0, 0), 27: (1, 2), 65: (0, 0), 66: (0, 2),
        29: (1, 3), 30: (1, 3), 31: (1, 3), 36: (0, 2), 50: (0, 0), 51: (0, 0),
        68: (0, 1), 69: (0, 1), 48: (0, 1), 49: (0, 1), 43: (0, 2), 45: (0, 1), 46: (0, 0),
        76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2), 90: (0, 1), 91: (0, 0), 92: (0, 0),
        38: (1, 3), 39: (1, 2), 40: (1, 2), 41: (1, 3), 55: (0, 2), 57: (0, 2), 74: (0, 1), 75: (0, 0),
        83: (0, 0), 84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1),
        88: (0, 1), 89: (0, 1), 93: (0, 0),
    }
    assert sorted(SCHEMAS) == sorted(expected)
    for key, (lo, hi) in expected.items():
        assert (SCHEMAS[key].min_version, SCHEMAS[key].max_version) == (lo, hi), API_NAMES[key]


def test_defaults_fill_missing_fields():
    frame = encode_request(1, 4, 1, "c", {"max_wait_ms": 500, "min_bytes": 1})
    req = decode_request(frame[4:])
    assert req.body["max_bytes"] == 0x7FFFFFFF
    assert req.body["replica_id"] == -1
    assert req.body["isolation_level"] == 0
    assert req.body["topics"] == []
    assert req.body["session_epoch"] == -1  # not in v4: schema default
    _, body = decode_response(3, 1, encode_response(3, 1, 9, {})[4:])
    assert body["controller_id"] == -1 and body["cluster_id"] is None
