"""Dirty-section selection, lag rules, the offset map's memory bound, the
background cleaner of the LogManager."""
from __future__ import annotations

import threading
import time
import tracemalloc

from support.cleaner_support import NOW, append, open_log, read_records, topic_config
from pylog.core.config import BROKER_CONFIGS
from pylog.storage.cleaner import Cleaner, read_cleaner_checkpoint
from pylog.storage.cleaner_manager import CleanerManager
from pylog.storage.compaction_rules import SegmentStat, cleanable_section, group_segments, should_clean
from pylog.storage.log_manager import LogManager
from pylog.storage.offset_map import SLOT_BYTES, OffsetMap
from support.waiting import wait_until

H = 3600_000


def segs(*specs):
    """(base, size, age_ms) per segment; the last one is active."""
    return [SegmentStat(b, s, NOW - age, NOW - age) for b, s, age in specs]


def test_dirty_ratio_from_checkpoint():
    s = segs((0, 100, 5 * H), (10, 100, 4 * H), (20, 300, 3 * H), (30, 50, 0))
    sec = cleanable_section(s, checkpoint=20, log_start_offset=0, now_ms=NOW)
    assert (sec.first_dirty, sec.first_uncleanable) == (20, 30)
    assert (sec.clean_bytes, sec.dirty_bytes) == (200, 300)
    assert sec.dirty_ratio == 0.6
    assert should_clean(sec, 0.6) and not should_clean(sec, 0.61)
    # no checkpoint, or one outside the log: from the log start
    for cp in (None, -5, 99):
        assert cleanable_section(s, checkpoint=cp, log_start_offset=0, now_ms=NOW).first_dirty == 0
    # the active segment is never cleanable
    sec = cleanable_section(s, checkpoint=30, log_start_offset=0, now_ms=NOW)
    assert sec.dirty_bytes == 0 and not should_clean(sec, 0.0)


def test_min_compaction_lag_stops_at_young_segments():
    s = segs((0, 100, 5 * H), (10, 100, 2 * H), (20, 100, 1 * H), (30, 50, 0))
    sec = cleanable_section(s, checkpoint=None, log_start_offset=0, now_ms=NOW, min_compaction_lag_ms=3 * H)
    assert sec.first_uncleanable == 10 and sec.dirty_bytes == 100
    sec = cleanable_section(s, checkpoint=None, log_start_offset=0, now_ms=NOW, min_compaction_lag_ms=10 * H)
    assert sec.first_uncleanable == 0 and not should_clean(sec, 0.0)
    # an open transaction bounds it too
    sec = cleanable_section(s, checkpoint=None, log_start_offset=0, now_ms=NOW, first_unstable_offset=15)
    assert sec.first_uncleanable == 15


def test_max_compaction_lag_forces_cleaning():
    s = segs((0, 900, 5 * H), (10, 100, 4 * H), (20, 50, 0))
    sec = cleanable_section(s, checkpoint=10, log_start_offset=0, now_ms=NOW)
    assert sec.dirty_ratio == 0.1 and not should_clean(sec, 0.5)
    sec = cleanable_section(s, checkpoint=10, log_start_offset=0, now_ms=NOW, max_compaction_lag_ms=H)
    assert sec.max_lag_delay_ms == 3 * H and should_clean(sec, 0.5)


def test_group_segments_by_size():
    sizes = [(0, 400, 10), (10, 400, 10), (20, 300, 10), (30, 900, 10), (40, 10, 10)]
    assert group_segments(sizes, 1000, 1000) == [[0, 1], [2], [3, 4]]
    assert group_segments(sizes, 1000, 15) == [[0], [1], [2], [3], [4]]


