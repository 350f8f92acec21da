"""Every compiled function has a pure-Python twin of the same signature that answers the same:
`render_format` (consume_output.render_format_py), `render_records` (consume_output.render_records_py:
a batch's records section rendered with no record object), `json_key_values` and `json_block_key_values`
(produce_input.json_key_values_py, json_block_key_values_py), `index_batches`
(segment_indexes.index_batches, in tests/test_fastpath_segment_index.py) and `frame_text`
(produce_input.frame_text_py, in tests/test_fastpath_lines.py). The twins are checked against the
references they stand in for here (always), and against the compiled functions where the extension
is built: the same bytes, the same None, the same error type.
"""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.examples import examples
from support.native import native
from pylog.commands import produce_input
from pylog.commands.consume import compile_format, format_pieces, json_line
from pylog.commands.consume_output import Renderer, render_format_py, render_records_py
from pylog.core.records.record_decode import Record, decode_records_py
from pylog.core.records.record_encode import encode_record

TOKENS = ["%s", "%k", "%o", "%T", "%K", "%S", "%h", "\\n", "\\t", "%%", "%p", "%t"]
literal = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6)
fmt = st.lists(st.one_of(st.sampled_from(TOKENS), literal), min_size=1, max_size=10).map("".join)
data = st.one_of(st.none(), st.binary(max_size=20), st.text(max_size=8).map(lambda t: t.encode("utf-8")))
header = st.tuples(st.text(max_size=4), st.one_of(st.none(), st.binary(max_size=4)))
record = st.builds(Record, st.integers(0, 2**63 - 1), st.integers(-2**63, 2**63 - 1), data, data,
                   st.one_of(st.just(()), st.lists(header, min_size=1, max_size=2).map(tuple)))


def outcome(fn, *args):
    try:
        return fn(*args)
    except Exception as e:  # noqa: BLE001 - both sides must fail alike
        return type(e)


@settings(max_examples=examples(400), deadline=None)
@given(fmt, st.lists(record, max_size=10), st.text(max_size=6), st.integers(0, 10_000))
def test_render_format_twin_writes_the_reference_bytes(fmt_text, records, topic, partition):
    r = Renderer(format_pieces(fmt_text), "string", "string", False,
                 compile_format(fmt_text, "string", "string", "surrogateescape", None),
                 json_line("string", "string"), errors="surrogateescape")
    pieces = r.native_pieces(topic, partition)
    got = render_format_py(pieces, records)
    if "%h" in r.pieces and any(rec.headers for rec in records):
        assert got is None
    else:
        assert got == r.render(topic, partition, records).encode("utf-8", "surrogateescape")
    if native is not None:
        assert native.render_format(pieces, records) == got


@pytest.mark.parametrize("pieces, records", [
    ([9], [Record(1, 2, b"k", b"v", ())]), (["%s"], [Record(1, 2, b"k", b"v", ())]), ([0], [(1, 2)]),
    ([0], [Record(1, 2, b"k", "text", ())]), ([2], [Record("x", 2, b"k", b"v", ())]), ([2] * 65, []),
])
def test_render_format_twin_refuses_alike(pieces, records):
    got = outcome(render_format_py, pieces, records)
    assert isinstance(got, type) and issubclass(got, Exception)
    if native is not None:
        assert outcome(native.render_format, pieces, records) is got


@settings(max_examples=examples(400), deadline=None)
@given(fmt, st.lists(st.tuples(st.integers(0, 50), st.integers(-2**40, 2**40), data, data,
                               st.one_of(st.just(()), st.lists(header, min_size=1, max_size=1).map(tuple))),
                     max_size=8),
       st.integers(0, 2**40), st.integers(-2**40, 2**40), st.one_of(st.none(), st.integers(0, 2**40)),
       st.integers(0, 60), st.one_of(st.none(), st.integers(0, 200)), st.integers(0, 255))
def test_render_records_twin_writes_the_reference_bytes(fmt_text, recs, base, base_ts, lat, start, cut, flip):
    """The records section, whole or damaged (cut short, a byte changed): the twin answers what decoding
    then render_format answer, or None where decoding refuses or a record has headers."""
    r = Renderer(format_pieces(fmt_text), "string", "string", False,
                 compile_format(fmt_text, "string", "string", "surrogateescape", None),
                 json_line("string", "string"), errors="surrogateescape")
    pieces = r.native_pieces("t", 0)
    data = b"".join(encode_record(od, tsd, k, v, [(hk.encode("utf-8"), hv) for hk, hv in h])
                    for od, tsd, k, v, h in recs)
    if cut is not None and data:
        data = bytearray(data[:cut % (len(data) + 1)])
        if data:
            data[cut % len(data)] ^= flip
        data = bytes(data)
    got = render_records_py(pieces, data, base, base_ts, lat, base + start)
    try:
        decoded = decode_records_py(data, base, base_ts, lat)
    except Exception:  # noqa: BLE001 - refused data: the twin declines
        decoded = None
    if decoded is None or any(x.headers for x in decoded):
        assert got is None
    else:
        kept = [x for x in decoded if x.offset >= base + start]
        assert got == (render_format_py(pieces, kept), len(kept), len(decoded))
    if native is not None:
        assert native.render_records(pieces, data, base, base_ts, lat, base + start) == got
        assert native.render_records(pieces, memoryview(data), base, base_ts, lat, base + start) == got


plain = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7e).filter(lambda c: c not in '"\\'), max_size=10)
field_value = st.one_of(plain, st.none(), st.text(max_size=5), st.integers(-5, 5))
ws = st.sampled_from(["", " ", "\t", "\r", "\n"])


@st.composite
def json_lines(draw):
    fields = draw(st.lists(st.sampled_from(["key", "value", "partition"]), unique=True, max_size=3))
    pairs = [(f, draw(plain | st.none() if draw(st.booleans()) else field_value)) for f in fields]
    if pairs and draw(st.integers(0, 6)) == 0:
        pairs.append(pairs[0])  # a repeated field
    a, b = draw(ws), draw(ws)
    body = f",{b}".join(f"{json.dumps(k)}{a}:{b}{json.dumps(v, ensure_ascii=False)}" for k, v in pairs)
    line = (a + "{" + b + body + a + "}" + b).encode("utf-8")
    if draw(st.integers(0, 5)) == 0:  # damage
        i = draw(st.integers(0, len(line)))
        line = line[:i] + draw(st.sampled_from([b"", b",", b"}", b'"', b"\xff", b"x"])) + line[i + 1:]
    return line


@settings(max_examples=examples(600), deadline=None)
@given(st.lists(json_lines(), max_size=6))
def test_json_key_values_twin_answers_as_the_compiled_one_and_the_reference(lines):
    got = produce_input.json_key_values_py(lines)
    if got is not None:
        block = produce_input._json_fast(1, lines, [])
        assert block is not None and (got[0], got[1]) == (block.keys, block.values)
    if native is not None:
        assert native.json_key_values(lines) == got
    text = b"\n".join(lines)
    block = produce_input.json_block_key_values_py(text, len(text))
    assert block == (produce_input.json_key_values_py(text.split(b"\n")))
    if native is not None:
        assert native.json_block_key_values(text, len(text)) == block


def test_json_twins_refuse_alike():
    for fn, args in ((produce_input.json_key_values_py, ((b"{}",),)), (produce_input.json_key_values_py, ([1],)),
                     (produce_input.json_block_key_values_py, (b"{}", 3))):
        got = outcome(fn, *args)
        assert isinstance(got, type) and issubclass(got, Exception)
        if native is not None:
            assert outcome(getattr(native, fn.__name__[:-3]), *args) is got
