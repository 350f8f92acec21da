"""Cross-checks against kafka-python's `kafka.record` (an independent implementation).

pylog-built batches read with kafka-python, kafka-python-built batches read
with pylog, for every codec; uncompressed v2 batches are byte-identical.
"""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.examples import examples
from kafka import codec as kafka_codec
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatch, LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from pylog.core.records import (
    ABORT,
    COMMIT,
    BatchBuilder,
    LegacyBuilder,
    RecordBatch,
    build_end_txn_batch,
    iter_batches,
    iter_entries,
    iter_records,
)

CODECS = [0, 1, 2, 3, 4]
keys = st.none() | st.binary(max_size=30)
values = st.none() | st.binary(max_size=200)
headers = st.lists(st.tuples(st.text(max_size=6), st.none() | st.binary(max_size=10)), max_size=2)
recs_v2 = st.lists(st.tuples(st.integers(0, 2**41), keys, values, headers), min_size=1, max_size=15)
recs_legacy = st.lists(st.tuples(st.integers(0, 2**41), keys, values), min_size=1, max_size=15)


def test_kafka_python_has_every_codec():
    # snappy needs python-snappy; without it the snappy cross-checks would prove nothing
    assert kafka_codec.has_gzip() and kafka_codec.has_snappy() and kafka_codec.has_lz4() and kafka_codec.has_zstd()


def _kafka_builder(codec, transactional=False, pid=-1, epoch=-1, seq=-1):
    return DefaultRecordBatchBuilder(
        magic=2, compression_type=codec, is_transactional=transactional,
        producer_id=pid, producer_epoch=epoch, base_sequence=seq, batch_size=1 << 30,
    )


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=examples(15), deadline=None)
@given(recs=recs_v2, txn=st.booleans(), pid=st.integers(-1, 2**40), seq=st.integers(-1, 2**30))
def test_pylog_built_read_by_kafka_python(codec, recs, txn, pid, seq):
    b = BatchBuilder(codec=codec, is_transactional=txn, producer_id=pid, producer_epoch=3, base_sequence=seq, base_offset=0)
    for ts, k, v, h in recs:
        b.append(ts, k, v, h)
    kb = DefaultRecordBatch(b.build())
    assert kb.validate_crc()
    assert kb.compression_type == codec
    assert kb.is_transactional == txn
    assert (kb.producer_id, kb.producer_epoch, kb.base_sequence) == (pid, 3, seq)
    got = list(kb)
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in got] == [
        (i, ts, k, v, h) for i, (ts, k, v, h) in enumerate(recs)
    ]


@pytest.mark.parametrize("codec", CODECS)
@settings(max_examples=examples(15), deadline=None)
@given(recs=recs_v2, txn=st.booleans(), pid=st.integers(-1, 2**40), seq=st.integers(-1, 2**30))
def test_kafka_python_built_read_by_pylog(codec, recs, txn, pid, seq):
    kb = _kafka_builder(codec, txn, pid, 3, seq)
    for i, (ts, k, v, h) in enumerate(recs):
        kb.append(i, ts, k, v, h)
    raw = bytes(kb.build())
    batch = RecordBatch(raw, verify_crc=True)
    # kafka-python keeps a batch uncompressed when compression would grow it
    assert batch.codec == DefaultRecordBatch(raw).compression_type in (0, codec)
    assert batch.is_transactional == txn
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (pid, 3, seq)
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch.records()] == [
        (i, ts, k, v, h) for i, (ts, k, v, h) in enumerate(recs)
    ]


@pytest.mark.parametrize("codec", CODECS)
def test_compressible_batches_both_ways(codec):
    recs = [(1000 + i, b"key-%d" % (i % 7), b"value %d " % i * 20, [("h", b"x")] if i % 2 else []) for i in range(300)]
    ours = BatchBuilder(codec=codec)
    theirs = _kafka_builder(codec)
    for i, (ts, k, v, h) in enumerate(recs):
        ours.append(ts, k, v, h)
        theirs.append(i, ts, k, v, h)
    ours_raw, theirs_raw = ours.build(), bytes(theirs.build())
    if codec:
        assert len(ours_raw) < 20000  # really compressed
    expected = [(i, ts, k, v, h) for i, (ts, k, v, h) in enumerate(recs)]
    kb = DefaultRecordBatch(ours_raw)
    assert kb.validate_crc() and kb.compression_type == codec
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in kb] == expected
    batch = RecordBatch(theirs_raw, verify_crc=True)
    assert batch.codec == codec
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch] == expected


@settings(max_examples=examples(60), deadline=None)
@given(recs=recs_v2, txn=st.booleans(), pid=st.integers(-1, 2**40), seq=st.integers(-1, 2**30))
def test_uncompressed_batches_are_byte_identical(recs, txn, pid, seq):
    ours = BatchBuilder(is_transactional=txn, producer_id=pid, producer_epoch=2, base_sequence=seq,
                        partition_leader_epoch=0)  # kafka-python writes epoch 0
    theirs = _kafka_builder(0, txn, pid, 2, seq)
    for i, (ts, k, v, h) in enumerate(recs):
        ours.append(ts, k, v, h)
        theirs.append(i, ts, k, v, h)
    assert ours.build() == bytes(theirs.build())


