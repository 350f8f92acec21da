"""Log and LogManager: append checks, roll conditions, reads, lookups, retention, restart."""
import os

import pytest
from kafka.record.memory_records import MemoryRecords

from pylog.core.config import BROKER_CONFIGS, TOPIC_CONFIGS
from pylog.core.errors import (
    CorruptMessageError,
    DataError,
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidProducerEpochError,
    InvalidRecordError,
    InvalidTimestampError,
    InvalidTopicError,
    MessageTooLargeError,
    OffsetOutOfRangeError,
    OutOfOrderSequenceNumberError,
    RecordListTooLargeError,
    TopicAlreadyExistsError,
)
from pylog.core.records.batch import RecordBatch, build_batch
from pylog.core.records.header import iter_headers
from pylog.storage import FetchSlice, Log, LogManager
from support.log_clock import Clock, NOW, broker, cfg  # noqa: F401


def batch(n=1, ts=NOW, size=50, pid=-1, epoch=-1, seq=-1, key=b"k", **kw):
    return bytearray(build_batch([(ts + i, key, b"v" * size) for i in range(n)],
                                 producer_id=pid, producer_epoch=epoch, base_sequence=seq, **kw))


def make_log(tmp_path, clock=None, **kw):
    return Log(tmp_path / "t-0", cfg(**kw), clock=clock or Clock())


def all_batches(lg):
    out = []
    for seg in lg.segments:
        data = os.pread(seg.fd, seg.size, 0)
        out.extend(h for _, h in iter_headers(data))
    return out


# ---- append ----

def test_append_assigns_offsets_and_epoch(tmp_path):
    lg = make_log(tmp_path)
    b = batch(3)
    info = lg.append_as_leader(b, 5)
    assert (info.first_offset, info.last_offset, info.record_count, info.duplicate) == (0, 2, 3, False)
    assert info.log_append_time == -1 and info.max_timestamp == NOW + 2 and info.bytes == len(b)
    info = lg.append_as_leader(batch(2) + batch(4), 6)
    assert (info.first_offset, info.last_offset, info.record_count) == (3, 8, 6)
    hs = all_batches(lg)
    assert [(h.base_offset, h.partition_leader_epoch) for h in hs] == [(0, 5), (3, 6), (5, 6)]
    assert lg.log_end_offset == lg.high_watermark == 9
    assert lg.epoch_cache.entries == [(5, 0), (6, 3)]
    assert lg.end_offset_for_epoch(5) == (5, 3) and lg.end_offset_for_epoch(6) == (6, 9)
    assert lg.end_offset_for_epoch(9) == (-1, -1)
    assert (tmp_path / "t-0" / "leader-epoch-checkpoint").read_text() == "0\n2\n5 0\n6 3\n"


def test_append_log_append_time(tmp_path):
    clock = Clock()
    lg = make_log(tmp_path, clock, message_timestamp_type="LogAppendTime")
    info = lg.append_as_leader(batch(2, ts=5), 0)
    assert info.log_append_time == NOW and info.max_timestamp == NOW
    raw = lg.read(0, 10000).read_bytes()
    rb = RecordBatch(raw, 0, verify_crc=True)  # CRC recomputed
    assert rb.timestamp_type == 1 and [r.timestamp for r in rb.records()] == [NOW, NOW]


def test_append_rejections_write_nothing(tmp_path):
    clock = Clock()
    lg = make_log(tmp_path, clock, max_message_bytes=500, segment_bytes=3000, cleanup_policy="compact")
    good = batch(1)
    bad_crc = batch(1)
    bad_crc[-1] ^= 1
    with pytest.raises(CorruptMessageError):
        lg.append_as_leader(good + bad_crc, 0)
    with pytest.raises(CorruptMessageError):
        lg.append_as_leader(batch(1)[:-3], 0)
    v1 = bytearray(batch(1))
    v1[16] = 1
    with pytest.raises(InvalidRecordError):  # Kafka 4: INVALID_RECORD (87) for any magic but 2
        lg.append_as_leader(v1, 0)
    with pytest.raises(MessageTooLargeError):
        lg.append_as_leader(batch(1, size=600), 0)
    with pytest.raises(RecordListTooLargeError):
        lg.append_as_leader(batch(1, size=100) * 30, 0)
    with pytest.raises(InvalidTimestampError):
        lg.append_as_leader(batch(1, ts=NOW + 3_600_001), 0)
    with pytest.raises(InvalidRecordError):
        lg.append_as_leader(batch(1) + batch(1, key=None), 0)
    assert lg.log_end_offset == 0 and lg.size_bytes == 0
    lg.append_as_leader(batch(1), 0)
    assert lg.log_end_offset == 1


