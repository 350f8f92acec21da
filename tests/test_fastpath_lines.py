"""`pylog produce` text lines from the read block to the batch in C against the list path.

The compiled `frame_text` (the read block's lines framed where they lie: key and value
offsets, the lines without the key separator, the byte count), `encode_frame_run` (framed
records into a batch) and `frame_partitions` (murmur2 of the framed keys) against their
pure-Python references and against the list path they replace (read_blocks' lines,
parse_text, encode_run, murmur2_many): the same blocks, split at random points, odd and
damaged input included, give the same records, line numbers, errors, bytes and
partitions. The end-to-end test produces the same odd input with the extension and with
PYLOG_PURE_PYTHON=1 and compares what a consumer reads back and the two summaries."""
from __future__ import annotations

import io
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from support.broker_fixtures import module_broker
from support.cli import pylog as pylog_cli
from support.examples import examples
from support.native import drive_run, native, needs_native, printed_in_pure_python
from pylog.commands import produce, produce_input
from pylog.core.client import runs
from pylog.core.client.partitioner import murmur2_many_py

pytestmark = needs_native

# lines of separators, carriage returns, empty lines and bytes that are not UTF-8
piece = st.sampled_from([b"a", b"bc", b":", b"::", b"|", b"\r", b"\r\r", b"\n", b"\n", b"\xff", b"\x00", b" ",
                         b"key-1", b"x" * 300])
content = st.lists(piece, max_size=60).map(b"".join)
seps = st.sampled_from([None, b":", b"::", b"|", b"\r", b"bc", b"\n"])


def _slots(offsets):
    return memoryview(offsets).cast("q").tolist()


@settings(max_examples=examples(400), deadline=None)
@given(data=content, sep=seps, cr=st.booleans(), cut=st.integers(0, 10_000))
def test_frame_text_agrees_with_its_reference(data, sep, cr, cut):
    end = min(cut, len(data))
    got = native.frame_text(data, end, sep, cr)
    ref = produce_input.frame_text_py(data, end, sep, cr)
    assert (_slots(got[0]), *got[1:]) == (_slots(ref[0]), *ref[1:])


class _Chunks(io.RawIOBase):
    """A stream whose reads return the data in the given pieces (a pipe's arrivals)."""

    def __init__(self, data, cuts):
        self.pieces = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]

    def read1(self, n):
        return self.pieces.pop(0) if self.pieces else b""


class _ChunksInto(_Chunks):
    """The same read into the caller's buffer (BufferedReader's readinto1)."""

    def readinto1(self, buf):
        got = self.read1(len(buf))
        buf[:len(got)] = got
        return len(got)


def _blocks(data, cuts, sep, raw, frame_text, stream=_Chunks):
    """Per block: (first line, records as (line, key, value), errors, bytes, lines counted)."""
    out = []
    keep = produce_input._frame_text
    produce_input._frame_text = frame_text
    try:
        for first, lines, _ in produce_input.read_blocks(stream(data, cuts), raw=raw):
            block = produce_input.parse_text(first, lines, sep, None if sep is None else sep.decode("latin-1"))
            if isinstance(block.values, produce_input.LineFrame):
                nbytes = block.values.nbytes
                block = produce_input.unframe(block)
                assert nbytes == produce._block_bytes(block)
            nums = block.lines or [first + i for i in range(len(block.values))]
            keys = block.keys if block.keys is not None else [None] * len(block.values)
            count = lines.count if raw else len(lines)
            out.append((first, list(zip(nums, keys, block.values)), block.errors, produce._block_bytes(block), count))
    finally:
        produce_input._frame_text = keep
    return out


@settings(max_examples=examples(300), deadline=None)
@given(data=content, sep=seps, cuts=st.lists(st.integers(0, 400), max_size=6))
def test_framed_blocks_give_the_list_paths_records_lines_and_errors(data, sep, cuts):
    cuts = sorted(min(c, len(data)) for c in cuts)
    lists = _blocks(data, cuts, sep, False, None)
    for stream in (_Chunks, _ChunksInto):
        assert _blocks(data, cuts, sep, True, native.frame_text, stream) == lists
        assert _blocks(data, cuts, sep, True, produce_input.frame_text_py, stream) == lists


