"""The compiled format renderer of `pylog consume` against its pure-Python reference:
for any format string and records, render_format writes the bytes that piped stdout
gets from Renderer.render (UTF-8, invalid bytes unchanged), or declines (None) exactly
when a record has headers and the format shows them."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.examples import examples
from support.native import native, needs_native
from pylog.commands.consume import format_pieces
from pylog.commands.consume_output import Renderer
from pylog.core.records.record_decode import Record

pytestmark = needs_native

TOKENS = ["%s", "%k", "%o", "%p", "%t", "%T", "%K", "%S", "%h", "\\n", "\\t", "\\r", "\\\\", "%%"]
literal = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=6)
fmt = st.lists(st.one_of(st.sampled_from(TOKENS), literal), min_size=1, max_size=10).map("".join)
data = st.one_of(st.none(), st.binary(max_size=20),
                 st.text(max_size=8).map(lambda t: t.encode("utf-8")))
header = st.tuples(st.text(max_size=4), st.one_of(st.none(), st.binary(max_size=4)))
record = st.builds(Record, st.integers(0, 2**63 - 1), st.integers(-2**63, 2**63 - 1), data, data,
                   st.one_of(st.just(()), st.lists(header, min_size=1, max_size=2).map(tuple)))


def piped(fmt_text: str) -> Renderer:
    from pylog.commands.consume import compile_format, json_line

    return Renderer(format_pieces(fmt_text), "string", "string", False,
                    compile_format(fmt_text, "string", "string", "surrogateescape", None),
                    json_line("string", "string"), errors="surrogateescape")


@settings(max_examples=examples(500), deadline=None)
@given(fmt, st.lists(record, max_size=12), st.text(max_size=6), st.integers(0, 10_000))
def test_render_format_writes_the_reference_bytes(fmt_text, records, topic, partition):
    r = piped(fmt_text)  # literal text starting with % or \ keeps the renderer per record: native agrees too
    want = r.render(topic, partition, records).encode("utf-8", "surrogateescape")
    got = native.render_format(r.native_pieces(topic, partition), records)
    shows_headers = "%h" in r.pieces and any(rec.headers for rec in records)
    if shows_headers:
        assert got is None
    else:
        assert got == want
    assert r.render_bytes(topic, partition, records) == want


@settings(max_examples=examples(100), deadline=None)
@given(st.lists(record, min_size=1, max_size=5))
def test_buffers_render_like_bytes(records):
    views = [rec._replace(key=None if rec.key is None else memoryview(rec.key),
                          value=None if rec.value is None else bytearray(rec.value)) for rec in records]
    pieces = [1, b" ", 0, b"|", 4, b"|", 5, b"\n"]
    assert native.render_format(pieces, views) == native.render_format(pieces, records)


def test_render_format_refuses_what_it_cannot_render():
    rec = Record(1, 2, b"k", b"v", ())
    for pieces, records, err in (([9], [rec], ValueError), (["%s"], [rec], TypeError),
                                 ([0], [(1, 2)], TypeError), ([0], [Record(1, 2, b"k", "text", ())], TypeError),
                                 ([2], [Record("x", 2, b"k", b"v", ())], TypeError)):
        with pytest.raises(err):
            native.render_format(pieces, records)


def test_a_format_longer_than_the_compiled_limit_renders_in_python():
    fmt_text = "%o:%k " * 40 + "\\n"
    r = piped(fmt_text)
    recs = [Record(7, 1, b"k\xff", b"v", ())]
    want = r.render("t", 0, recs).encode("utf-8", "surrogateescape")
    assert want.startswith(b"7:k\xff 7:k\xff ") and r.render_bytes("t", 0, recs) == want
    with pytest.raises(ValueError):
        native.render_format([2] * 65, recs)