def test_timestamp_before_max(tmp_path):
    lg = make_log(tmp_path, message_timestamp_before_max_ms=1000)
    with pytest.raises(InvalidTimestampError):
        lg.append_as_leader(batch(1, ts=NOW - 1001), 0)
    lg.append_as_leader(batch(1, ts=NOW - 999), 0)


def test_producer_sequences(tmp_path):
    lg = make_log(tmp_path)
    a = lg.append_as_leader(batch(3, pid=9, epoch=0, seq=0), 0)
    lg.append_as_leader(batch(2, pid=9, epoch=0, seq=3), 0)
    dup = lg.append_as_leader(batch(3, pid=9, epoch=0, seq=0), 0)
    assert dup.duplicate and (dup.first_offset, dup.last_offset) == (a.first_offset, a.last_offset)
    assert lg.log_end_offset == 5
    with pytest.raises(OutOfOrderSequenceNumberError):
        lg.append_as_leader(batch(1, pid=9, epoch=0, seq=7), 0)
    with pytest.raises(OutOfOrderSequenceNumberError):
        lg.append_as_leader(batch(1, pid=9, epoch=1, seq=4), 0)  # new epoch must start at 0
    lg.append_as_leader(batch(1, pid=9, epoch=1, seq=0), 0)
    with pytest.raises(InvalidProducerEpochError):
        lg.append_as_leader(batch(1, pid=9, epoch=0, seq=5), 0)
    # only the last 5 batches are remembered
    for i in range(1, 7):
        lg.append_as_leader(batch(1, pid=9, epoch=1, seq=i), 0)
    with pytest.raises(OutOfOrderSequenceNumberError):
        lg.append_as_leader(batch(1, pid=9, epoch=1, seq=1), 0)
    assert lg.append_as_leader(batch(1, pid=9, epoch=1, seq=2), 0).duplicate
    assert lg.log_end_offset == 12


# ---- roll ----

def test_roll_on_size(tmp_path):
    lg = make_log(tmp_path, segment_bytes=1000)
    b = batch(1, size=200)
    for _ in range(10):
        lg.append_as_leader(batch(1, size=200), 0)
    sizes = [s.size for s in lg.segments]
    assert all(s <= 1000 for s in sizes) and len(sizes) == 4 and sum(sizes) == 10 * len(b)
    assert [s.base_offset for s in lg.segments] == [0, 3, 6, 9]
    # a snapshot named after each new segment's base offset
    snaps = sorted(p.name for p in (tmp_path / "t-0").glob("*.snapshot"))
    assert snaps == ["00000000000000000003.snapshot", "00000000000000000006.snapshot", "00000000000000000009.snapshot"]
    # older segments were flushed: the recovery point moved
    assert lg.recovery_point == 9
    # inactive indexes are trimmed
    assert (tmp_path / "t-0" / "00000000000000000000.index").stat().st_size == 0


def test_roll_on_time_with_jitter(tmp_path):
    clock = Clock()
    lg = make_log(tmp_path, clock, segment_ms=1000, segment_jitter_ms=500)
    jitter = lg.active_segment.roll_jitter_ms
    assert 0 <= jitter < 500
    lg.append_as_leader(batch(1, ts=NOW), 0)
    lg.append_as_leader(batch(1, ts=NOW + 1000 - jitter), 0)  # exactly the limit: no roll
    assert len(lg.segments) == 1
    clock.ms += 2000
    lg.append_as_leader(batch(1, ts=NOW + 1001 - jitter), 0)  # based on record timestamps, not the wall clock
    assert len(lg.segments) == 2 and lg.active_segment.base_offset == 2


def test_roll_on_full_index(tmp_path):
    lg = make_log(tmp_path, segment_index_bytes=24, index_interval_bytes=1)
    for _ in range(8):
        lg.append_as_leader(batch(1), 0)
    assert len(lg.segments) > 1
    assert all(s.offset_index.entries <= 3 for s in lg.segments)


def test_roll_on_offset_overflow(tmp_path):
    lg = make_log(tmp_path)
    lg.append_as_leader(batch(1), 0)
    seg = lg.active_segment
    # pretend the segment already holds offsets up to base + INT_MAX
    seg.next_offset = 2**31 - 1
    info = lg.append_as_leader(batch(2), 0)
    assert info.first_offset == 2**31 - 1 and lg.active_segment.base_offset == 2**31 - 1


