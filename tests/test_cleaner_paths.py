"""The cleaner's fast paths give the same answers as the plain ones: the
survivor-offset filter against key lookups, the dict form of the offset map
against the arrays, and the dict form stays within its memory budget."""
from __future__ import annotations

import random
import tracemalloc

from hypothesis import given, settings
from hypothesis import strategies as st

from support.examples import examples
from support.mutations import damage
from support.cleaner_support import NOW, append, kv_map, open_log, read_records, topic_config
from pylog.core.records import BatchBuilder
from pylog.core.records.batch import encode_record_py
from pylog.core.records.errors import CorruptRecordError
from pylog.core.records.header import parse_header
from pylog.storage.cleaner import Cleaner
from pylog.storage.compaction_rules import filter_batch, filter_batch_many, filter_batch_survivors, record_keys
from pylog.storage.compaction_rules import batch_records_data
from pylog.storage.offset_map import SLOT_BYTES, OffsetMap

record = st.tuples(st.sampled_from([None, b"a", b"b", b"c", b"k" * 20, b"x" * 200]),  # key (None: keyless)
                   st.booleans(),  # tombstone
                   st.integers(0, 3),  # offset gap before it
                   st.integers(-5, 300))  # timestamp delta


@settings(max_examples=examples(300), deadline=None)
@given(recs=st.lists(record, min_size=1, max_size=80), codec=st.sampled_from([0, 3, 4]),
       horizon=st.sampled_from([None, NOW - 1, NOW + 10]), retain_empty=st.booleans(),
       later=st.dictionaries(st.sampled_from([b"a", b"b", b"c", b"k" * 20, b"x" * 200]), st.booleans()),
       log_append=st.booleans(), retention=st.sampled_from([0, 1000]))
def test_survivors_path_equals_key_lookups(recs, codec, horizon, retain_empty, later, log_append, retention):
    b = BatchBuilder(codec=codec, base_offset=1000, delete_horizon=horizon, timestamp_type=1 if log_append else 0)
    off = 1000
    latest: dict = {}
    for key, tomb, gap, tsd in recs:
        off += gap
        b.append(NOW + tsd, key, None if tomb else b"value-%d" % off, offset=off)
        if key is not None:
            latest[key] = off
        off += 1
    raw = b.build()
    h = parse_header(raw, 0)
    # keys also written after this batch: their latest offset lies beyond it
    for key, yes in later.items():
        if yes and key in latest:
            latest[key] = off + 100
    survivors = sorted(latest.values())
    want = filter_batch(raw, h, lambda k: latest.get(k, -1), NOW, retention, retain_empty)
    got = filter_batch_survivors(raw, h, survivors, NOW, retention, retain_empty)
    many = filter_batch_many(raw, h, lambda ks: [latest.get(k, -1) for k in ks], NOW, retention, retain_empty)
    for r in (got, many):
        assert r[1:] == want[1:]
        assert (None if r.data is None else bytes(r.data)) == (None if want.data is None else bytes(want.data))
    # and both agree with a per-record reading of the rule
    kept = [(k, t) for k, t, *_ in recs]
    n_keep = 0
    o = 1000
    for key, tomb, gap, tsd in recs:
        o += gap
        if key is not None and latest[key] == o and not (tomb and NOW >= (horizon if horizon is not None
                                                                            else NOW + retention)):
            n_keep += 1
        o += 1
    assert want.kept == n_keep and want.removed == len(kept) - n_keep


def test_dict_and_array_forms_agree():
    rnd = random.Random(7)
    keys = [b"key-%d" % rnd.randrange(3000) for _ in range(20000)]
    offsets = list(range(5, 20005))
    small = OffsetMap(80_000)  # too small for the dict form of 3000 keys
    assert not small.fits(list(set(keys)), [1] * 3000)
    small.overflow()
    small.clear()  # -> the arrays
    big = OffsetMap(4 << 20)
    for m in (small, big):
        for i in range(0, len(keys), 100):
            m.put_many(keys[i:i + 100], offsets[i:i + 100])
    assert not small.uses_dict and big.uses_dict
    probe = list(set(keys)) + [b"absent-%d" % i for i in range(50)]
    assert small.get_many(probe) == big.get_many(probe) == [big.get(k) for k in probe]
    assert small.size == big.size == len(set(keys))
    assert big.sorted_offsets() == sorted(big.get_many(list(set(keys))))
    assert small.sorted_offsets() is None


