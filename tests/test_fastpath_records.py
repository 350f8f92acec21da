"""The compiled record codec against its pure-Python reference: the same inputs,
damaged ones included, must give the same bytes, the same records and the same
errors (class and message); so must the column decoder spark-export reads segments with.

The compiled extension is optional; where it was not built these tests skip
saying so, except in CI (CI=true), where its absence is a failure.
"""
from __future__ import annotations

import os

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from support.examples import examples
from support.mutations import damage
from support.native import ACTIVE, EXTENSIONS, FORCED_PURE as _FORCED, native, needs_native
from pylog.core import fastpath
from pylog.core.client import partitioner
from pylog.core.records import batch, framing, record_columns, varint
from pylog.core.records.errors import CorruptRecordError
from pylog.storage import compaction_rules

pytestmark = needs_native

SETTINGS = settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])


def outcome(fn, *args):
    """What a call did: ("ok", value) or ("error", class name, message)."""
    try:
        value = fn(*args)
    except Exception as e:  # noqa: BLE001 - the point is to compare whatever was raised
        return ("error", type(e).__name__, str(e), getattr(e, "index", None))
    if isinstance(value, list) and value and isinstance(value[0], tuple):
        return ("ok", [(type(v).__name__, tuple(v)) for v in value])
    return ("ok", type(value).__name__, value)


def same(py, c, *args):
    a, b = outcome(py, *args), outcome(c, *args)
    assert a == b
    return a


def test_extension_is_active_in_ci():
    """CI installs a compiler and headers: there every extension must have been built."""
    if os.environ.get("CI") and not _FORCED:
        assert len(ACTIVE) == len(EXTENSIONS), fastpath.implementation(list(EXTENSIONS))


# ------------------------------------------------------------------ varints

@SETTINGS
@given(st.binary(max_size=14), st.integers(0, 16))
@example(b"\xff" * 11, 0)
@example(b"\xff\xff\xff\xff\x7f", 0)
@example(b"\x80", 0)
def test_varint_decoders_agree(data, pos):
    same(varint.decode_varint_py, native.decode_varint, data, pos)
    same(varint.decode_varlong_py, native.decode_varlong, data, pos)
    same(varint.decode_varint_py, native.decode_varint, bytearray(data), pos)
    same(varint.decode_varlong_py, native.decode_varlong, memoryview(data), pos)


@SETTINGS
@given(st.integers(-(1 << 63), (1 << 63) - 1))
def test_varint_encoders_agree(value):
    assert native.encode_varint(value) == varint.encode_varint_py(value)
    assert native.decode_varlong(native.encode_varint(value)) == (value, len(native.encode_varint(value)))


# ------------------------------------------------------------------ records

header_key = st.text(max_size=6)
header_value = st.one_of(st.none(), st.binary(max_size=8))
record = st.tuples(
    st.integers(-(1 << 20), 1 << 20),  # timestamp delta
    st.one_of(st.none(), st.binary(max_size=40)),  # key
    st.one_of(st.none(), st.binary(max_size=300)),  # value
    st.lists(st.tuples(header_key, header_value), max_size=3),
)


def encode(records, gap=0):
    return b"".join(batch.encode_record_py(i * (gap + 1), tsd, k, v, h) for i, (tsd, k, v, h) in enumerate(records))


@st.composite
def damaged(draw, base):
    """A records section with a few bytes flipped, cut, inserted or deleted."""
    data = damage(draw, bytearray(base), draw(st.integers(0, 3)), ["flip", "cut", "insert", "delete", "set"],
                  [0x00, 0x01, 0x7F, 0x80, 0xFF, 0x03, 0x02], 3, 4)
    return bytes(data)


