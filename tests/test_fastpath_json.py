"""The compiled framing of `pylog produce --format json` lines against the pure-Python
reference (produce_input._json_fast): whenever the compiled one answers, it gives the
keys and values the reference gives; it answers for every block of the common shape
({"key": "...", "value": "..."}, either missing or null, ASCII without escapes) and
leaves every other block (other fields, escapes, numbers, damage, blank lines) to the
reference by answering None."""
from __future__ import annotations

import json
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.examples import examples
from support.native import native, needs_native
from pylog.commands import produce_input

pytestmark = needs_native

plain = st.text(st.characters(min_codepoint=0x20, max_codepoint=0x7e).filter(lambda c: c not in '"\\'), max_size=12)
field_value = st.one_of(plain, st.none(), st.text(max_size=6), st.integers(-5, 5), st.just({"base64": "eA=="}))
ws = st.sampled_from(["", " ", "  ", "\t", "\r"])


@st.composite
def json_line(draw, common=False):
    names = ["key", "value"] if common else ["key", "value", "partition", "headers", "topic", "x"]
    fields = draw(st.lists(st.sampled_from(names), unique=True, max_size=3))
    values = plain | st.none() if common else field_value
    pairs = [(f, draw(values)) for f in fields]
    if not common and draw(st.booleans()) and pairs:
        pairs.append(pairs[0])  # a repeated field
    a, b, c = draw(ws), draw(ws), draw(ws)
    body = f",{b}".join(f"{json.dumps(k)}{a}:{b}{json.dumps(v, ensure_ascii=False)}" for k, v in pairs)
    line = (c + "{" + a + body + b + "}" + c).encode("utf-8")
    if not common and draw(st.integers(0, 5)) == 0:  # damage: cut or insert a byte
        i = draw(st.integers(0, len(line)))
        line = line[:i] + draw(st.sampled_from([b"", b",", b"}", b"\"", b"\xff", b"x"])) + line[i + 1:]
    return line


def reference(lines):
    return produce_input._json_fast(1, lines, [])


@settings(max_examples=examples(500), deadline=None)
@given(st.lists(json_line(), min_size=1, max_size=8))
def test_the_compiled_framing_agrees_where_it_answers(lines):
    got = native.json_key_values(lines)
    if got is None:
        return
    block = reference(lines)
    assert block is not None, "the compiled framing took a block the reference does not"
    assert (got[0], got[1]) == (block.keys, block.values)
    assert block.headers is None and block.partitions is None and block.timestamps is None


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(json_line(common=True), min_size=1, max_size=8))
def test_the_common_shape_is_always_framed_in_c(lines):
    got = native.json_key_values(lines)
    block = reference(lines)
    assert got is not None and block is not None
    assert (got[0], got[1]) == (block.keys, block.values)


def test_parse_json_uses_the_framing_and_keeps_common_headers():
    lines = [b'{"key":"k1","value":"v1"}', b'{"value":null}', b'{ "value" : "v3" , "key" : null }']
    block = produce_input.parse_json(5, lines, [("h", b"1")])
    assert block.keys == [b"k1", None, None] and block.values == [b"v1", None, b"v3"]
    assert block.headers == [[("h", b"1")]] * 3 and block.lines is None and not block.errors


@pytest.mark.parametrize("line", [b"", b"  ", b'{"key":"a\\"b"}', b'{"key":"\xc3\xa9"}', b'{"value":1}',
                                  b'{"key":"a","key":"b"}', b'{"key":"a"', b'{"key":"a"} x', b'{"key":"a",}',
                                  b'{"partition":0}', b'["key"]', b'{"value":nul}'])
def test_other_shapes_are_left_to_the_reference(line):
    assert native.json_key_values([b'{"key":"k"}', line]) is None


def test_a_line_not_bytes_is_a_type_error():
    with pytest.raises(TypeError):
        native.json_key_values([b'{"key":"k"}', '{"key":"k"}'])
    assert native.json_key_values([]) is None


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(json_line() | json_line(common=True), min_size=1, max_size=8), st.sampled_from([b"\n", b"\r\n"]),
       st.integers(0, 3))
def test_a_block_framed_in_place_is_its_lines_framed(lines, eol, extra):
    """json_block_key_values(data, end) is json_key_values of data[:end]'s lines, and
    parse_json of read_blocks' RawLines is parse_json of the lines read_blocks splits."""
    data = eol.join(lines) + eol + b'{"key":"next"}'[:extra]
    end = len(data) - extra - 1
    assert native.json_block_key_values(data, end) == native.json_key_values(data[:end].split(b"\n"))
    raw = produce_input.RawLines(data, end)
    got, want = produce_input.parse_json(3, raw, []), produce_input.parse_json(3, raw.split(), [])
    assert [getattr(got, f) for f in produce_input.Block.__slots__] == \
        [getattr(want, f) for f in produce_input.Block.__slots__]


def test_a_block_framed_in_place_checks_its_end():
    assert native.json_block_key_values(b'{"key":"k"}\n{"value":"v"}', 11) == ([b"k"], [None])
    assert native.json_block_key_values(b'{"key":"k"}\n', 0) is None  # one empty line
    with pytest.raises(ValueError):
        native.json_block_key_values(b"{}", 3)
