"""The segment's index entries of an append in C (`index_batches`, one call per append) and its
pure-Python twin of the same signature (`segment_indexes.index_batches`) against
`SegmentIndexes._index_batches`, the checked loop both stand in for: the same sequences of appends
(one to four batches each, timestamps up and down, small index.interval.bytes, segment.bytes,
segment.ms and segment.index.bytes so that indexes fill and segments roll) leave byte-identical
`.log`, `.index` and `.timeindex` files and the same segment state, and an append the indexes
cannot take raises the same error with the same state after it (the C call hands such an append
to the Python loop before writing anything).

The compiled extension is optional; where it was not built the compiled side is left out, except in
CI (CI=true), where its absence is a failure.
"""
from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.examples import examples
from support.native import needs_native
from pylog.core.config import TOPIC_CONFIGS
from pylog.core.records.batch import build_batch
from pylog.core.records.header import iter_headers, patch_append_fields
from pylog.storage import Log, fastpath, segment_indexes
from pylog.storage.segment import LogSegment

SETTINGS = settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                            HealthCheck.function_scoped_fixture])
NOW = 1_700_000_000_000

one_batch = st.tuples(
    st.integers(1, 12),  # records
    st.integers(0, 300),  # value size
    st.sampled_from([0, 0, 1, 5, -3, 2_000, -1]),  # timestamp step (-1: no timestamp, NO_TIMESTAMP)
)
appends = st.lists(st.lists(one_batch, min_size=1, max_size=4), min_size=1, max_size=25)
configs = st.fixed_dictionaries({
    "index.interval.bytes": st.sampled_from([0, 1, 100, 700, 4096]),
    "segment.bytes": st.sampled_from([1 << 20, 4000, 9000]),
    "segment.ms": st.sampled_from([604_800_000, 3_000]),
    "segment.index.bytes": st.sampled_from([10 << 20, 24, 40]),
})


def payloads(plan):
    """Each append's buffer: its batches back to back, timestamps moving by the drawn steps."""
    ts, out = NOW, []
    for batches in plan:
        buf = bytearray()
        for n, size, step in batches:
            ts = ts + step if step >= 0 else ts
            stamp = -1 if step == -1 else ts
            buf += build_batch([(stamp, None, bytes([n]) * size) for _ in range(n)])
        out.append(buf)
    return out


def files(d):
    return {name: open(os.path.join(d, name), "rb").read() for name in sorted(os.listdir(d))
            if name.endswith((".log", ".index", ".timeindex"))}


def state(lg):
    return [(s.base_offset, s.size, s.next_offset, s.max_timestamp_so_far, s.offset_of_max_timestamp,
             s.bytes_since_last_index_entry, s.offset_index.entries, s.time_index.entries,
             s.offset_index.all_entries(), s.time_index.all_entries()) for s in lg.segments]


def run(d, cfg, bufs):
    """Append every buffer (as leader, or as the broker's own for every third), noting each outcome."""
    lg = Log(d, cfg, fsync=False, clock=lambda: NOW / 1000)
    outcomes = []
    for i, buf in enumerate(bufs):
        try:
            if i % 3 == 2:
                info = lg.append_internal(bytearray(buf), 1, now_ms=NOW + i)
            else:
                info = lg.append_as_leader(bytearray(buf), i // 4, now_ms=NOW + i)
            outcomes.append(tuple(info))
        except Exception as e:  # noqa: BLE001 - the two sides must fail alike
            outcomes.append((type(e).__name__, str(e).replace(d, "<dir>")))
        outcomes.append(state(lg))
    active = files(d)  # the active segment's indexes as they are, preallocated
    try:
        lg.close()
    except Exception as e:  # noqa: BLE001 - an index overfilled by an earlier append (on both sides)
        outcomes.append((type(e).__name__, str(e).replace(d, "<dir>")))
    return outcomes, active, files(d)


def checked_loop_only(*args):
    """An index loop that always hands over: the checked loop writes every entry."""
    return None


SIDES = [("python", segment_indexes.index_batches), ("checked", checked_loop_only)]
COMPILED = fastpath.native.index_batches if fastpath.native is not None else None


def sides():
    return ([("compiled", COMPILED)] if COMPILED is not None else []) + SIDES


def with_index_loop(fn, body):
    saved = segment_indexes._index_batches
    segment_indexes._index_batches = fn
    try:
        return body()
    finally:
        segment_indexes._index_batches = saved


@SETTINGS
@given(appends, configs)
def test_index_loops_leave_the_same_files(tmp_path_factory, plan, props):
    cfg = TOPIC_CONFIGS.resolve({k: str(v) for k, v in props.items()} | {"max.message.bytes": str(1 << 20)})
    bufs = payloads(plan)
    root = tmp_path_factory.mktemp("idx")
    results = [with_index_loop(fn, lambda: run(str(root / name / "t-0"), cfg, bufs)) for name, fn in sides()]
    for other in results[1:]:
        assert other == results[0]


@needs_native
def test_the_compiled_loop_is_in_use():
    assert segment_indexes._index_batches is COMPILED


@pytest.mark.parametrize("max_index", [8, 16, 24, 36])
def test_an_append_the_indexes_cannot_take_fails_alike(tmp_path, max_index):
    """Several entries due in one append with room for fewer: the same IndexFullError, state and files."""
    bufs = payloads([[(3, 50, 1)] * 6] * 3)
    out = []
    for side, fn in sides():
        saved = segment_indexes._index_batches
        segment_indexes._index_batches = fn
        try:
            (tmp_path / side).mkdir()
            seg = LogSegment(tmp_path / side, 0, index_interval_bytes=0, max_index_size=max_index)
            seen = []
            for buf in bufs:
                batches = list(iter_headers(buf, 0, len(buf)))
                patched, _ = patch_append_fields(buf, batches, seg.next_offset, 0)
                try:
                    seg.append(buf, patched, len(buf))
                    seen.append("ok")
                except Exception as e:  # noqa: BLE001
                    seen.append(type(e).__name__)
                seen.append((seg.size, seg.next_offset, seg.max_timestamp_so_far, seg.offset_of_max_timestamp,
                             seg.bytes_since_last_index_entry, seg.offset_index.all_entries(),
                             seg.time_index.all_entries()))
            seg.close()
            out.append((seen, files(tmp_path / side)))
        finally:
            segment_indexes._index_batches = saved
    for other in out[1:]:
        assert other == out[0]
    assert "IndexFullError" in out[0][0]