@pytest.mark.parametrize("kind", [COMMIT, ABORT])
def test_control_batch_read_by_kafka_python(kind):
    kb = DefaultRecordBatch(build_end_txn_batch(kind, 77, 4, 9, base_offset=500, timestamp=1234))
    assert kb.validate_crc() and kb.is_control_batch and kb.is_transactional
    [rec] = list(kb)
    assert (rec.offset, rec.timestamp, rec.version, rec.type) == (500, 1234, 0, kind)


def test_memory_records_walks_pylog_buffer():
    buf = b""
    for i, codec in enumerate(CODECS):
        b = BatchBuilder(codec=codec, base_offset=i * 10)
        for j in range(3):
            b.append(1000 + j, b"k%d" % j, b"v%d" % (i * 10 + j))
        buf += b.build()
    mr = MemoryRecords(buf)
    values = []
    while mr.has_next():
        batch = mr.next_batch()
        assert batch.validate_crc()
        values += [(r.offset, r.value) for r in batch]
    assert values == [(r.offset, r.value) for r in iter_records(buf)]
    assert len(values) == 15


# ---- legacy v0/v1


def _legacy_combos():
    # kafka-python needs the xxhash package for magic-0 lz4; our own round
    # trip covers that combination (test_records_legacy.py)
    for magic in (0, 1):
        for codec in (0, 1, 2, 3):
            if (magic, codec) != (0, 3):
                yield magic, codec


@pytest.mark.parametrize("magic,codec", list(_legacy_combos()))
@settings(max_examples=examples(10), deadline=None)
@given(recs=recs_legacy)
def test_legacy_pylog_built_read_by_kafka_python(magic, codec, recs):
    lb = LegacyBuilder(magic, codec, base_offset=0)
    for ts, k, v in recs:
        lb.append(ts, k, v)
    mr = MemoryRecords(lb.build())
    got = []
    while mr.has_next():
        batch = mr.next_batch()
        assert batch.validate_crc()
        got += [(r.offset, r.timestamp, r.key, r.value) for r in batch]
    assert got == [(i, ts if magic == 1 else None, k, v) for i, (ts, k, v) in enumerate(recs)]


@pytest.mark.parametrize("magic,codec", list(_legacy_combos()))
@settings(max_examples=examples(10), deadline=None)
@given(recs=recs_legacy, base=st.integers(0, 2**40))
def test_legacy_kafka_python_built_read_by_pylog(magic, codec, recs, base):
    kb = LegacyRecordBatchBuilder(magic=magic, compression_type=codec, batch_size=1 << 30)
    for i, (ts, k, v) in enumerate(recs):
        kb.append(i, ts, k, v)
    buf = bytearray(kb.build())
    # play the broker: assign absolute offsets (the wrapper gets the last one)
    entries = list(iter_entries(buf))
    if codec == 0:
        for n, (pos, _, _) in enumerate(entries):
            buf[pos : pos + 8] = (base + n).to_bytes(8, "big")
    else:
        [(pos, m, h)] = entries
        assert m == magic and h.codec == codec
        buf[pos : pos + 8] = (base + len(recs) - 1).to_bytes(8, "big")
        if magic == 0:
            base = 0  # magic 0 inner offsets are absolute: the producer's 0..n-1 stand
    got = list(iter_records(bytes(buf)))
    assert [(r.offset, r.timestamp, r.key, r.value) for r in got] == [
        (base + i, ts if magic == 1 else -1, k, v) for i, (ts, k, v) in enumerate(recs)
    ]


@pytest.mark.parametrize("codec", [0, 1, 2])
def test_legacy_magic0_kafka_python_built_read_by_pylog(codec):
    kb = LegacyRecordBatchBuilder(magic=0, compression_type=codec, batch_size=1 << 30)
    for i in range(4):
        kb.append(i, None, b"k%d" % i, b"v%d" % i)
    got = list(iter_records(bytes(kb.build())))
    assert [(r.offset, r.timestamp, r.key, r.value) for r in got] == [(i, -1, b"k%d" % i, b"v%d" % i) for i in range(4)]


def test_legacy_entries_are_byte_identical_when_uncompressed():
    for magic in (0, 1):
        lb = LegacyBuilder(magic)
        kb = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 30)
        for i in range(5):
            lb.append(1000 + i, b"k%d" % i if i % 2 else None, b"v" * i)
            kb.append(i, 1000 + i, b"k%d" % i if i % 2 else None, b"v" * i)
        assert lb.build() == bytes(kb.build())


def test_legacy_batch_reader_agrees_with_kafka_python_header():
    lb = LegacyBuilder(1, 1, base_offset=40)
    for i in range(3):
        lb.append(5000 + i, b"k", b"v%d" % i)
    raw = lb.build()
    [batch] = list(iter_batches(raw))
    kp = LegacyRecordBatch(raw, 1)
    assert (batch.offset, batch.crc, batch.codec, batch.timestamp_type) == (kp.base_offset, kp._crc, kp.compression_type, kp.timestamp_type)
    assert batch.crc_ok() and kp.validate_crc()
    assert [r.offset for r in batch] == [40, 41, 42]
