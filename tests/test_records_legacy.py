"""Legacy message sets (magic 0/1): round trips, wrapper offsets, mixed buffers."""
from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.examples import examples

from pylog.core.records import (
    BatchBuilder,
    LegacyBatch,
    LegacyBuilder,
    RecordBatch,
    iter_batches,
    iter_entries,
    iter_records,
)
from pylog.core.records.compression import compress_lz4, decompress_lz4
from pylog.core.records.errors import CorruptCompressedError, CorruptRecordError, UnknownCodecError

recs = st.lists(
    st.tuples(st.integers(0, 2**41), st.none() | st.binary(max_size=20), st.none() | st.binary(max_size=100)),
    min_size=1,
    max_size=12,
)


@settings(max_examples=examples(40), deadline=None)
@given(magic=st.sampled_from([0, 1]), codec=st.sampled_from([0, 1, 2, 3]), ts_type=st.sampled_from([0, 1]),
       base=st.integers(0, 2**40), recs=recs)
def test_round_trip(magic, codec, ts_type, base, recs):
    lb = LegacyBuilder(magic, codec, base_offset=base, timestamp_type=ts_type)
    for ts, k, v in recs:
        lb.append(ts, k, v)
    raw = lb.build()
    got = list(iter_records(raw))
    assert [r.offset for r in got] == [base + i for i in range(len(recs))]
    assert [(r.key, r.value, r.headers) for r in got] == [(k, v, ()) for _, k, v in recs]
    if magic == 0:
        assert {r.timestamp for r in got} == {-1}
    elif ts_type == 1 and codec:
        # LogAppendTime wrapper: inner messages take the wrapper's timestamp
        assert [r.timestamp for r in got] == [max(t for t, _, _ in recs)] * len(recs)
    else:
        assert [r.timestamp for r in got] == [t for t, _, _ in recs]
    entries = list(iter_entries(raw))
    assert len(entries) == (1 if codec else len(recs))
    assert sum(h.size for _, _, h in entries) == len(raw)
    assert entries[-1][2].last_offset == base + len(recs) - 1
    assert all(m == magic for _, m, _ in entries)


def test_entry_layout_by_hand():
    raw = LegacyBuilder(1).build() + LegacyBuilder(1, base_offset=7).build()
    assert raw == b""
    lb = LegacyBuilder(1, base_offset=7)
    lb.append(1234, b"k", None)
    raw = lb.build()
    body = bytes([1, 0]) + struct.pack(">q", 1234) + struct.pack(">i", 1) + b"k" + struct.pack(">i", -1)
    assert raw == struct.pack(">qiI", 7, len(body) + 4, zlib.crc32(body)) + body
    [batch] = list(iter_batches(raw))
    assert isinstance(batch, LegacyBatch)
    assert (batch.magic, batch.offset, batch.timestamp, batch.size) == (1, 7, 1234, len(raw))
    assert batch.key_value() == (b"k", None)


def test_v1_wrapper_offsets_are_relative_and_wrapper_holds_the_last():
    lb = LegacyBuilder(1, 1, base_offset=1000)
    for i in range(5):
        lb.append(10 + i, None, b"%d" % i)
    raw = lb.build()
    [(_, _, h)] = list(iter_entries(raw))
    assert h.offset == 1004 and h.is_compressed and h.codec == 1
    assert h.timestamp == 14  # CreateTime wrapper: the max inner timestamp
    assert [r.offset for r in iter_records(raw)] == [1000, 1001, 1002, 1003, 1004]


def test_v0_lz4_wrapper_uses_kafka_08_frame_checksum():
    lb = LegacyBuilder(0, 3, base_offset=3)
    lb.append(None, b"k", b"v" * 100)
    raw = lb.build()
    payload = LegacyBatch(raw).key_value()[1]
    with pytest.raises(CorruptCompressedError):
        decompress_lz4(payload)  # not the standard checksum...
    assert [r.value for r in iter_records(raw)] == [b"v" * 100]  # ...yet we read it


def test_mixed_magics_in_one_buffer():
    parts = []
    l0 = LegacyBuilder(0, base_offset=0)
    l0.append(None, b"a", b"0")
    parts.append(l0.build())
    l1 = LegacyBuilder(1, 2, base_offset=1)
    l1.append(5, b"b", b"1")
    l1.append(6, b"c", b"2")
    parts.append(l1.build())
    v2 = BatchBuilder(codec=4, base_offset=3)
    v2.append(7, b"d", b"3", [("h", None)])
    parts.append(v2.build())
    buf = b"".join(parts)
    entries = list(iter_entries(buf))
    assert [m for _, m, _ in entries] == [0, 1, 2]
    assert [p for p, _, _ in entries] == [0, len(parts[0]), len(parts[0]) + len(parts[1])]
    assert [h.next_offset for _, _, h in entries] == [1, 3, 4]
    batches = list(iter_batches(buf))
    assert [type(b) for b in batches] == [LegacyBatch, LegacyBatch, RecordBatch]
    got = list(iter_records(buf))
    assert [(r.offset, r.key, r.value) for r in got] == [(0, b"a", b"0"), (1, b"b", b"1"), (2, b"c", b"2"), (3, b"d", b"3")]
    assert got[3].headers == (("h", None),)


def _wrapper(magic: int, attributes: int, value: bytes, offset: int = 0) -> bytes:
    body = bytes([magic, attributes]) + (struct.pack(">q", 0) if magic else b"") + struct.pack(">i", -1)
    body += struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", offset, len(body) + 4, zlib.crc32(body)) + body


def test_legacy_zstd_is_unknown():
    raw = _wrapper(1, 4, b"whatever")
    with pytest.raises(UnknownCodecError):
        LegacyBatch(raw).records()


def test_nested_compression_is_corrupt():
    inner = LegacyBuilder(1, 1)
    inner.append(1, None, b"x")
    raw = _wrapper(1, 1, __import__("gzip").compress(inner.build()))
    with pytest.raises(CorruptRecordError):
        LegacyBatch(raw).records()


def test_inner_magic_must_match_wrapper():
    inner = LegacyBuilder(0)
    inner.append(None, None, b"x")
    raw = _wrapper(1, 3, compress_lz4(inner.build()))
    with pytest.raises(CorruptRecordError):
        LegacyBatch(raw).records()


def test_lengths_that_overrun_the_message_are_corrupt():
    lb = LegacyBuilder(0)
    lb.append(None, b"key", b"value")
    raw = bytearray(lb.build())
    raw[18:22] = struct.pack(">i", 50)  # key length past the end
    raw[12:16] = struct.pack(">I", zlib.crc32(raw[16:]))
    with pytest.raises(CorruptRecordError):
        LegacyBatch(bytes(raw), verify_crc=True).records()