@st.composite
def sections(draw):
    """Records sections: mixed records, or runs of same-framed ones (the strided fast
    path of the Python decoder and walker), possibly damaged."""
    if draw(st.booleans()):
        recs = draw(st.lists(record, max_size=12))
    else:
        k = draw(st.binary(max_size=8)) if draw(st.booleans()) else None
        n = draw(st.integers(4, 300))
        vsize = draw(st.integers(0, 150))
        # one draw for every record's timestamp delta (0 for most, 0-3 for the rest): a draw per
        # record made generation most of the test's time
        tsds = draw(st.binary(min_size=n, max_size=n))
        recs = [(b & 3 if b & 4 else 0, k, bytes([i % 251]) * vsize, []) for i, b in enumerate(tsds)]
    gap = draw(st.sampled_from([0, 0, 0, 1, 200]))
    data = encode(recs, gap)
    if draw(st.booleans()):
        data = draw(damaged(data))
    return recs, gap, data


@SETTINGS
@given(sections(), st.integers(-(1 << 40), 1 << 40), st.integers(0, 1 << 42), st.booleans())
def test_decode_records_agree(sec, base_offset, base_ts, log_append):
    _, _, data = sec
    lat = base_ts + 7 if log_append else None
    same(batch.decode_records_py, native.decode_records, data, base_offset, base_ts, lat)
    same(batch.decode_records_py, native.decode_records, bytearray(data), base_offset, base_ts, None)


@SETTINGS
@given(sections(), st.integers(-2, 3), st.integers(-2, 3))
def test_check_records_agree(sec, count_shift, delta_shift):
    recs, gap, data = sec
    n = len(recs)
    count = n + (count_shift if count_shift in (-1, 1) else 0)
    last = (n - 1) * (gap + 1) + (delta_shift if delta_shift in (-1, 1) else 0)
    same(framing.check_records_py, native.check_records, data, count, last)


@SETTINGS
@given(sections(), st.integers(0, 1 << 40), st.booleans())
def test_scan_records_agree(sec, base_offset, with_keys):
    _, _, data = sec
    same(compaction_rules.scan_records, native.scan_records, data, base_offset, with_keys)


@SETTINGS
@given(sections(), st.integers(0, 1 << 40), st.booleans(),
       st.dictionaries(st.binary(max_size=2), st.integers(0, 9), max_size=3), st.booleans())
def test_map_keys_agree(sec, base_offset, fits, start, view):
    """The map pass's loop: the same fits() question, the same answer or error and the
    same dict (contents and order); a section that does not fit, or is damaged, leaves it as it was."""
    _, _, data = sec
    runs = []
    for fn, arg in ((compaction_rules.map_keys_py, data), (native.map_keys, memoryview(data) if view else data)):
        d = dict(start)
        asked = []
        got = outcome(fn, d, arg, base_offset, lambda *a: asked.append(a) or fits)
        runs.append((got, list(d.items()), asked))
    assert runs[0] == runs[1]
    got, items, _ = runs[0]
    if got[0] == "error" or not fits:
        assert items == list(start.items())


@SETTINGS
@given(sections(), st.lists(st.integers(0, 400), min_size=1, max_size=8))
def test_max_timestamp_delta_agrees(sec, extra):
    _, _, data = sec
    try:
        starts = compaction_rules.scan_records(data, 0, False)[0]
    except CorruptRecordError:
        starts = []  # damaged: arbitrary positions, the errors are compared
    same(compaction_rules.max_timestamp_delta, native.max_timestamp_delta, data, starts or extra)


@SETTINGS
@given(st.integers(0, 1 << 30), st.integers(-(1 << 62), 1 << 62), st.one_of(st.none(), st.binary(max_size=300)),
       st.one_of(st.none(), st.binary(max_size=20000)),
       st.lists(st.tuples(st.one_of(st.text(max_size=5), st.binary(max_size=5)),
                          st.one_of(st.none(), st.binary(max_size=5), st.text(max_size=5))), max_size=4))
def test_encode_record_agrees(od, tsd, key, value, headers):
    want = batch.encode_record_py(od, tsd, key, value, headers)
    assert native.encode_record(od, tsd, key, value, headers) == want
    assert native.encode_record(od, tsd, key, value, tuple(headers)) == want
    if not headers:
        assert native.encode_record(od, tsd, key, value) == want


