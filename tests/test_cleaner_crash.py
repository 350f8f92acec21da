"""Crash at every step of the swap: recovery gives the old log or the new one."""
from __future__ import annotations

from pathlib import Path

import pytest

from support.cleaner_support import NOW, append, open_log, read_records, topic_config
from pylog.storage.checks import verify_partition
from pylog.storage.cleaner import SWAP_STEPS, Cleaner
from pylog.storage.offset_map import OffsetMap


class Crash(Exception):
    pass


def build(path: Path):
    lg = open_log(path, topic_config(segment_bytes=700))
    seq = 0
    for i in range(40):
        rows = [(b"k%d" % ((i * 3 + j) % 7), None if (i + j) % 11 == 0 else b"value-%d-%d" % (i, j)) for j in range(4)]
        append(lg, rows, codec=3 if i % 3 == 0 else 0, producer=(7, 0, seq))
        seq += 4
    return lg, seq


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref") / "t-0"
    lg, seq = build(d)
    old = read_records(lg)
    # segments are each near segment.bytes, so every group is one segment: the
    # crash hits the swap of the first one, [0, second segment's base)
    group_end = lg.segments[1].base_offset
    Cleaner(OffsetMap(1 << 16), fsync=False).clean(lg, None, now_ms=NOW, force=True)
    new = read_records(lg)
    assert len(lg.segments) >= 3 and new != old
    lg.close()
    mid = [r for r in new if r[0] < group_end] + [r for r in old if r[0] >= group_end]
    assert mid != old
    return old, mid


@pytest.mark.parametrize("step", SWAP_STEPS)
def test_crash_at_each_swap_step(tmp_path, reference, step):
    old, new = reference
    d = tmp_path / "t-0"
    lg, seq = build(d)

    def hook(name):
        if name == step:
            raise Crash(name)

    with pytest.raises(Crash):
        Cleaner(OffsetMap(1 << 16), fsync=False, hook=hook).clean(lg, None, now_ms=NOW, force=True)
    # the process "dies": its file handles are dropped, nothing is tidied
    for s in lg.segments:
        s.close_handlers()
    recovered = open_log(d, topic_config(segment_bytes=700), clean=False)
    got = read_records(recovered)
    committed = SWAP_STEPS.index(step) >= SWAP_STEPS.index("log-swapped")
    assert got == (new if committed else old)
    leftovers = [p.name for p in d.iterdir() if p.name.endswith((".cleaned", ".swap", ".swap.end"))]
    assert leftovers == []
    # a producer keeps its sequence across crash, recovery and cleaning
    append(recovered, [(b"k1", b"later")], producer=(7, 0, seq))
    # and the recovered log cleans to the same result as an uninterrupted cleaning
    Cleaner(OffsetMap(1 << 16), fsync=False).clean(recovered, None, now_ms=NOW, force=True)
    recovered.close()
    rep = verify_partition(d)
    assert rep.problems == [], rep.problems