def test_sparse_index(tmp_path):
    lg = make_log(tmp_path, index_interval_bytes=1000)
    b = batch(1, size=180)
    n = 40
    for i in range(n):
        lg.append_as_leader(batch(1, ts=NOW + i, size=180), 0)
    entries = lg.active_segment.offset_index.all_entries()
    # one entry after more than index.interval.bytes were written since the last one
    per = 1000 // len(b) + 1
    assert entries[0] == (per, per * len(b))
    assert len(entries) == (n - 1) // per
    assert lg.active_segment.time_index.entries == len(entries)


# ---- read ----

def test_read_boundaries(tmp_path):
    lg = make_log(tmp_path, segment_bytes=1000, index_interval_bytes=100)
    b = batch(2, size=100)
    bl = len(b)
    for _ in range(12):
        lg.append_as_leader(batch(2, size=100), 0)
    bases = [s.base_offset for s in lg.segments]
    assert len(bases) > 3
    for seg in lg.segments:
        for off in (seg.base_offset, seg.base_offset + 1, seg.next_offset - 1):
            fs = lg.read(off, 10 ** 6)
            assert fs.length > 0 and fs.length % bl == 0
            hs = [h for _, h in iter_headers(fs.read_bytes())]
            assert hs[0].base_offset <= off <= hs[0].last_offset
            assert fs.first_offset == hs[0].base_offset
    # one segment per read: stops at the segment end
    fs = lg.read(0, 10 ** 6)
    assert fs.length == lg.segments[0].size
    # max_bytes smaller than a batch: one whole batch (or none)
    assert lg.read(4, 10).length == bl
    assert lg.read(4, 10, min_one_batch=False).length == 0
    assert lg.read(0, bl * 2 + 5).length == bl * 2
    # at the end: empty; beyond: out of range
    end = lg.log_end_offset
    assert lg.read(end, 100).length == 0
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(end + 1, 100)
    # upper bound
    fs = lg.read(0, 10 ** 6, upper_bound=4)
    assert [h.base_offset for _, h in iter_headers(fs.read_bytes())] == [0, 2]
    fs = lg.read(0, 10 ** 6, upper_bound=3)  # batches are never split: the one holding 3 waits
    assert [h.base_offset for _, h in iter_headers(fs.read_bytes())] == [0]
    assert lg.read(4, 100, upper_bound=4).length == 0
    # below the log start
    lg.delete_records(5)
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(4, 100)
    fs = lg.read(5, 10 ** 6)
    assert fs.first_offset == 4 and fs.length > 0
    # FetchSlice works with sendfile
    assert isinstance(fs, FetchSlice)
    r, w = os.pipe()
    try:
        sent = os.sendfile(w, fs.fd, fs.position, min(fs.length, 4096))
        assert os.read(r, sent) == fs.read_bytes()[:sent]
    finally:
        os.close(r)
        os.close(w)


def test_read_partial_tail_is_kafkas_byte_slice(tmp_path):
    """Fetch's read (partial_tail): Kafka's LogSegment.read, the budget's bytes ending mid-batch,
    the first batch whole under min_one_batch, never past the segment end or the upper bound."""
    lg = make_log(tmp_path, segment_bytes=1000, index_interval_bytes=100)
    for _ in range(12):
        lg.append_as_leader(batch(2, size=100), 0)
    bl = len(batch(2, size=100))
    seg0 = lg.segments[0]
    whole = lg.read(0, 10 ** 6).read_bytes()
    for budget in (1, bl - 1, bl, bl + 1, bl * 2 + 5, seg0.size - 1):
        fs = lg.read(0, budget, partial_tail=True)
        assert fs.first_offset == 0
        assert fs.length == max(budget, bl)  # the first batch whole, then the budget's bytes
        assert fs.read_bytes() == whole[:fs.length]
    assert lg.read(2, bl + 7, partial_tail=True).length == bl + 7  # from the batch holding offset 2
    assert lg.read(0, 10 ** 6, partial_tail=True).length == seg0.size  # the segment's end bounds it
    # without min_one_batch an over-budget first batch is nothing (Kafka: firstEntryIncomplete)
    assert lg.read(0, bl - 1, min_one_batch=False, partial_tail=True).length == 0
    assert lg.read(0, bl + 3, min_one_batch=False, partial_tail=True).length == bl + 3
    # the high watermark / upper bound: never a byte of an uncommitted batch
    assert lg.read(0, 10 ** 6, upper_bound=4, partial_tail=True).length == bl * 2
    assert lg.read(0, bl + 3, upper_bound=4, partial_tail=True).length == bl + 3
    assert lg.read(0, 10 ** 6, upper_bound=3, partial_tail=True).length == bl
    assert lg.read(4, 100, upper_bound=4, partial_tail=True).length == 0


