"""The validating record walk (framing.check_records) against a peer's encoder."""
from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from support.examples import examples
from kafka.record.default_records import DefaultRecordBatchBuilder

from pylog.core.records.framing import InvalidRecordFraming, check_records

record = st.tuples(st.one_of(st.none(), st.binary(max_size=20)), st.one_of(st.none(), st.binary(max_size=300)),
                   st.lists(st.tuples(st.text(max_size=5), st.one_of(st.none(), st.binary(max_size=5))), max_size=2),
                   st.integers(-5000, 5000))


def peer_records(recs) -> bytes:
    b = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 24)
    for i, (k, v, h, dt) in enumerate(recs):
        b.append(i, timestamp=1_700_000_000_000 + dt, key=k, value=v, headers=h)
    return bytes(b.build()[61:])


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(record, min_size=1, max_size=40), st.integers(0, 2))
def test_accepts_what_kafka_python_writes_and_rejects_cuts(recs, repeat):
    recs = recs * (1 + repeat * 40)  # long runs of one framing as well as mixed ones
    data = peer_records(recs)
    res = check_records(data, len(recs), len(recs) - 1)
    assert res.count == len(recs)
    assert res.first_null_key == next((i for i, r in enumerate(recs) if r[0] is None), -1)
    with pytest.raises(InvalidRecordFraming):
        check_records(data[:-1], len(recs), len(recs) - 1)
    with pytest.raises(InvalidRecordFraming):
        check_records(data, len(recs) + 1, len(recs))


def test_runs_past_8192_offsets_and_large_batches():
    recs = [(None, b"x" * 100, [], i // 7) for i in range(9100)]
    data = peer_records(recs)
    assert check_records(data, 9100, 9099).count == 9100
    with pytest.raises(InvalidRecordFraming, match="offset delta"):
        check_records(data, 9100, 9000)
