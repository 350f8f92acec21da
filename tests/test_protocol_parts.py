"""encode_response_parts: record sets given as file-slice objects (anything
with .length) become their own parts; with the slice bytes substituted the
parts equal encode_response of the same body."""
from __future__ import annotations

import pytest

from pylog.core.protocol import decode_response, encode_response, encode_response_parts


class FakeSlice:
    """Stands in for storage's FetchSlice(fd, position, length)."""

    def __init__(self, data: bytes):
        self.data = data
        self.length = len(data)


def _body(records, with_tags):
    part = lambda i, r: {  # noqa: E731
        "partition_index": i, "error_code": 0, "high_watermark": 100 + i, "last_stable_offset": 100 + i,
        "log_start_offset": 0, "aborted_transactions": None, "records": r,
        **({"current_leader": {"leader_id": 1, "leader_epoch": 3}} if with_tags and i == 1 else {}),
    }
    return {
        "throttle_time_ms": 0, "error_code": 0, "session_id": 0,
        "responses": [
            {"topic": "a", "partitions": [part(i, r) for i, r in enumerate(records[:3])]},
            {"topic": "b", "partitions": [part(i, r) for i, r in enumerate(records[3:])]},
        ],
        **({"node_endpoints": [{"node_id": 1, "host": "localhost", "port": 9092}]} if with_tags else {}),
    }


@pytest.mark.parametrize("version", [4, 11, 12, 16])
def test_parts_equal_the_plain_encoding(version):
    datas = [b"A" * 50, b"", b"B" * 7, None, b"C" * 1000]
    slices = [FakeSlice(d) if d is not None else None for d in datas]
    slices[1] = FakeSlice(b"")  # zero length: stays inline
    body_slices = _body(slices, version >= 12)
    body_bytes = _body(datas, version >= 12)
    total, parts = encode_response_parts(1, version, 77, body_slices)
    assert isinstance(parts[0], bytes)
    # No two bytes parts in a row; every slice object appears as itself.
    kinds = [isinstance(p, bytes) for p in parts]
    assert all(not (a and b) for a, b in zip(kinds, kinds[1:]))
    assert [p for p in parts if not isinstance(p, bytes)] == [s for s in slices if s is not None and s.length]
    joined = b"".join(p if isinstance(p, bytes) else p.data for p in parts)
    assert joined == encode_response(1, version, 77, body_bytes)
    assert total == len(joined)
    assert int.from_bytes(joined[:4], "big") == total - 4
    corr, got = decode_response(1, version, joined[4:])
    assert corr == 77
    recs = [p["records"] for t in got["responses"] for p in t["partitions"]]
    assert [None if r is None else bytes(r) for r in recs] == datas


def test_bytes_only_body_is_one_part():
    total, parts = encode_response_parts(1, 12, 1, _body([b"x", b"y"], False))
    assert len(parts) == 1 and total == len(parts[0])
    assert parts[0] == encode_response(1, 12, 1, _body([b"x", b"y"], False))


def test_slice_objects_need_the_parts_encoder():
    with pytest.raises(TypeError):
        encode_response(1, 12, 1, _body([FakeSlice(b"abc")], False))