def test_offset_map_memory_bound_and_passes(tmp_path):
    m = OffsetMap(1000)
    assert m.slots == 1000 // SLOT_BYTES and m.memory_bytes <= 1000
    m.put_many([b"a", b"b", b"a"], [1, 2, 3])
    assert (m.get(b"a"), m.get(b"b"), m.get(b"zz"), m.size) == (3, 2, -1, 2)
    # a map of 10 slots cleans a 30-key log in several passes; it never overfills
    lg = open_log(tmp_path / "t-0", topic_config(segment_bytes=400))
    for i in range(60):
        append(lg, [(b"k%d" % ((i * 4 + j) % 30), b"v%d" % i) for j in range(4)])
    m = OffsetMap(10 * SLOT_BYTES)
    seen = []
    put = m.put_many

    def watched(keys, offsets):
        put(keys, offsets)
        seen.append(m.size)
    m.put_many = watched
    res = Cleaner(m, fsync=False).clean(lg, None, now_ms=NOW, force=True)
    assert res.stats.passes > 3 and max(seen) <= m.max_entries < m.slots
    assert res.checkpoint == lg.segments[-1].base_offset
    got = read_records(lg)
    keys = [k for off, k, _ in got if off < res.checkpoint]
    assert len(keys) == len(set(keys))


def test_cleaning_memory_is_the_buffer_plus_a_constant(tmp_path):
    lg = open_log(tmp_path / "t-0", topic_config(segment_bytes=64 << 10))
    for i in range(400):
        append(lg, [(b"key-%d" % ((i * 50 + j) % 2000), b"x" * 100) for j in range(50)], codec=3 if i % 2 else 0)
    budget = 1 << 20
    tracemalloc.start()
    try:
        m = OffsetMap(budget)
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        Cleaner(m, fsync=False).clean(lg, None, now_ms=NOW, force=True)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert m.memory_bytes <= budget
    assert peak < 8 << 20, peak  # read/write chunks of 1 MiB and one batch: no per-key growth


def test_log_manager_runs_the_cleaner_in_the_background(tmp_path):
    cfg = BROKER_CONFIGS.resolve({"log.dirs": str(tmp_path), "log.cleaner.backoff.ms": "50",
                                  "log.cleaner.dedupe.buffer.size": str(1 << 20)})
    lm = LogManager([str(tmp_path)], cfg)
    before = set(threading.enumerate())
    lm.startup()
    cleaner_threads = [t for t in threading.enumerate() if t not in before and t.name.startswith("pylog-cleaner-")]
    try:
        assert lm.cleaner is not None and lm.cleaner.running
        assert len(cleaner_threads) == cfg["log.cleaner.threads"] and all(t.is_alive() for t in cleaner_threads)
        lm.create_topic("c", 1, {"cleanup.policy": "compact", "segment.bytes": "2000",
                                 "min.cleanable.dirty.ratio": "0.1", "file.delete.delay.ms": "0"})
        lg = lm.get_log("c", 0)
        for i in range(50):
            append(lg, [(b"k%d" % (i % 5), b"v%d" % i)], ts=int(time.time() * 1000))
        lm.cleaner.wakeup()
        cp = wait_until(lambda: read_cleaner_checkpoint(tmp_path).get(("c", 0)), 60, "the cleaner checkpoint of c-0")
        assert cp == lg.segments[-1].base_offset > 0
        keys = [k for off, k, _ in read_records(lg) if off < cp]
        assert len(keys) == len(set(keys))
        # produce and fetch go on
        append(lg, [(b"k1", b"again")], ts=int(time.time() * 1000))
        assert lg.read(0, 1 << 20).length > 0
    finally:
        lm.shutdown()
    # shutdown joined the cleaner threads (no thread of the cleaner outlives the log manager)
    assert [t.name for t in cleaner_threads if t.is_alive()] == []


def test_manager_picks_the_dirtiest_log(tmp_path):
    a = open_log(tmp_path / "a-0", topic_config(segment_bytes=500))
    b = open_log(tmp_path / "b-0", topic_config(segment_bytes=500))
    for i in range(30):
        append(a, [(b"k%d" % (i % 3), b"v")])
        append(b, [(b"k%d" % i, b"v")])
    # b was cleaned up to its active segment already: only a is dirty
    from pylog.storage.cleaner import update_cleaner_checkpoint
    update_cleaner_checkpoint(tmp_path, "b", 0, b.segments[-1].base_offset)
    mgr = CleanerManager(lambda: [a, b], BROKER_CONFIGS.resolve({}))
    lg, section = mgr.grab_filthiest(NOW)
    assert lg is a and section.dirty_ratio == 1.0
    assert mgr.grab_filthiest(NOW) is None  # a is in progress, b is clean
