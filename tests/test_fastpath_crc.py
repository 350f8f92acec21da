"""The compiled CRC-32C against the crc32c package (the reference): the same checksum
for any bytes-like input and any running value (taken modulo 2**32, as the package
does), and the same refusals."""
from __future__ import annotations

import os

import crc32c as package
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.examples import examples
from support.native import native, needs_native
from pylog.core.records import crc

pytestmark = needs_native


@settings(max_examples=examples(400), deadline=None)
@given(st.binary(max_size=300), st.integers(-(1 << 70), 1 << 70), st.integers(0, 20))
def test_crc32c_agrees(data, value, skip):
    assert native.crc32c(data) == package.crc32c(data)
    assert native.crc32c(data, value) == package.crc32c(data, value)
    view = memoryview(bytearray(data))[skip:]
    assert native.crc32c(view) == package.crc32c(view)


@settings(max_examples=examples(60), deadline=None)
@given(st.integers(0, 3 * 8192 * 2 + 3 * 256 * 3 + 40), st.integers(0, 7), st.integers(0, (1 << 32) - 1),
       st.randoms(use_true_random=False))
def test_crc32c_agrees_across_the_three_lanes(size, skip, value, rnd):
    """Lengths around the three-lane blocks (3 x 8192 and 3 x 256 bytes), any alignment."""
    data = rnd.randbytes(size + skip)
    view = memoryview(data)[skip:]
    assert native.crc32c(view, value) == package.crc32c(view, value)
    for n in (3 * 8192 - 1, 3 * 8192, 3 * 8192 + 1, 3 * 256 - 1, 3 * 256, 3 * 256 + 9):
        assert native.crc32c(view[:n]) == package.crc32c(view[:n])


def test_large_buffers_and_the_chosen_implementation():
    data = os.urandom(1 << 20) + b"tail"
    assert native.crc32c(data) == package.crc32c(data)
    assert crc.crc32c is native.crc32c


@pytest.mark.parametrize("args", [("text",), (b"x", "1"), (b"x", 1.5), ()])
def test_crc32c_refuses_what_the_package_refuses(args):
    with pytest.raises((TypeError, ValueError, OverflowError)) as ref:
        package.crc32c(*args)
    with pytest.raises((TypeError, ValueError, OverflowError)):
        native.crc32c(*args)
    assert ref.type
