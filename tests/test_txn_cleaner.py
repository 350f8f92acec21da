"""The cleaner and transactions: aborted records go, committed ones stay, markers stay.

A compacted log holds a committed transaction, an aborted one that rewrote a
key and added another, and plain writes after them. After cleaning, the key's
value is the committed one (the aborted value neither survives nor shadows
it in the offset map), the aborted-only key is gone, the COMMIT and ABORT
markers are kept, and the cleaned segment's .txnindex still lists the abort.
"""
from __future__ import annotations

from cleaner_support import NOW, append, kv_map, open_log, read_records, topic_config
from pylog.core.records import BatchBuilder
from pylog.core.records.control import ABORT, COMMIT, build_end_txn_batch
from pylog.storage.cleaner import Cleaner
from pylog.storage.offset_map import OffsetMap


def txn(lg, pid, records, seq=0):
    b = BatchBuilder(producer_id=pid, producer_epoch=0, base_sequence=seq, is_transactional=True)
    for k, v in records:
        b.append(NOW, k, v)
    lg.append_internal(bytearray(b.build()), 0, now_ms=NOW)


def marker(lg, pid, kind):
    lg.append_internal(bytearray(build_end_txn_batch(kind, pid, 0, 0, timestamp=NOW)), 0, now_ms=NOW)


def control_batches(lg):
    return [h for seg in lg.segments for _, h in seg.batches() if h.is_control]


def test_cleaning_removes_aborted_records_and_keeps_markers(tmp_path):
    lg = open_log(tmp_path / "t-0", topic_config(segment_bytes=400))
    append(lg, [(b"k1", b"v0"), (b"k0", b"plain")])
    txn(lg, 7, [(b"k1", b"v-committed")])
    marker(lg, 7, COMMIT)
    txn(lg, 8, [(b"k1", b"v-aborted"), (b"k2", b"only-aborted")])
    marker(lg, 8, ABORT)
    assert [t.producer_id for t in lg.aborted_transactions(0, lg.log_end_offset)] == [8]
    for i in range(30):  # later segments, so the transactions are in the cleanable section
        append(lg, [(f"x{i}".encode(), b"y" * 40)])
    assert len(lg.segments) > 3
    assert kv_map(read_records(lg))[b"k1"] == b"v-aborted"  # what a read_uncommitted reader would see
    Cleaner(OffsetMap(1 << 20), fsync=False).clean(lg, None, now_ms=NOW, force=True)
    after = read_records(lg)
    values = kv_map(after)
    assert values[b"k1"] == b"v-committed" and values[b"k0"] == b"plain"
    assert b"k2" not in values and b"v-aborted" not in [v for _, _, v in after]
    assert len(control_batches(lg)) == 2  # both markers stay
    assert [t.producer_id for t in lg.aborted_transactions(0, lg.log_end_offset)] == [8]
    lg.close()
