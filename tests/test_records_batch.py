"""RecordBatch v2 and control batches: hypothesis round trips and exact layout."""
from __future__ import annotations

import struct

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st

from support.examples import examples

from pylog.core.records import (
    ABORT,
    COMMIT,
    BatchBuilder,
    Record,
    RecordBatch,
    build_end_txn_batch,
    iter_headers,
    read_control_record,
)
from pylog.core.records.batch import decode_records, encode_record, record_sequence
from pylog.core.records.control import decode_control_key, decode_end_txn_marker
from pylog.core.records.header import HEADER_SIZE

keys = st.none() | st.binary(max_size=40)
values = st.none() | st.binary(max_size=300)
headers = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=16)), max_size=3)
BASE_TS = 1_700_000_000_000
records = st.lists(
    st.tuples(st.integers(BASE_TS - 10**7, BASE_TS + 10**7), keys, values, headers), min_size=1, max_size=20
)
batch_params = st.fixed_dictionaries(
    {
        "codec": st.sampled_from([0, 1, 2, 3, 4]),
        "base_offset": st.integers(0, 2**62),
        "producer_id": st.integers(-1, 2**62),
        "producer_epoch": st.integers(-1, 2**15 - 1),
        "base_sequence": st.integers(-1, 2**31 - 1),
        "is_transactional": st.booleans(),
        "is_control": st.booleans(),
        "timestamp_type": st.sampled_from([0, 1]),
        "partition_leader_epoch": st.integers(-1, 2**31 - 1),
    }
)


def build(params, recs, **extra):
    b = BatchBuilder(**params, **extra)
    for ts, k, v, h in recs:
        b.append(ts, k, v, h)
    return b.build()


@settings(max_examples=examples(150), deadline=None)
@given(params=batch_params, recs=records)
def test_round_trip(params, recs):
    raw = build(params, recs)
    batch = RecordBatch(raw, verify_crc=True)
    assert batch.size == len(raw)
    assert batch.magic == 2
    for name in ("codec", "base_offset", "producer_id", "producer_epoch", "base_sequence",
                 "is_transactional", "is_control", "timestamp_type", "partition_leader_epoch"):
        assert getattr(batch, name) == params[name], name
    assert batch.record_count == len(recs)
    assert batch.last_offset_delta == len(recs) - 1
    assert batch.base_timestamp == recs[0][0]
    assert batch.max_timestamp == max(r[0] for r in recs)
    assert not batch.has_delete_horizon
    got = batch.records()
    assert [r.offset for r in got] == list(range(params["base_offset"], params["base_offset"] + len(recs)))
    if params["timestamp_type"] == 1:  # LogAppendTime: records read the batch's max timestamp
        assert [r.timestamp for r in got] == [batch.max_timestamp] * len(recs)
    else:
        assert [r.timestamp for r in got] == [r[0] for r in recs]
    assert [r.key for r in got] == [r[1] for r in recs]
    assert [r.value for r in got] == [r[2] for r in recs]
    assert [list(r.headers) for r in got] == [r[3] for r in recs]
    # the header walker agrees and the CRC holds
    [(pos, header)] = list(iter_headers(raw))
    assert pos == 0 and header == batch.header
    if params["base_sequence"] >= 0:
        assert record_sequence(batch.header, got[-1]) == (params["base_sequence"] + len(recs) - 1) % 2**31


@settings(max_examples=examples(50), deadline=None)
@given(recs=records)
def test_uncompressed_layout_is_exact(recs):
    """Bytes after the header are exactly the concatenated records, and the CRC covers 21..end."""
    raw = build({}, recs)
    base = recs[0][0]
    body = b"".join(encode_record(i, ts - base, k, v, h) for i, (ts, k, v, h) in enumerate(recs))
    assert raw[HEADER_SIZE:] == body
    assert struct.unpack_from(">I", raw, 17)[0] == crc32c(raw[21:])
    assert struct.unpack_from(">i", raw, 8)[0] == len(raw) - 12


def test_record_bytes_by_hand():
    # length 8: attrs 0, tsDelta 0, offsetDelta 0, key len 1 "k", value null, no headers
    assert encode_record(0, 0, b"k", None) == bytes([0x0E, 0, 0, 0, 2]) + b"k" + bytes([1, 0])
    got = decode_records(encode_record(0, 0, b"k", None), 100, 5)
    assert got == [Record(100, 5, b"k", None, ())]


def test_empty_key_and_value_are_not_null():
    b = BatchBuilder()
    b.append(1, b"", b"")
    b.append(2, None, None)
    r = RecordBatch(b.build()).records()
    assert (r[0].key, r[0].value) == (b"", b"")
    assert (r[1].key, r[1].value) == (None, None)


