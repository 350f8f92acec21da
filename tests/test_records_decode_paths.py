"""The run-decoding fast path of `decode_records` (records of one layout decoded
together) must give exactly what the generic one-record-at-a-time decoder gives,
for valid batches and for damaged ones alike (same records, or the same error).

`decode_records` takes the fast path only for `bytes`; any other buffer type goes
through the generic decoder, so comparing the two inputs compares the two paths.
"""
from hypothesis import given, settings, strategies as st

from support.examples import examples

from pylog.core.records import BatchBuilder, RecordBatch
from pylog.core.records.batch import decode_records
from pylog.core.records.errors import CorruptRecordError

BASE_TS = 1_700_000_000_000


def outcome(data):
    try:
        return "ok", [tuple(r) for r in decode_records(data, 1000, BASE_TS)]
    except CorruptRecordError as e:
        return "err", str(e)


def both_paths(data: bytes):
    fast = outcome(bytes(data))
    generic = outcome(bytearray(data))
    assert fast == generic
    return fast


layouts = st.fixed_dictionaries({
    "count": st.sampled_from([1, 2, 5, 63, 64, 65, 200]),
    "vsize": st.sampled_from([0, 1, 10, 70, 100, 1000]),
    "ksize": st.sampled_from([None, 0, 5, 12, 200]),
    "mixed": st.floats(0, 1),
    "seed": st.integers(0, 2**32 - 1),
})


def build_records(spec) -> bytes:
    import random

    rnd = random.Random(spec["seed"])
    b = BatchBuilder()
    off = 0
    for i in range(spec["count"]):
        if spec["mixed"] < 0.2:
            value = rnd.randbytes(rnd.randint(0, 30))
        elif spec["mixed"] < 0.3 and rnd.random() < 0.5:
            value = None
        else:
            value = bytes([i & 255]) * spec["vsize"]
        key = None if spec["ksize"] is None else b"k" * spec["ksize"]
        headers = [("h", b"x")] if spec["mixed"] > 0.95 and rnd.random() < 0.3 else ()
        tsd = rnd.choice([0, 1, 5, 100, -3, 20000, 10**7]) if rnd.random() < 0.3 else 0
        if rnd.random() < 0.05:
            off += rnd.randint(1, 100)  # compacted logs have gaps
        b.append(BASE_TS + tsd, key, value, headers, offset=off)
        off += 1
    return bytes(RecordBatch(b.build()).records_data())


@settings(max_examples=examples(150), deadline=None)
@given(layouts)
def test_fast_and_generic_paths_agree_on_valid_batches(spec):
    kind, records = both_paths(build_records(spec))
    assert kind == "ok" and len(records) == spec["count"]


@settings(max_examples=examples(150), deadline=None)
@given(layouts, st.lists(st.tuples(st.integers(0, 2**31), st.integers(0, 255)), min_size=1, max_size=3),
       st.one_of(st.none(), st.integers(0, 2**31)))
def test_fast_and_generic_paths_agree_on_damaged_batches(spec, flips, cut):
    data = bytearray(build_records(spec))
    for where, value in flips:
        data[where % len(data)] = value
    if cut is not None:
        data = data[: cut % len(data)]
    both_paths(bytes(data))