def test_files_read_back_with_kafka_python(tmp_path):
    lg = make_log(tmp_path, segment_bytes=2000)
    for i in range(10):
        lg.append_as_leader(batch(3, size=20 + i), 1)
    seen = []
    for seg in lg.segments:
        with open(seg.log_path, "rb") as f:
            mr = MemoryRecords(f.read())
        while mr.has_next():
            b = mr.next_batch()
            assert b.validate_crc()
            for r in b:
                seen.append((r.offset, r.timestamp, len(r.value)))
    assert [s[0] for s in seen] == list(range(30))
    assert seen[5] == (5, NOW + 2, 21)


def test_offset_for_timestamp(tmp_path):
    lg = make_log(tmp_path, segment_bytes=700, index_interval_bytes=100)
    for i in range(20):
        lg.append_as_leader(batch(2, ts=NOW + i * 10, size=60), 3 if i < 10 else 4)
    # record timestamps: offset 2i -> NOW+10i, 2i+1 -> NOW+10i+1
    assert lg.offset_for_timestamp(NOW + 55) == (12, NOW + 60, 3)
    assert lg.offset_for_timestamp(NOW + 61) == (13, NOW + 61, 3)
    assert lg.offset_for_timestamp(NOW - 5) == (0, NOW, 3)
    assert lg.offset_for_timestamp(NOW + 1000) is None
    assert lg.offset_for_timestamp(-2) == (0, -1, 3)
    assert lg.offset_for_timestamp(-1) == (40, -1, 4)
    assert lg.offset_for_timestamp(-3) == (39, NOW + 191, 4)
    lg.delete_records(13)
    assert lg.offset_for_timestamp(NOW) == (13, NOW + 61, 3)
    assert lg.offset_for_timestamp(-2) == (13, -1, 3)


# ---- retention and deletion ----

def test_retention_by_time(tmp_path):
    clock = Clock()
    lg = make_log(tmp_path, clock, segment_bytes=600, retention_ms=10_000, file_delete_delay_ms=1000)
    for i in range(9):
        lg.append_as_leader(batch(1, ts=NOW + i * 1000, size=150), 0)
    n = len(lg.segments)
    clock.ms = NOW + 13_500
    deleted = lg.run_retention()
    assert deleted >= 1 and len(lg.segments) == n - deleted
    assert all(clock.ms - s.largest_timestamp <= 10_000 for s in lg.segments)
    assert lg.log_start_offset == lg.segments[0].base_offset
    d = tmp_path / "t-0"
    assert list(d.glob("*.log.deleted"))
    assert lg.delete_expired_files(clock.ms + 999) == 0
    assert lg.delete_expired_files(clock.ms + 1000) == deleted
    assert not list(d.glob("*.deleted"))
    # everything expired: the active segment is rolled so that the log keeps one
    clock.ms = NOW + 100_000
    lg.run_retention()
    assert len(lg.segments) == 1 and lg.active_segment.size == 0
    assert lg.log_start_offset == lg.log_end_offset == 9
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(8, 100)


def test_retention_by_size(tmp_path):
    lg = make_log(tmp_path, segment_bytes=600, retention_bytes=1000, file_delete_delay_ms=0)
    for i in range(12):
        lg.append_as_leader(batch(1, size=150), 0)
    before = lg.size_bytes
    lg.run_retention()
    assert lg.size_bytes < before
    # deleting one more segment would drop below retention.bytes
    assert lg.size_bytes - lg.segments[0].size < 1000 or len(lg.segments) == 1
    assert not list((tmp_path / "t-0").glob("*.deleted"))


