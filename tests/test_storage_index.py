"""Offset, time and transaction index files: format, search, trimming, sanity checks."""
import struct

import pytest
from hypothesis import given, settings, strategies as st

from support.examples import examples

from pylog.storage.index_file import CorruptIndexError, IndexFullError, InvalidIndexEntryError
from pylog.storage.offset_index import OffsetIndex
from pylog.storage.time_index import TimeIndex
from pylog.storage.txn_index import AbortedTxn, CorruptTxnIndexError, TransactionIndex


def test_offset_index_format_and_trim(tmp_path):
    p = tmp_path / "00000000000000000100.index"
    idx = OffsetIndex(p, 100, 80)
    assert p.stat().st_size == 80  # preallocated
    idx.append(105, 0)
    idx.append(110, 4096)
    # the entry at or below the target; below the first one, (base offset, 0)
    assert [idx.lookup(t) for t in (99, 105, 109, 1000)] == [(100, 0), (105, 0), (105, 0), (110, 4096)]
    idx.close()
    # trimmed to its entries: 4-byte relative offset + 4-byte position, big-endian
    assert p.read_bytes() == struct.pack(">iiii", 5, 0, 10, 4096)
    again = OffsetIndex(p, 100, 80)
    assert again.entries == 2 and again.all_entries() == [(105, 0), (110, 4096)]
    again.close()


def test_offset_index_full_and_ordering(tmp_path):
    idx = OffsetIndex(tmp_path / "0.index", 0, 24)
    for i in range(3):
        idx.append(i * 10, i * 100)
    assert idx.is_full
    with pytest.raises(IndexFullError):
        idx.append(100, 1000)
    idx2 = OffsetIndex(tmp_path / "1.index", 0, 80)
    idx2.append(10, 100)
    with pytest.raises(InvalidIndexEntryError):
        idx2.append(10, 200)  # offsets must grow
    with pytest.raises(InvalidIndexEntryError):
        idx2.append(2**31 + 5, 200)  # relative offset overflow


def test_offset_index_truncate(tmp_path):
    idx = OffsetIndex(tmp_path / "0.index", 0, 800)
    for i in range(10):
        idx.append(i * 10 + 9, i * 100)
    idx.truncate_to(49)
    assert idx.all_entries()[-1] == (39, 300)
    idx.truncate_to(45)
    assert idx.all_entries()[-1] == (39, 300)
    idx.truncate_to(0)
    assert idx.entries == 0


def test_offset_index_sanity(tmp_path):
    p = tmp_path / "00000000000000000000.index"
    p.write_bytes(b"\0" * 64)  # an untrimmed (preallocated) file after a crash
    idx = OffsetIndex(p, 0, 64)
    with pytest.raises(CorruptIndexError):
        idx.sanity_check()
    p2 = tmp_path / "00000000000000000050.index"
    p2.write_bytes(struct.pack(">ii", -5, 0))
    with pytest.raises(CorruptIndexError):
        OffsetIndex(p2, 50, 64).sanity_check()
    p3 = tmp_path / "00000000000000000007.index"
    p3.write_bytes(struct.pack(">ii", 3, 9000))
    with pytest.raises(CorruptIndexError):
        OffsetIndex(p3, 7, 64).sanity_check(log_size=100)


@settings(max_examples=examples(60), deadline=None)
@given(st.lists(st.integers(1, 1000), min_size=0, max_size=3000), st.integers(-5, 400000))
def test_offset_index_lookup_matches_linear_scan(tmp_path_factory, gaps, target):
    d = tmp_path_factory.mktemp("oi")
    idx = OffsetIndex(d / "0.index", 1000, 8 * 4000)
    entries, off, pos = [], 1000, 0
    for g in gaps:
        off += g
        pos += g * 3
        idx.append(off, pos)
        entries.append((off, pos))
    want = (1000, 0)
    for e in entries:
        if e[0] <= target + 1000:
            want = e
    assert idx.lookup(target + 1000) == want
    idx.close()


def test_time_index_format_and_lookup(tmp_path):
    p = tmp_path / "00000000000000000010.timeindex"
    ti = TimeIndex(p, 10, 120)
    assert ti.maybe_append(1000, 12)
    assert not ti.maybe_append(1000, 14)  # timestamps only grow
    assert ti.maybe_append(2000, 20)
    assert [ti.lookup(t) for t in (999, 1500, 5000)] == [(-1, 10), (1000, 12), (2000, 20)]
    assert ti.lookup_below(2000) == (1000, 12)
    ti.close()
    assert p.read_bytes() == struct.pack(">qiqi", 1000, 2, 2000, 10)
    ti = TimeIndex(p, 10, 120)
    ti.truncate_to(20)
    assert ti.all_entries() == [(1000, 12)]
    ti.close()


def test_time_index_full_keeps_a_slot_for_roll(tmp_path):
    ti = TimeIndex(tmp_path / "0.timeindex", 0, 36)  # 3 entries
    ti.maybe_append(1, 1)
    ti.maybe_append(2, 2)
    assert ti.is_full
    with pytest.raises(IndexFullError):
        ti.maybe_append(3, 3)
    assert ti.maybe_append(3, 3, skip_full_check=True)
    assert ti.entries == 3


def test_time_index_sanity(tmp_path):
    p = tmp_path / "00000000000000000000.timeindex"
    p.write_bytes(b"\0" * 36)
    with pytest.raises(CorruptIndexError):
        TimeIndex(p, 0, 36).sanity_check()


def test_txn_index_roundtrip(tmp_path):
    p = tmp_path / "00000000000000000000.txnindex"
    ti = TransactionIndex(p, 0)
    assert not p.exists()  # created lazily, like Kafka
    ti.append(AbortedTxn(7, 10, 20, 5))
    ti.append(AbortedTxn(8, 15, 30, 10))
    data = p.read_bytes()
    assert data[:34] == struct.pack(">hqqqq", 0, 7, 10, 20, 5)
    assert len(data) == 68
    again = TransactionIndex(p, 0)
    assert again.read_all() == [AbortedTxn(7, 10, 20, 5), AbortedTxn(8, 15, 30, 10)]
    assert again.collect_aborted(21, 100) == [AbortedTxn(8, 15, 30, 10)]
    again.truncate_to(25)
    assert again.read_all() == [AbortedTxn(7, 10, 20, 5)]
    with pytest.raises(InvalidIndexEntryError):
        again.append(AbortedTxn(9, 1, 2, 0))
    p.write_bytes(data[:40])
    # opening never fails (the partition must still load); the sanity check reports it, so the
    # segment rebuilds its indexes, as for a corrupt offset or time index
    corrupt = TransactionIndex(p, 0)
    with pytest.raises(CorruptTxnIndexError):
        corrupt.sanity_check()
    assert issubclass(CorruptTxnIndexError, CorruptIndexError)