@SETTINGS
@given(st.lists(record, min_size=1, max_size=20))
def test_roundtrip_through_both(recs):
    data = encode(recs)
    got = native.decode_records(data, 10, 1000)
    assert got == batch.decode_records_py(data, 10, 1000)
    assert [(r.key, r.value) for r in got] == [(k, v) for _, k, v, _ in recs]
    assert type(got[0]) is batch.Record


def test_bad_header_key_is_the_same_error():
    rec = batch.encode_record_py(0, 0, b"k", b"v", [(b"\xff\xfe", b"x")])
    a = outcome(batch.decode_records_py, rec, 0, 0)
    assert a[0] == "error" and "not UTF-8" in a[2]
    assert outcome(native.decode_records, rec, 0, 0) == a


# ------------------------------------------------------------------ records as Arrow columns (spark-export)

def run(fn, data, base_offset, base_ts, lat, start, end):
    cols = record_columns.Columns()
    res = outcome(fn, data, base_offset, base_ts, lat, start, end, cols.cols)
    return res, cols


@SETTINGS
@given(sections(), st.integers(0, 1 << 40), st.integers(0, 1 << 42), st.booleans(), st.integers(0, 40),
       st.integers(0, 400))
def test_decode_columns_agree(sec, base_offset, base_ts, log_append, lo, span):
    _, _, data = sec
    lat = base_ts + 7 if log_append else None
    args = (data, base_offset, base_ts, lat, base_offset + lo, base_offset + lo + span)
    a, ca = run(record_columns.decode_columns_py, *args)
    b, cb = run(native.decode_columns, *args)
    assert a == b
    if a[0] == "ok":
        assert ca.cols == cb.cols


@SETTINGS
@given(st.lists(record, min_size=1, max_size=30), st.integers(0, 30), st.integers(0, 30))
def test_arrays_hold_the_records(recs, lo, span):
    data = encode(recs)
    want = [r for r in batch.decode_records_py(data, 100, 5000) if 100 + lo <= r.offset < 100 + lo + span]
    cols = record_columns.Columns()
    assert cols.add(data, 100, 5000, None, 100 + lo, 100 + lo + span, 0, 3) == len(recs)
    a = cols.arrays()
    assert a["offset"].to_pylist() == [r.offset for r in want]
    assert a["timestamp"].to_pylist() == [r.timestamp * 1000 for r in want]
    assert a["key"].to_pylist() == [r.key for r in want]
    assert a["value"].to_pylist() == [r.value for r in want]
    assert a["leaderEpoch"].to_pylist() == [3] * len(want)
    assert a["headers"] == [(i, r.headers) for i, r in enumerate(want) if r.headers]


# ------------------------------------------------------------------ murmur2

@SETTINGS
@given(st.lists(st.binary(max_size=40), max_size=50))
def test_murmur2_many_agrees(keys):
    want = [partitioner.murmur2(k) & 0x7FFFFFFF for k in keys]
    assert native.murmur2_many(keys) == want
    assert partitioner.murmur2_many_py(keys) == want


def test_murmur2_matches_javas_values():
    # Kafka's Utils.murmur2 of these (Java's own test vectors, toPositive applied)
    assert native.murmur2_many([b"21", b"foobar", b"a-little-bit-long-string"]) == [
        -973932308 & 0x7FFFFFFF, -790332482 & 0x7FFFFFFF, -985981536 & 0x7FFFFFFF]


def test_dispatch_binds_the_compiled_functions():
    assert batch.decode_records is native.decode_records
    assert record_columns.decode_columns is native.decode_columns
    assert framing.check_records is native.check_records
    assert varint.decode_varint is native.decode_varint
    assert partitioner.murmur2_many is native.murmur2_many
    assert compaction_rules.map_keys is native.map_keys