def drive(encode, count, limit, od, tsd):
    """The whole run into batches of `limit` bytes as ProducerBatch drives it: ([batches], error type)."""
    return drive_run(lambda buf, od, room, pos, stop: encode(buf, od, tsd, room, pos, stop), count, limit, od,
                     b"\x07" * min(od, 40))


@settings(max_examples=examples(300), deadline=None)
@given(data=content, sep=seps, order=st.sampled_from(["all", "reversed", "some"]),
       limit=st.sampled_from([1, 64, 300, 1000, 16384, 1 << 20]), od=st.sampled_from([0, 1, 200, 16380]),
       tsd=st.sampled_from([0, 1, 16384, -1, 1 << 40]), headers=st.sampled_from([b"\x00", b"\x02\x02h\x021"]))
def test_encode_frame_run_writes_what_encode_run_writes(data, sep, order, limit, od, tsd, headers):
    whole = data + b"\nk" + (sep or b"") + b"y" * 16380  # the last record too large for a run
    offsets = native.frame_text(whole, len(whole), sep, True)[0]
    count = len(offsets) // 32
    idx = None if order == "all" else list(range(count))[::-1] if order == "reversed" else list(range(0, count, 2))
    n = count if idx is None else len(idx)
    keys, values, kls = runs.frame_columns(whole, offsets, idx)
    vls = list(map(len, values))

    def lists(encode):
        return lambda buf, od, tsd, room, pos, stop: encode(buf, od, tsd, room, values, pos, stop, keys, headers,
                                                          vls, kls)

    def framed(encode, data=whole):
        return lambda buf, od, tsd, room, pos, stop: encode(buf, od, tsd, room, data, offsets, idx, pos, stop,
                                                          headers)
    compiled = drive(framed(native.encode_frame_run), n, limit, od, tsd)
    assert drive(framed(native.encode_frame_run, bytearray(whole)), n, limit, od, tsd) == compiled  # a read buffer
    assert compiled == drive(lists(native.encode_run), n, limit, od, tsd)
    reference = drive(framed(runs.encode_frame_run_py), n, limit, od, tsd)
    assert reference[1] is compiled[1]
    if compiled[1] is None:  # with an error, which call meets the record at fault depends on the guess
        assert reference == compiled


@settings(max_examples=examples(300), deadline=None)
@given(data=content, sep=seps, n=st.sampled_from([1, 2, 3, 7, 12, 1000]))
def test_frame_partitions_agree_with_murmur2_of_the_keys(data, sep, n):
    offsets = native.frame_text(data, len(data), sep, True)[0]
    got = native.frame_partitions(data, offsets, n)
    assert native.frame_partitions(bytearray(data), offsets, n) == got
    assert got == runs.frame_partitions_py(data, offsets, n)
    keys, values, _ = runs.frame_columns(data, offsets)
    assert got == ([-1] * len(values) if keys is None else [h % n for h in murmur2_many_py(keys)])
    if keys is None and values:
        for groups in (native.frame_groups, runs.frame_groups_py):
            with pytest.raises(ValueError, match="without a key"):
                groups(data, offsets, n)
    else:
        groups = native.frame_groups(data, offsets, n)
        assert groups == runs.frame_groups_py(data, offsets, n)
        assert groups == [[i for i, p in enumerate(got) if p == part] for part in range(n)]


@pytest.mark.parametrize("slot", [(0, 5, 0, 1), (-1, 1, 0, 1), (0, -2, 0, 1), (0, -1, 3, 2), (0, -1, 0, -1),
                                  (0, -1, -1, 1)])
def test_offsets_outside_the_data_are_a_value_error_and_write_nothing(slot):
    from array import array
    buf = bytearray(b"z")
    offsets = array("q", (0, -1, 0, 1, *slot)).tobytes()
    with pytest.raises(ValueError):
        native.encode_frame_run(buf, 0, 0, 1000, b"abcd", offsets, None, 0, 2, b"\x00")
    with pytest.raises(ValueError):
        native.frame_partitions(b"abcd", offsets, 3)
    assert buf == b"z"