def test_offsets_with_gaps_and_negative_timestamp_deltas():
    b = BatchBuilder(base_offset=100)
    assert b.append(5000, b"a", b"1") == 100
    assert b.append(4000, b"b", b"2", offset=105) == 105
    assert b.append(10**12, b"c", b"3", offset=20000) == 20000
    with pytest.raises(ValueError):
        b.append(1, b"d", b"4", offset=20000)
    batch = RecordBatch(b.build())
    assert [r.offset for r in batch] == [100, 105, 20000]
    assert [r.timestamp for r in batch] == [5000, 4000, 10**12]
    assert batch.last_offset == 20000
    assert batch.record_count == 3
    assert batch.max_timestamp == 10**12


def test_large_values_and_many_records():
    b = BatchBuilder(codec=3)
    for i in range(20000):
        b.append(i, str(i).encode(), b"v" * (i % 50) if i != 7 else b"x" * 100_000, [("i", str(i).encode())] if i % 3 == 0 else ())
    batch = RecordBatch(b.build(), verify_crc=True)
    got = batch.records()
    assert len(got) == 20000
    assert got[7].value == b"x" * 100_000
    assert got[19999].offset == 19999 and got[19999].key == b"19999"
    assert got[9].headers == (("i", b"9"),)


def test_delete_horizon():
    b = BatchBuilder(delete_horizon=1_000)
    b.append(1_500, b"k", None)
    batch = RecordBatch(b.build())
    assert batch.has_delete_horizon
    assert batch.base_timestamp == batch.delete_horizon_ms == 1_000
    assert batch.records()[0].timestamp == 1_500


def test_empty_batch():
    raw = BatchBuilder(base_offset=42, producer_id=9, producer_epoch=1, base_sequence=3).build()
    batch = RecordBatch(raw, verify_crc=True)
    assert len(raw) == HEADER_SIZE
    assert batch.record_count == 0 and batch.records() == []
    assert batch.base_timestamp == batch.max_timestamp == -1


def test_reader_at_a_position_of_a_larger_buffer():
    one = BatchBuilder(base_offset=0)
    one.append(1, b"a", b"b")
    two = BatchBuilder(base_offset=1, codec=4)
    two.append(2, b"c", b"d")
    buf = bytearray(b"\x00" * 5 + one.build() + two.build())
    second = RecordBatch(memoryview(buf), 5 + len(one.build()), verify_crc=True)
    assert second.records() == [Record(1, 2, b"c", b"d", ())]
    assert bytes(second.raw) == two.build()


@settings(max_examples=examples(40), deadline=None)
@given(
    kind=st.sampled_from([COMMIT, ABORT]),
    pid=st.integers(0, 2**62),
    epoch=st.integers(0, 2**15 - 1),
    coord=st.integers(0, 2**31 - 1),
    offset=st.integers(0, 2**40),
)
def test_control_batch_round_trip(kind, pid, epoch, coord, offset):
    raw = build_end_txn_batch(kind, pid, epoch, coord, base_offset=offset, timestamp=BASE_TS, partition_leader_epoch=3)
    batch = RecordBatch(raw, verify_crc=True)
    assert batch.is_control and batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (pid, epoch, -1)
    assert batch.partition_leader_epoch == 3
    [rec] = batch.records()
    # key: version 0, type; value: version 0, coordinator epoch (Kafka's layout)
    assert rec.key == struct.pack(">hh", 0, kind)
    assert rec.value == struct.pack(">hi", 0, coord)
    marker = read_control_record(rec)
    assert (marker.type, marker.coordinator_epoch, marker.offset) == (kind, coord, offset)
    assert marker.is_commit == (kind == COMMIT) and marker.is_abort == (kind == ABORT)
    assert decode_control_key(rec.key) == (0, kind)
    assert decode_end_txn_marker(rec.value) == (0, coord)


def test_control_record_of_other_type_keeps_raw_value():
    b = BatchBuilder(is_control=True)
    b.append(1, struct.pack(">hh", 0, 2), b"\x00\x00leader-change")
    marker = read_control_record(RecordBatch(b.build()).records()[0])
    assert marker.type_name == "LEADER_CHANGE" and marker.coordinator_epoch is None
    assert marker.value == b"\x00\x00leader-change"


def test_builder_rejects_other_magic_and_codec():
    from pylog.core.records import UnknownCodecError

    with pytest.raises(ValueError):
        BatchBuilder(magic=1)
    with pytest.raises(UnknownCodecError):
        BatchBuilder(codec=6)