def test_delete_records(tmp_path):
    lg = make_log(tmp_path, segment_bytes=600, file_delete_delay_ms=0)
    for i in range(12):
        lg.append_as_leader(batch(1, size=150), i // 4)
    assert lg.delete_records(5) == 5
    assert lg.segments[0].base_offset <= 5 < lg.segments[0].next_offset
    assert lg.epoch_cache.entries[0] == (1, 5)
    with pytest.raises(OffsetOutOfRangeError):
        lg.delete_records(13)
    assert lg.delete_records(3) == 5  # never backwards
    assert lg.delete_records(-1) == 12
    assert lg.read(12, 100).length == 0


# ---- restart ----

def test_restart_clean_and_unclean_keep_state(tmp_path):
    d = tmp_path / "t-0"
    c = cfg(segment_bytes=800, index_interval_bytes=200)
    lg = Log(d, c, clock=Clock())
    for i in range(30):
        lg.append_as_leader(batch(2, pid=4, epoch=0, seq=2 * i, size=40), i // 10)
    lg.delete_records(3)
    state = (lg.log_end_offset, [s.base_offset for s in lg.segments], lg.epoch_cache.entries,
             lg.producer_state.snapshot_entries(), lg.active_segment.offset_index.all_entries())
    lg.flush()
    lg.take_snapshot()
    lg.close()
    for clean in (True, False):
        lg = Log(d, c, clock=Clock(), log_start_offset=3, recovery_point=0, had_clean_shutdown=clean)
        assert lg.warnings == []
        assert lg.recovered == (not clean)
        assert (lg.log_end_offset, [s.base_offset for s in lg.segments], lg.epoch_cache.entries,
                lg.producer_state.snapshot_entries(), lg.active_segment.offset_index.all_entries()) == state
        assert lg.log_start_offset == 3
        assert lg.append_as_leader(batch(2, pid=4, epoch=0, seq=58), 2).duplicate
        with pytest.raises(OutOfOrderSequenceNumberError):
            lg.append_as_leader(batch(2, pid=4, epoch=0, seq=61), 2)
        lg.close()


def test_stray_files(tmp_path):
    d = tmp_path / "t-0"
    c = cfg(segment_bytes=600)
    lg = Log(d, c, clock=Clock())
    for i in range(8):
        lg.append_as_leader(batch(1, size=150), 0)
    lg.close()
    (d / "00000000000000000000.log.deleted").write_bytes(b"x")
    (d / "00000000000000000099.log.cleaned").write_bytes(b"x")
    (d / "00000000000000000100.log.swap").write_bytes(b"x")  # from a cleaning that did not finish
    (d / "00000000000000000002.index.swap").write_bytes(b"x")
    (d / "00000000000000000003.index").write_bytes(b"x")  # index without a log
    (d / "leader-epoch-checkpoint.tmp").write_bytes(b"0\n3\n")  # half-written checkpoint
    lg = Log(d, c, clock=Clock())
    names = sorted(p.name for p in d.iterdir())
    assert not [n for n in names if n.endswith((".deleted", ".cleaned", ".swap", ".tmp"))]
    assert "00000000000000000003.index" not in names
    assert lg.log_end_offset == 8
    # a completed swap replaces the segments it covers
    seg0 = lg.segments[0]
    data = os.pread(seg0.fd, seg0.size, 0)
    lg.close()
    (d / "00000000000000000000.log.swap").write_bytes(data)
    os.remove(d / "00000000000000000000.log")
    lg = Log(d, c, clock=Clock())
    assert lg.log_end_offset == 8 and lg.segments[0].size == len(data)
    assert any("swap" in w for w in lg.warnings)
    lg.close()


# ---- LogManager ----


def test_created_partition_files_and_a_leftover_folder(tmp_path):
    """A new partition's folder holds what Kafka's does once created (an empty .log, the active
    segment's indexes preallocated to segment.index.bytes, partition.metadata with the topic id); a
    folder already there (made after start-up by another hand) is loaded, not started empty over its records."""
    from pylog.storage.partition_metadata import read_partition_metadata

    d = tmp_path / "data"
    lm = LogManager([str(d)], broker(log_segment_bytes=4000, log_index_size_max_bytes=4096), clock=Clock())
    lm.startup()
    leftover = Log(d / "t-1", cfg())
    for _ in range(3):
        leftover.append_as_leader(batch(2), 0)
    leftover.close()
    info = lm.create_topic("t", 2)
    p0 = d / "t-0"
    assert sorted(os.listdir(p0)) == ["00000000000000000000.index", "00000000000000000000.log",
                                     "00000000000000000000.timeindex", "partition.metadata"]
    assert os.path.getsize(p0 / "00000000000000000000.log") == 0
    assert os.path.getsize(p0 / "00000000000000000000.index") == 4096
    assert os.path.getsize(p0 / "00000000000000000000.timeindex") == 4092  # whole 12-byte entries
    assert read_partition_metadata(p0) == read_partition_metadata(d / "t-1") == info.topic_id
    assert lm.get_log("t", 0).log_end_offset == 0 and lm.get_log("t", 1).log_end_offset == 6
    lm.get_log("t", 0).append_as_leader(batch(1), 0)
    lm.shutdown()
    lm = LogManager([str(d)], broker(log_segment_bytes=4000), clock=Clock())
    rep = lm.startup()
    assert rep.partitions_loaded == 2 and rep.partitions_recovered == 0
    assert [lm.get_log("t", p).log_end_offset for p in (0, 1)] == [1, 6]
    lm.shutdown()


def test_log_manager_topics_and_restart(tmp_path):
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    lm = LogManager(dirs, broker(log_segment_bytes=4000), clock=Clock())
    rep = lm.startup()
    assert rep.partitions_loaded == 0
    info = lm.create_topic("orders", 3, {"retention.ms": "1000"})
    assert info.config["retention.ms"] == 1000 and info.config["segment.bytes"] == 4000
    # spread over the dirs holding the fewest partitions
    counts = [len([p for p in os.listdir(d) if p.startswith("orders-")]) for d in dirs]
    assert sorted(counts) == [1, 2]
    with pytest.raises(TopicAlreadyExistsError):
        lm.create_topic("orders", 1)
    for bad in ("", ".", "..", "a/b", "x" * 250, "sp ace"):
        with pytest.raises(InvalidTopicError):
            lm.create_topic(bad, 1)
    with pytest.raises(InvalidConfigError):
        lm.create_topic("bad", 1, {"segment.bytes": "nope"})
    with pytest.raises(InvalidPartitionsError):
        lm.create_topic("zero", 0)
    lm.create_partitions("orders", 4)
    with pytest.raises(InvalidPartitionsError):
        lm.create_partitions("orders", 2)
    lm.alter_topic_config("orders", {"retention.ms": None, "cleanup.policy": "compact"})
    assert lm.topics["orders"].config["retention.ms"] == 604800000
    assert lm.get_log("orders", 3).config["cleanup.policy"] == ["compact"]
    lg = lm.get_log("orders", 1)
    for i in range(20):
        lg.append_as_leader(batch(1), 0)
    lm.create_topic("gone", 1)
    lm.delete_topic("gone")
    with pytest.raises(DataError):
        LogManager([dirs[0]], broker()).startup()  # locked
    lm.shutdown()
    lm.shutdown()  # idempotent
    for d in dirs:
        assert os.path.exists(os.path.join(d, ".kafka_cleanshutdown"))
        assert "version=1" in open(os.path.join(d, "meta.properties")).read()
    lm = LogManager(dirs, broker(log_segment_bytes=4000), clock=Clock())
    rep = lm.startup()
    assert rep.partitions_loaded == 4 and rep.partitions_recovered == 0 and rep.topics == 1
    assert not os.path.exists(os.path.join(dirs[0], ".kafka_cleanshutdown"))
    assert lm.topics["orders"].overrides == {"cleanup.policy": "compact"}
    assert lm.topics["orders"].topic_id == info.topic_id
    assert lm.get_log("orders", 1).log_end_offset == 20
    assert lm.get_log("gone", 0) is None
    lm.write_checkpoints()
    text = open(os.path.join(lm.get_log("orders", 1).dir.parent, "replication-offset-checkpoint")).read()
    assert "orders 1 20" in text
    # unclean stop (no shutdown): next start recovers
    for lk in lm._locks:
        lk.release()
    lm2 = LogManager(dirs, broker(log_segment_bytes=4000), clock=Clock())
    rep = lm2.startup()
    assert rep.partitions_recovered == 4
    assert lm2.get_log("orders", 1).log_end_offset == 20
    lm2.shutdown()


def test_log_manager_periodic(tmp_path):
    clock = Clock()
    lm = LogManager([str(tmp_path / "a")], broker(log_flush_interval_ms=100), clock=clock)
    lm.startup()
    lm.create_topic("t", 1, {"segment.bytes": "600", "retention.ms": "1000", "file.delete.delay.ms": "500"})
    lg = lm.get_log("t", 0)
    for i in range(6):
        lg.append_as_leader(batch(1, size=150), 0)
    assert lg.unflushed_messages > 0
    clock.ms += 200
    assert lm.flush_dirty() == 1 and lg.unflushed_messages == 0
    clock.ms += 5000
    assert lm.run_retention() > 0
    assert lm.delete_expired_files(clock.ms + 500) > 0
    lm.shutdown()