def test_bad_arguments_are_errors():
    offsets = native.frame_text(b"a\nb", 3, None, True)[0]
    with pytest.raises(ValueError, match="index out of range"):
        native.encode_frame_run(bytearray(), 0, 0, 100, b"a\nb", offsets, [5], 0, 1, b"\x00")
    with pytest.raises(ValueError):
        native.encode_frame_run(bytearray(), 0, 0, 100, b"a\nb", offsets, None, 0, 3, b"\x00")
    with pytest.raises(TypeError):
        native.encode_frame_run(bytearray(), 0, 0, 100, b"a\nb", offsets[:-1], None, 0, 1, b"\x00")
    with pytest.raises(ValueError):
        native.frame_text(b"abc", 4, None, True)
    with pytest.raises(ValueError):
        native.frame_text(b"abc", 3, b"", True)
    with pytest.raises(ValueError):
        native.frame_partitions(b"a\nb", offsets, 0)


broker = module_broker("lines")

# empty lines, "\r\n" and lone "\r", lines without the separator, a separator at either end, bytes that are
# not UTF-8, a line too large for a run, and a last line without "\n"
ODD = (b"k1:v1\n\nk2:v2\r\nno separator\n:empty key\nempty value:\r\r\nk3:a:b\n\xffk:\xfev\nk4:%s\n" +
       b"".join(b"key-%d:value-%d\n" % (i, i) for i in range(300)) + b"\rk9:last\r")


@pytest.mark.parametrize("keyed", [True, False])
@pytest.mark.parametrize("big", [b"w", b"w" * 20000], ids=["runs", "one-too-large"])
def test_produce_gives_the_same_records_partitions_and_errors_as_pure_python(broker, tmp_path, keyed, big):
    src = tmp_path / "odd.in"
    src.write_bytes(ODD.replace(b"%s", big))
    got = {}
    for mode in ("compiled", "pure"):
        env = {**os.environ, "PYLOG_PURE_PYTHON": "1" if mode == "pure" else "0"}
        t = f"lines-{mode}-{keyed}-{len(big)}"
        assert pylog_cli("topics", "create", t, "-b", broker.bootstrap, "-p", 4).returncode == 0
        r = pylog_cli("produce", t, "-b", broker.bootstrap, "-i", src, "--json", "-H", "h=1",
                      *(["-K", ":"] if keyed else []), env=env)
        assert r.returncode == (1 if keyed else 0), r.stderr
        summary = json.loads(r.stdout)
        c = pylog_cli("consume", t, "-b", broker.bootstrap, "--from-beginning", "-e", "--json", env=env)
        assert c.returncode == 0, c.stderr
        recs = sorted((x["partition"], x["offset"], x.get("key"), x.get("value"), x["headers"])
                      for x in map(json.loads, c.stdout.splitlines()))
        del summary["elapsed_s"], summary["records_per_s"], summary["topic"]
        if not keyed:  # the sticky partition is a random pick: compare which records share one
            names = {p: i for i, p in enumerate(sorted({p for p, *_ in recs}))}
            recs = [(names[p], *rest) for p, *rest in recs]
            summary["partitions"] = len(summary["partitions"])
        got[mode] = (summary, recs)
    assert got["compiled"] == got["pure"]
    summary, recs = got["pure"]
    assert summary["records"] == len(recs) == (308 if keyed else 310)
    if keyed:
        assert [e["line"] for e in summary["failed"]] == [2, 4]
        assert len({p for p, *_ in recs}) > 1  # spread by key


def test_pure_python_forced_takes_the_list_path_and_the_references():
    code = ("from pylog.commands import produce_input as p; from pylog.core.client import runs;"
            "print(p.TEXT_FRAMED, runs.encode_frame_run is runs.encode_frame_run_py,"
            " runs.frame_partitions is runs.frame_partitions_py)")
    assert printed_in_pure_python(code) == ["False", "True", "True"]
