"""The cleaner and transactions: aborted records go, committed ones stay, markers go as Kafka's do.

A compacted log holds a committed transaction, an aborted one that rewrote a
key and added another, and plain writes after them. After cleaning, the key's
value is the committed one (the aborted value neither survives nor shadows
it in the offset map), the aborted-only key is gone. Markers follow Kafka's
LogCleaner: a marker with data of its transaction still below it stays as it
is; one without gets a delete horizon (cleaning time + delete.retention.ms) and
goes in a cleaning after it (tests/test_txn_cleaner_kafka.py compares with Kafka).
"""
from __future__ import annotations

from support.cleaner_support import NOW, append, kv_map, open_log, read_records, topic_config
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
    markers = {h.producer_id: h for h in control_batches(lg)}
    assert set(markers) == {7, 8}  # both markers stay this cleaning
    assert not markers[7].has_delete_horizon  # the committed record it guards is still there
    assert markers[8].has_delete_horizon and markers[8].base_timestamp == NOW + lg.config["delete.retention.ms"]
    # the aborted data was in another segment group, so the ABORT marker's group saw none of it:
    # Kafka's cleaned .txnindex keeps only aborts whose data it still saw
    assert lg.aborted_transactions(0, lg.log_end_offset) == []
    Cleaner(OffsetMap(1 << 20), fsync=False).clean(lg, None, now_ms=NOW + lg.config["delete.retention.ms"] - 1,
                                                   force=True)
    assert {h.producer_id for h in control_batches(lg)} == {7, 8}  # before its horizon
    Cleaner(OffsetMap(1 << 20), fsync=False).clean(lg, None, now_ms=NOW + lg.config["delete.retention.ms"],
                                                   force=True)
    left = [h for h in control_batches(lg)]
    # the ABORT marker's producer state still holds its data batch, so the marker itself goes
    assert [h.producer_id for h in left if h.record_count] == [7]
    assert kv_map(read_records(lg))[b"k1"] == b"v-committed"
    lg.close()


def test_markers_kept_while_their_data_is_in_the_same_group(tmp_path):
    lg = open_log(tmp_path / "t-0", topic_config(segment_bytes=4000))
    txn(lg, 8, [(b"k1", b"v-aborted")])
    marker(lg, 8, ABORT)
    txn(lg, 7, [(b"k1", b"v-committed")])
    marker(lg, 7, COMMIT)
    append(lg, [(b"k1", b"plain")])  # supersedes the committed value
    lg.roll(NOW)
    append(lg, [(b"z", b"z")])
    retention = lg.config["delete.retention.ms"]
    Cleaner(OffsetMap(1 << 20), fsync=False).clean(lg, None, now_ms=NOW, force=True)
    # the aborted batch goes as an empty batch (its producer's last); that empty batch still
    # counts as data of the transaction, so the ABORT marker stays without a horizon and in .txnindex
    markers = {h.producer_id: h for h in control_batches(lg)}
    assert not markers[8].has_delete_horizon
    assert [t.producer_id for t in lg.aborted_transactions(0, lg.log_end_offset)] == [8]
    # the committed batch was superseded but is producer 7's last: kept empty, so COMMIT stays too
    assert not markers[7].has_delete_horizon
    values = kv_map(read_records(lg))
    assert values[b"k1"] == b"plain" and b"v-aborted" not in values.values()
    Cleaner(OffsetMap(1 << 20), fsync=False).clean(lg, None, now_ms=NOW + retention, force=True)
    assert {h.producer_id for h in control_batches(lg) if h.record_count} == {7, 8}
    lg.close()
