"""Storage paths the main log tests leave out: the per-record CreateTime window, flush.messages,
create_topic with a given topic id, retention.ms and retention.bytes together, and the log start
offset checkpoint across restarts."""
from __future__ import annotations

import uuid

import pytest

from support.log_clock import NOW, Clock, broker, cfg  # the log tests' clock and config helpers

from pylog.core.errors import InvalidTimestampError, OffsetOutOfRangeError
from pylog.core.records.batch import BatchBuilder
from pylog.storage import Log, LogManager
from pylog.storage.checkpoint import read_offset_checkpoint
from pylog.storage.partition_metadata import read_partition_metadata


def batch_of(timestamps, codec=0, size=20):
    """One batch whose records carry these timestamps in this order (deltas may be negative)."""
    b = BatchBuilder(codec=codec)
    for i, ts in enumerate(timestamps):
        b.append(ts, f"k{i}".encode(), b"v" * size)
    return bytearray(b.build())


def make_log(tmp_path, clock=None, **kw):
    return Log(tmp_path / "t-0", cfg(**kw), clock=clock or Clock(), fsync=False)


# ---------------------------------------------------------------- CreateTime window, per record
@pytest.mark.parametrize("codec", [0, 3])
def test_record_older_than_the_window_behind_an_in_range_first_record(tmp_path, codec):
    lg = make_log(tmp_path, message_timestamp_before_max_ms=1000)
    # base timestamp and max timestamp are both in range; the second record (negative delta) is not
    bad = batch_of([NOW, NOW - 5000], codec=codec)
    with pytest.raises(InvalidTimestampError, match=str(NOW - 5000)):
        lg.append_as_leader(bad, 0)
    assert lg.log_end_offset == 0
    info = lg.append_as_leader(batch_of([NOW - 100, NOW - 900, NOW - 500], codec=codec), 0)
    assert (info.first_offset, info.last_offset) == (0, 2)


def test_negative_deltas_accepted_when_the_window_has_no_lower_bound(tmp_path):
    lg = make_log(tmp_path)  # before.max.ms unbounded by default: the records are never decoded
    assert lg.append_as_leader(batch_of([NOW, NOW - 10 ** 9]), 0).record_count == 2


def test_upper_bound_decided_by_max_timestamp(tmp_path):
    lg = make_log(tmp_path, message_timestamp_after_max_ms=1000)
    with pytest.raises(InvalidTimestampError):
        lg.append_as_leader(batch_of([NOW, NOW + 1001, NOW]), 0)
    lg.append_as_leader(batch_of([NOW, NOW + 1000, NOW - 7]), 0)
    assert lg.log_end_offset == 3


def test_records_without_timestamp_are_exempt(tmp_path):
    # Kafka's validator skips records whose timestamp is -1 (NO_TIMESTAMP)
    lg = make_log(tmp_path, message_timestamp_before_max_ms=1000)
    assert lg.append_as_leader(batch_of([-1]), 0).record_count == 1
    assert lg.append_as_leader(batch_of([-1, -1]), 0).record_count == 2


def test_single_record_and_log_append_time_topics(tmp_path):
    lg = make_log(tmp_path, message_timestamp_before_max_ms=1000)
    with pytest.raises(InvalidTimestampError):
        lg.append_as_leader(batch_of([NOW - 1001]), 0)
    lg.append_as_leader(batch_of([NOW - 1000]), 0)
    lat = Log(tmp_path / "u-0", cfg(message_timestamp_type="LogAppendTime", message_timestamp_before_max_ms=1),
              clock=Clock(), fsync=False)
    assert lat.append_as_leader(batch_of([1, NOW * 2]), 0).max_timestamp == NOW  # the broker's time, unchecked


# ---------------------------------------------------------------- flush.messages
def test_flush_messages_moves_the_recovery_point(tmp_path):
    every = make_log(tmp_path, flush_messages=1)
    for i in range(3):
        every.append_as_leader(batch_of([NOW]), 0)
        assert every.recovery_point == every.log_end_offset == i + 1 and every.unflushed_messages == 0
    third = Log(tmp_path / "v-0", cfg(flush_messages=3), clock=Clock(), fsync=False)
    third.append_as_leader(batch_of([NOW]), 0)
    third.append_as_leader(batch_of([NOW]), 0)
    assert third.recovery_point == 0 and third.unflushed_messages == 2
    third.append_as_leader(batch_of([NOW]), 0)
    assert third.recovery_point == 3 and third.unflushed_messages == 0
    default = Log(tmp_path / "w-0", cfg(), clock=Clock(), fsync=False)
    default.append_as_leader(batch_of([NOW, NOW]), 0)
    assert default.recovery_point == 0 and default.unflushed_messages == 2


