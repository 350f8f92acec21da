"""The compiled produce-input splitting against its pure-Python reference: the same
lines and separators give the same keys, values and bad-line indexes."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.examples import examples
from support.native import native, needs_native
from pylog.commands import produce_input

pytestmark = needs_native

line = st.binary(max_size=30).map(lambda b: b.replace(b"\n", b""))


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(line, max_size=40), st.sampled_from([b":", b"\t", b"::", b"=>", b"\xff", b"ab"]))
def test_split_key_value_agrees(lines, sep):
    assert native.split_key_value(lines, sep) == produce_input.split_key_value_py(lines, sep)


def test_split_key_value_refuses_what_the_reference_refuses():
    for args in (([b"a:b"], b""), ([b"a:b", "c:d"], b":"), ([b"a"], ":")):
        with pytest.raises((TypeError, ValueError)) as py:
            produce_input.split_key_value_py(*args)
        with pytest.raises(py.type):
            native.split_key_value(*args)


def test_parse_text_reports_lines_without_the_separator():
    block = produce_input.parse_text(10, [b"k:v", b"novalue", b"k2:v2"], b":", ":")
    assert block.keys == [b"k", b"k2"] and block.values == [b"v", b"v2"]
    assert block.lines == [10, 12]
    assert block.errors == [(11, "no key separator ':' found")]
