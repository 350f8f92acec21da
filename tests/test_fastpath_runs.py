"""The compiled run encoder against its pure-Python reference (pylog.core.client.runs):
the same records, batch limits, offset and timestamp deltas give the same batches byte
for byte, and the same errors. The reference may take fewer records per call (it looks
at a guessed number), so both are driven the way ProducerBatch.append_run drives them:
call again until the run is taken, a new batch when one is full."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.examples import examples
from support.native import drive_run, native, needs_native, printed_in_pure_python
from pylog.core.client import runs
from pylog.core.records.batch import decode_records, encode_headers

pytestmark = needs_native

item = st.one_of(st.none(), st.binary(max_size=40), st.binary(min_size=100, max_size=400),
                 st.just(b"x" * 9000))  # a key and a value of 9000 bytes are a record too large
header_lists = st.lists(st.tuples(st.text(max_size=4), st.one_of(st.none(), st.binary(max_size=6))), max_size=3)


def drive(encode, values, keys, headers, limit, od, tsd, prefill):
    """Encode the whole run into batches of `limit` bytes: ([bytes of each batch], error type)."""
    vals = [b"" if v is None else v for v in values]
    vls = [-1 if v is None else len(v) for v in values]
    ks = None if keys is None else [b"" if k is None else k for k in keys]
    kls = None if keys is None else [-1 if k is None else len(k) for k in keys]
    return drive_run(lambda buf, od, room, pos, stop: encode(buf, od, tsd, room, vals, pos, stop, ks, headers, vls, kls),
                     len(vals), limit, od, prefill)


@settings(max_examples=examples(300), deadline=None)
@given(values=st.lists(item, min_size=1, max_size=60), keyed=st.booleans(), data=st.data(),
       mode=st.sampled_from(["none", "shared", "each"]), limit=st.sampled_from([1, 64, 300, 1000, 16384, 1 << 20]),
       od=st.sampled_from([0, 0, 1, 200, 16380]), tsd=st.sampled_from([0, 1, 300, 16383, 16384, -1, -70000, 1 << 40]))
def test_encode_run_agrees(values, keyed, data, mode, limit, od, tsd):
    keys = data.draw(st.lists(item, min_size=len(values), max_size=len(values))) if keyed else None
    if mode == "none":
        headers = b"\x00"
    elif mode == "shared":
        headers = encode_headers(data.draw(header_lists))
    else:
        headers = [encode_headers(h) for h in data.draw(st.lists(header_lists, min_size=len(values),
                                                                  max_size=len(values)))]
    prefill = b"\x07" * min(od, 40)  # records already in the batch (their bytes do not matter here)
    compiled, c_error = drive(native.encode_run, values, keys, headers, limit, od, tsd, prefill)
    reference, py_error = drive(runs.encode_run_py, values, keys, headers, limit, od, tsd, prefill)
    assert c_error is py_error
    if py_error is None:  # with an error, which call meets the record at fault depends on the guess
        assert compiled == reference, "the batches differ"


def test_a_run_decodes_to_its_records():
    values = [b"v%d" % i for i in range(500)] + [None]
    keys = [None] + [b"k%d" % i for i in range(500)]
    hdrs = encode_headers([("h", b"1")])
    buf = bytearray()
    took, full = native.encode_run(buf, 0, 7, 1 << 20, [v or b"" for v in values], 0, 501,
                                   [k or b"" for k in keys], hdrs, [len(v) if v else -1 for v in values],
                                   [len(k) if k else -1 for k in keys])
    assert (took, full) == (501, False)
    recs = decode_records(bytes(buf), 0, 1000)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in recs] == \
        [(i, 1007, keys[i], values[i]) for i in range(501)]
    assert all(list(r.headers) == [("h", b"1")] for r in recs)


def test_the_compiled_encoder_takes_every_record_that_fits_in_one_call():
    vals = [b"x" * 10] * 100  # 17 bytes a record: length, attributes, two deltas, null key, value, headers
    buf = bytearray()
    assert native.encode_run(buf, 0, 0, 17 * 40 + 3, vals, 0, 100, None, b"\x00", None, None) == (40, True)
    assert len(buf) == 17 * 40


@pytest.mark.parametrize("encode", [runs.encode_run_py, getattr(native, "encode_run", None)], ids=["python", "c"])
def test_both_refuse_a_record_too_large_and_a_value_not_bytes(encode):
    buf = bytearray()
    with pytest.raises(ValueError):
        encode(buf, 0, 0, 1 << 20, [b"a", b"x" * 16380], 0, 2, None, b"\x00", None, None)
    assert buf == b""  # nothing written
    with pytest.raises(TypeError):
        encode(buf, 0, 0, 1 << 20, [b"a", "text"], 0, 2, None, b"\x00", None, None)
    assert buf == b""


def test_the_compiled_encoder_refuses_lengths_that_do_not_match_the_values():
    with pytest.raises(ValueError, match="value length"):
        native.encode_run(bytearray(), 0, 0, 100, [b"abc"], 0, 1, None, b"\x00", [5], None)
    with pytest.raises(ValueError, match="key length"):
        native.encode_run(bytearray(), 0, 0, 100, [b"abc"], 0, 1, [b"k"], b"\x00", None, [-1])


def test_pure_python_forced_takes_the_references():
    code = ("import crc32c; from pylog.core.client import runs; from pylog.core.records import crc;"
            "from pylog.commands import produce_input as p;"
            "print(runs.encode_run is runs.encode_run_py, crc.crc32c is crc32c.crc32c, p._json_key_values is None)")
    assert printed_in_pure_python(code) == ["True", "True", "True"]


class _Bytes(bytes):
    pass


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.one_of(st.none(), st.binary(max_size=20), st.text(max_size=3), st.builds(bytearray),
                          st.builds(_Bytes, st.binary(max_size=3))), max_size=30))
def test_column_lengths_agree(items):
    assert native.column_lengths(items) == runs.column_lengths_py(items)
    assert native.column_lengths(tuple(items)) is None and runs.column_lengths_py(tuple(items)) is None