def test_flush_messages_recovery_point_reaches_the_checkpoint(tmp_path):
    d = tmp_path / "logs"
    lm = LogManager([str(d)], broker(), clock=Clock())
    lm.startup()
    lm.create_topic("fast", 1, {"flush.messages": "1"})
    lm.create_topic("lazy", 1)
    for t in ("fast", "lazy"):
        for _ in range(4):
            lm.get_log(t, 0).append_as_leader(batch_of([NOW]), 0)
    lm.write_checkpoints()
    points = read_offset_checkpoint(d / "recovery-point-offset-checkpoint")
    assert points == {("fast", 0): 4, ("lazy", 0): 0}
    lm.shutdown()


# ---------------------------------------------------------------- create_topic(topic_id=...)
def test_create_topic_with_given_topic_id_survives_restart(tmp_path):
    d = tmp_path / "logs"
    tid = uuid.UUID("71a59a51-8968-4f8b-937e-4830c71ec79a")
    lm = LogManager([str(d)], broker(), clock=Clock())
    lm.startup()
    info = lm.create_topic("pear", 2, topic_id=tid)
    assert info.topic_id == tid and lm.get_log("pear", 1).topic_id == tid
    for part in (0, 1):
        assert read_partition_metadata(d / f"pear-{part}") == tid
        assert (d / f"pear-{part}" / "partition.metadata").read_text() == \
            "version: 0\ntopic_id: caWaUYloT4uTfkgwxx7Hmg\n"
    lm.shutdown()
    lm = LogManager([str(d)], broker(), clock=Clock())
    lm.startup()
    assert lm.topics["pear"].topic_id == tid and lm.get_log("pear", 0).topic_id == tid
    lm.shutdown()


# ---------------------------------------------------------------- retention.ms + retention.bytes
def _retention_log(tmp_path, name, **kw):
    clock = Clock()
    lg = Log(tmp_path / f"{name}-0", cfg(segment_bytes=600, file_delete_delay_ms=0, **kw), clock=clock, fsync=False)
    for i in range(12):
        lg.append_as_leader(batch_of([NOW + i * 1000], size=150), 0, now_ms=NOW + i * 1000)
    clock.ms = NOW + 12_000
    return lg


def test_retention_time_and_size_together(tmp_path):
    by_time = _retention_log(tmp_path, "time", retention_ms=8000)
    by_time.run_retention()
    both = _retention_log(tmp_path, "both", retention_ms=8000, retention_bytes=700)
    total = both.size_bytes
    deleted = both.run_retention()
    # time alone keeps segments whose newest record is at most 8 s old
    assert all(NOW + 12_000 - s.largest_timestamp <= 8000 for s in by_time.segments)
    assert both.segments[0].base_offset > by_time.segments[0].base_offset  # size removed more
    assert deleted >= 2 and both.size_bytes < total
    # size retention stops as soon as deleting the next segment would go below retention.bytes
    assert both.size_bytes - both.segments[0].size < 700 or len(both.segments) == 1
    assert both.log_start_offset == both.segments[0].base_offset
    with pytest.raises(OffsetOutOfRangeError):
        both.read(both.log_start_offset - 1, 1000)


# ---------------------------------------------------------------- log start offset checkpoint
@pytest.mark.parametrize("clean", [True, False])
def test_log_start_offset_checkpoint_round_trip(tmp_path, clean):
    d = tmp_path / "logs"
    lm = LogManager([str(d)], broker(), clock=Clock())
    lm.startup()
    lm.create_topic("t", 1, {"segment.bytes": "600", "file.delete.delay.ms": "0"})
    lg = lm.get_log("t", 0)
    for _ in range(12):
        lg.append_as_leader(batch_of([NOW], size=150), 0)
    assert lg.delete_records(7) == 7
    assert lg.segments[0].base_offset < 7  # the start lies inside a segment: only the checkpoint knows it
    if clean:
        lm.shutdown()
    else:
        lm.write_checkpoints()
        for lk in lm._locks:  # a crash: no clean-shutdown marker, locks gone with the process
            lk.release()
    assert read_offset_checkpoint(d / "log-start-offset-checkpoint") == {("t", 0): 7}
    lm = LogManager([str(d)], broker(), clock=Clock())
    rep = lm.startup()
    assert rep.partitions_recovered == (0 if clean else 1)
    lg = lm.get_log("t", 0)
    assert lg.log_start_offset == 7 and lg.log_end_offset == 12
    with pytest.raises(OffsetOutOfRangeError):
        lg.read(6, 1000)
    assert lg.read(7, 1000).length > 0
    lm.shutdown()
    assert read_offset_checkpoint(d / "log-start-offset-checkpoint") == {("t", 0): 7}