def test_dict_form_stays_within_the_budget():
    budget = 3 << 20
    rnd = random.Random(3)
    tracemalloc.start()
    try:
        m = OffsetMap(budget)
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        off = 0
        while True:
            keys = [b"k%d" % rnd.randrange(10 ** 9) + b"-" * rnd.randrange(40) for _ in range(130)]
            offs = list(range(off, off + 130))
            off += 130
            if not m.fits(keys, offs):
                break
            m.put_many(keys, offs)
            del keys, offs
        survivors = m.sorted_offsets()
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()
    assert m.uses_dict and len(survivors) == m.size > 10_000
    # the bound holds with ~one batch of slack (the batch being inserted)
    assert peak <= budget + (64 << 10), (peak, budget)
    assert m.peak_bytes <= budget


def test_cleaning_that_outgrows_the_dict_switches_to_the_arrays(tmp_path):
    lg = open_log(tmp_path / "t-0", topic_config(segment_bytes=16 << 10))
    rnd = random.Random(5)
    for i in range(200):
        append(lg, [(b"key-%d" % rnd.randrange(1500), b"v%d" % i) for _ in range(20)], codec=3 if i % 3 else 0)
    original = read_records(lg)
    active = lg.segments[-1].base_offset
    m = OffsetMap(60 * 1024)  # the dict form holds a few hundred keys; the arrays 2,700
    res = Cleaner(m, fsync=False).clean(lg, None, now_ms=NOW, force=True)
    assert res.stats.passes >= 2 and not m.uses_dict
    got = read_records(lg)
    latest = {k: o for o, k, _ in original if o < active}
    assert [r for r in got if r[0] < active] == [r for r in original if r[0] < active and latest[r[1]] == r[0]]
    assert kv_map(got) == kv_map(original)
    # record_keys reads what the batch holds
    seg = lg.segments[0]
    p, h = next(iter(seg.batches()))
    raw = seg.read_batch_bytes(p, h.batch_length + 12)
    keys, offs = record_keys(batch_records_data(raw, h), h.base_offset)
    assert len(keys) == h.record_count and offs == sorted(offs) and offs[0] >= h.base_offset
    assert SLOT_BYTES == 20


@st.composite
def record_sections(draw):
    """(base offset, records section) of a batch, sometimes damaged."""
    keys = draw(st.lists(st.one_of(st.none(), st.sampled_from([b"a", b"b", b"k" * 20, b"x" * 200]),
                                   st.binary(min_size=1, max_size=30)), max_size=40))
    data = bytearray(b"".join(encode_record_py(i, 0, k, b"v" * (i % 7), ()) for i, k in enumerate(keys)))
    if draw(st.integers(0, 4)) == 0:
        damage(draw, data, draw(st.integers(1, 3)), ["flip", "cut", "insert", "delete", "set"], [0x00, 0x01, 0xFF],
               3, 4)
    return draw(st.integers(0, 5000)), bytes(data)


def put_by_keys(m, data, base):
    """The map pass as it was: record_keys, fits(), put_many."""
    keys, offsets = record_keys(data, base)
    pairs = [(k, o) for k, o in zip(keys, offsets) if k is not None]
    keys, offsets = [k for k, _ in pairs], [o for _, o in pairs]
    if not m.fits(keys, offsets):
        return None
    m.put_many(keys, offsets)
    return len(keys)


@settings(max_examples=examples(300), deadline=None)
@given(batches=st.lists(record_sections(), min_size=1, max_size=12),
       budget=st.sampled_from([400, 3000, 12_000, 1 << 20]))
def test_put_records_builds_the_map_put_many_builds(batches, budget):
    """put_records (keys straight from the records into the map) against record_keys +
    fits + put_many: same answers and errors, same map, same survivors, same accounting,
    in the dict form and the arrays; a damaged section changes neither map."""
    old, new = OffsetMap(budget), OffsetMap(budget)
    seen = set()
    for base, data in batches:
        got = []
        for m, put in ((old, put_by_keys), (new, lambda m, d, b: m.put_records(d, b))):
            try:
                got.append(put(m, data, base))
            except CorruptRecordError as e:
                got.append(str(e))
        assert got[0] == got[1]
        if got[0] is None:  # does not fit: as the cleaner does, the next pass starts afresh
            for m in (old, new):
                m.overflow()
                m.clear()
        elif isinstance(got[0], int):
            seen.update(k for k in record_keys(data, base)[0] if k is not None)
        probe = sorted(seen) + [b"absent"]
        assert old.get_many(probe) == new.get_many(probe)
        assert old.sorted_offsets() == new.sorted_offsets()
        assert (old.uses_dict, old.size, old.memory_bytes, old.peak_bytes, old.latest_offset, old.full) == \
            (new.uses_dict, new.size, new.memory_bytes, new.peak_bytes, new.latest_offset, new.full)
