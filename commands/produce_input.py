"""`pylog produce` input: blocks of lines read and parsed into record columns.

Input is read in large blocks and split into lines, keys and values with
whole-list operations (bytes.split, map(bytes.partition), zip), and JSON lines
are decoded a block at a time by one json.loads call; a block with a bad line
is parsed again line by line so the report names each bad line exactly as a
line-at-a-time reader would.
"""
from __future__ import annotations

import base64
import json
import re
from itertools import chain, repeat
from operator import itemgetter

from pylog.commands import fastpath
from pylog.core.errors import DataError

BLOCK = 1 << 20
_first, _second, _third = itemgetter(0), itemgetter(1), itemgetter(2)
_FIELDS = {"key", "value", "headers", "partition", "timestamp"}
# what `pylog consume --json` adds: accepted and ignored, so its output is input here
_IGNORED = {"topic", "offset"}
_ACCEPTED = _FIELDS | _IGNORED
# between two lines of a JSON block: a marker element no JSON line can swallow unseen
_MARK = "\x1epylog"
_MARK_TEXT = b'"\\u001epylog"'
_MARK_SEP = b"," + _MARK_TEXT + b","


class Block:
    """One block's records as columns; `lines[i]` is record i's line number."""

    __slots__ = ("values", "keys", "headers", "partitions", "timestamps", "lines", "errors", "sizes")

    def __init__(self, values, keys=None, headers=None, partitions=None, timestamps=None, lines=None,
                 errors=None):
        self.values = values
        self.keys = keys
        self.headers = headers  # None, or per record a list of (key, value) pairs
        self.partitions = partitions
        self.timestamps = timestamps
        self.lines = lines  # None: record i is on line first + i
        self.errors = errors or []  # [(line number, message)]
        self.sizes = None  # (key + value bytes per record, their prefix sums), once asked for


class RawLines:
    """A block's lines where they lie in the data read: data[:end] split at "\\n", each line
    without a "\\r" before its "\\n" when `cr` (the lines read_blocks yields, made by `split`
    only when asked for). `count` is how many (counted when first asked, unless a framing
    that counted them said)."""

    __slots__ = ("data", "end", "cr", "_count")

    def __init__(self, data: bytes, end: int, cr: bool = True):
        self.data, self.end, self.cr = data, end, cr
        self._count = None

    @property
    def count(self) -> int:
        if self._count is None:
            self._count = self.data.count(b"\n", 0, self.end) + 1
        return self._count

    @count.setter
    def count(self, n: int) -> None:
        self._count = n

    def split(self) -> list:
        data = self.data if isinstance(self.data, bytes) else bytes(self.data)
        lines = (data[:self.end] if self.end < len(data) else data).split(b"\n")
        if self.cr and b"\r" in self.data:
            lines = list(map(bytes.rstrip, lines, repeat(b"\r", len(lines))))
        return lines


def read_blocks(stream, block_size: int = BLOCK, raw: bool = False):
    """Yield (first line number, lines, bytes consumed) per block of whole lines.

    Lines lose their "\\n" and any "\\r" before it; a last line without "\\n" is kept
    as it is. A pipe's block is what has arrived (read1), so records flow as typed.
    With `raw` the lines come as a RawLines, not split (its data a bytearray when the
    stream can read into one)."""
    rest = b""
    lineno = 1
    if raw:
        more = _reader(stream, block_size)
        while (data := more(rest)) is not None:
            cut = data.rfind(b"\n")
            rest = data[cut + 1:]
            if cut >= 0:
                lines = RawLines(data, cut)
                yield lineno, lines, cut + 1
                lineno += lines.count
        if rest:
            yield lineno, RawLines(rest, len(rest), cr=False), len(rest)
        return
    read = getattr(stream, "read1", stream.read)
    while True:
        chunk = read(block_size)
        if not chunk:
            if rest:
                yield lineno, [rest], len(rest)
            return
        data = rest + chunk if rest else chunk
        lines = data.split(b"\n")  # the piece after the last "\n" is the next block's start
        rest = lines.pop()
        if not lines:
            continue
        if b"\r" in data:
            lines = list(map(bytes.rstrip, lines, repeat(b"\r", len(lines))))
        yield lineno, lines, len(data) - len(rest)
        lineno += len(lines)


def _reader(stream, block_size: int):
    """more(rest) -> `rest` followed by what the next read (at most one system call) brought, or None
    at the end: read into one new bytearray where the stream can (one copy less than rest + chunk)."""
    readinto = getattr(stream, "readinto1", None)
    if readinto is None:
        read = getattr(stream, "read1", stream.read)

        def more(rest):
            chunk = read(block_size)
            return (rest + chunk if rest else chunk) if chunk else None
        return more

    def more(rest):
        keep = len(rest)
        data = bytearray(keep + block_size)
        data[:keep] = rest
        with memoryview(data) as view, view[keep:] as tail:
            got = readinto(tail)
        if not got:
            return None
        del data[keep + got:]
        return data
    return more


def split_key_value(lines: list, sep: bytes) -> tuple[list, list, list]:
    """(keys, values, bad): every line split at its first `sep`; the lines without one are
    left out of keys and values, and `bad` lists their indexes."""
    parts = list(map(bytes.partition, lines, repeat(sep, len(lines))))
    keys = list(map(_first, parts))
    values = list(map(_third, parts))
    seps = list(map(_second, parts))
    if b"" not in seps:
        return keys, values, []
    bad = [i for i, s in enumerate(seps) if not s]
    skip = set(bad)
    keep = [i for i in range(len(lines)) if i not in skip]
    return [keys[i] for i in keep], [values[i] for i in keep], bad


split_key_value_py = split_key_value
split_key_value = fastpath.choose("split_key_value", split_key_value_py)


class LineFrame:
    """A text block's records where they lie in the data read (`frame_text`): record i is four
    int64s of `offsets` (key start, key length or -1 for a null key, value start, value length);
    no bytes object per line, key or value. `nbytes`: key + value bytes of all; `longest`: the
    largest key + value of one record; `keyed`: split at a key separator."""

    __slots__ = ("data", "offsets", "count", "nbytes", "longest", "keyed")

    def __init__(self, data, offsets, nbytes, longest, keyed):
        self.data, self.offsets, self.nbytes, self.longest, self.keyed = data, offsets, nbytes, longest, keyed
        self.count = len(offsets) // 32

    def __len__(self):
        return self.count

    def sizes(self) -> list:
        """Key + value bytes of every record."""
        m = memoryview(self.offsets).cast("q")
        return [max(k, 0) + v for k, v in zip(m[1::4].tolist(), m[3::4].tolist())]


def frame_text_py(data: bytes, end: int, sep: bytes | None, cr: bool):
    """(offsets, nbytes, longest, bad) of the lines of data[:end] (without trailing "\r"s when
    `cr`): values only when `sep` is None, else each line split at its first `sep`; a line
    without one is no record and its index is in `bad`. The reference of the compiled one."""
    from array import array  # the reference's only: a compiled start-up does not load the module

    offsets, bad = array("q"), []
    nbytes, longest, pos = 0, -1, 0
    for i, line in enumerate(data[:end].split(b"\n")):
        start, pos = pos, pos + len(line) + 1
        if cr:
            line = line.rstrip(b"\r")
        key_len, value_at = -1, start
        if sep is not None:
            at = line.find(sep)
            if at < 0:
                bad.append(i)
                continue
            key_len, value_at = at, start + at + len(sep)
        value_len = start + len(line) - value_at
        offsets.extend((start, key_len, value_at, value_len))
        size = max(key_len, 0) + value_len
        nbytes += size
        longest = max(longest, size)
    return offsets.tobytes(), nbytes, longest, bad


# framed in place when compiled; pure Python runs the list path below (bytes.split, partition), faster
# there than its own twin of the framing
_frame_text = fastpath.choose("frame_text", frame_text_py)
TEXT_FRAMED = _frame_text is not frame_text_py


def parse_text(first: int, lines, sep: bytes | None, sep_text: str | None) -> Block:
    """Values, or KEY<sep>VALUE split at the first separator. `lines` is a list, or a RawLines:
    framed where the lines lie (a Block of one LineFrame) when compiled."""
    if isinstance(lines, RawLines):
        if _frame_text is None:
            return parse_text(first, lines.split(), sep, sep_text)
        offsets, nbytes, longest, bad = _frame_text(lines.data, lines.end, sep, lines.cr)
        frame = LineFrame(lines.data, offsets, nbytes, longest, sep is not None)
        lines.count = frame.count + len(bad)  # framing counted them
        if not bad:
            return Block(frame)
        return Block(frame, lines=_kept(first, lines.count, bad), errors=_no_separator(first, bad, sep_text))
    if sep is None:
        return Block(lines)
    keys, values, bad = split_key_value(lines, sep)
    if not bad:
        return Block(values, keys)
    return Block(values, keys, lines=_kept(first, len(lines), bad), errors=_no_separator(first, bad, sep_text))


def _no_separator(first: int, bad: list, sep_text) -> list:
    return [(first + i, f"no key separator {sep_text!r} found") for i in bad]


def _kept(first: int, count: int, bad: list) -> list:
    skip = set(bad)
    return [first + i for i in range(count) if i not in skip]


def unframe(block: Block) -> Block:
    """The same block with its LineFrame as key and value columns (the list path's form)."""
    from pylog.core.client.runs import frame_columns

    frame = block.values
    keys, values, _ = frame_columns(frame.data, frame.offsets)
    keys = (keys or []) if frame.keyed else None  # a split line's key is never null: None when no record
    return Block(values, keys, block.headers, block.partitions, block.timestamps, block.lines, block.errors)


def _to_bytes(v):
    if v is None:
        return None
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, dict) and set(v) == {"base64"}:
        return base64.b64decode(v["base64"])
    return json.dumps(v, separators=(",", ":")).encode("utf-8")


def _headers(h, lineno):
    if isinstance(h, dict):
        return [(str(k), _to_bytes(v)) for k, v in h.items()]
    if isinstance(h, list):
        try:
            return [(str(k), _to_bytes(v)) for k, v in h]
        except (TypeError, ValueError):
            raise DataError(f"line {lineno}: headers must be an object or a list of [key, value] pairs") from None
    raise DataError(f"line {lineno}: headers must be an object")


def parse_json_line(line: bytes, lineno: int):
    """(key, value, headers, partition, timestamp) of one JSON line; DataError naming it."""
    try:
        obj = json.loads(line)
    except ValueError as e:
        raise DataError(f"line {lineno}: malformed JSON: {e}") from None
    if not isinstance(obj, dict):
        raise DataError(f"line {lineno}: expected a JSON object with key/value/headers/partition/timestamp")
    unknown = set(obj) - _ACCEPTED
    if unknown:
        raise DataError(f"line {lineno}: unknown field(s) {', '.join(sorted(unknown))}")
    try:
        key = _to_bytes(obj.get("key"))
        value = _to_bytes(obj.get("value"))
    except (ValueError, TypeError) as e:  # {"base64": ...} that is not base64
        raise DataError(f"line {lineno}: invalid base64: {e}") from None
    headers = _headers(obj.get("headers") or {}, lineno)
    partition = obj.get("partition")
    if partition is not None and (not isinstance(partition, int) or partition < 0):
        raise DataError(f"line {lineno}: partition must be a non-negative integer")
    ts = obj.get("timestamp")
    if ts is not None and not isinstance(ts, int):
        raise DataError(f"line {lineno}: timestamp must be an integer (ms since the epoch)")
    return key, value, headers, partition, ts


def _column(objs, name):
    return list(map(dict.get, objs, repeat(name, len(objs))))


def _encode_column(col):
    """A key or value column: str encoded in one pass; other JSON values one by one."""
    types = set(map(type, col))
    if types == {str}:
        return list(map(str.encode, col))
    if types <= {str, type(None)}:
        return [None if v is None else v.encode() for v in col]
    return list(map(_to_bytes, col))


def _json_fast(first: int, lines: list, common_headers):
    """The block decoded at once, or None when any line needs a closer look."""
    if not lines or b"" in lines or any(map(bytes.isspace, lines)):
        return None
    doc = b"[" + _MARK_SEP.join(lines) + b"]"
    if doc.count(_MARK_TEXT) != len(lines) - 1:
        return None  # a line carries the marker itself
    try:
        res = json.loads(doc)
    except ValueError:
        return None
    n = len(lines)
    # every marker at the top level in its place: each line was exactly one JSON value
    if len(res) != 2 * n - 1 or res[1::2] != [_MARK] * (n - 1):
        return None
    objs = res[0::2]
    if set(map(type, objs)) != {dict} or not set(chain.from_iterable(objs)) <= _ACCEPTED:
        return None
    parts = _column(objs, "partition")
    if parts.count(None) != n:
        if not set(map(type, parts)) <= {int, type(None)} or min(p for p in parts if p is not None) < 0:
            return None
    else:
        parts = None
    stamps = _column(objs, "timestamp")
    if stamps.count(None) != n:
        if not set(map(type, stamps)) <= {int, type(None)}:
            return None
    else:
        stamps = None
    hcol = _column(objs, "headers")
    if not any(hcol):
        headers = [common_headers] * n if common_headers else None  # one list object: encoded once
    else:
        headers = []
        for i, h in enumerate(hcol):
            if not h:
                headers.append(common_headers)
                continue
            if not isinstance(h, (dict, list)):
                return None
            try:
                headers.append(common_headers + _headers(h, first + i))
            except DataError:
                return None
    try:
        values = _encode_column(_column(objs, "value"))
        keys = _column(objs, "key")
        keys = None if keys.count(None) == n else _encode_column(keys)
    except (ValueError, TypeError):  # bad base64: line by line, to name the line
        return None
    return Block(values, keys, headers, parts, stamps)


def parse_json_lines(first: int, lines: list) -> tuple[list, list]:
    """Line by line: ([(line number, key, value, headers, partition, timestamp)], [(line number, error)]),
    blank lines skipped; `first` is the number of lines[0]."""
    rows, errors = [], []
    for i, line in enumerate(lines):
        lineno = first + i
        if not line.strip():
            continue
        try:
            rows.append((lineno, *parse_json_line(line, lineno)))
        except DataError as e:
            errors.append((lineno, str(e).split(": ", 1)[1]))
    return rows, errors


_JS_WS = rb"[ \t\r\n]*"
_JS_FIELD = rb'"(key|value)"' + _JS_WS + rb":" + _JS_WS + rb'(?:"([\x20\x21\x23-\x5b\x5d-\x7e]*)"|null)'
_JS_COMMON = re.compile(_JS_WS + rb"\{" + _JS_WS + rb"(?:\}|" + _JS_FIELD + rb"(?:" + _JS_WS + rb"," + _JS_WS
                        + _JS_FIELD + rb")?" + _JS_WS + rb"\})" + _JS_WS)


def json_key_values_py(lines):
    """(keys, values) of lines that all have the common shape ({"key": "...", "value": "..."}, either
    missing or null, printable ASCII without escapes; keys None when no line has a key), else None.
    The reference of the compiled one (the same answers, property-tested)."""
    if type(lines) is not list:
        raise TypeError("json_key_values takes a list of bytes")
    if not lines:
        return None
    keys, values, with_key = [], [], 0
    for line in lines:
        if not isinstance(line, bytes):
            raise TypeError(f"a line must be bytes, not {type(line).__name__}")
        m = _JS_COMMON.fullmatch(line)
        if m is None:
            return None
        n1, s1, n2, s2 = m.groups()
        if n1 is not None and n1 == n2:
            return None  # a repeated field: json keeps the last, left to the general path
        fields = {n1: s1, n2: s2}
        keys.append(fields.get(b"key"))
        values.append(fields.get(b"value"))
        with_key += fields.get(b"key") is not None
    return (keys if with_key else None), values


def json_block_key_values_py(data, end: int):
    """json_key_values_py(data[:end].split(b"\n")): the twin of the compiled framing in place."""
    if not 0 <= end <= len(data):
        raise ValueError("json_block_key_values: end out of range")
    return json_key_values_py(bytes(data[:end]).split(b"\n"))


# the compiled framing of the common shape, of a list of lines or of a RawLines' data in place; pure
# Python decodes a block at a time instead (_json_fast), faster there than the twins above
_json_key_values = fastpath.choose("json_key_values", json_key_values_py)
_json_block_key_values = fastpath.choose("json_block_key_values", json_block_key_values_py)
if _json_key_values is json_key_values_py:
    _json_key_values = _json_block_key_values = None


def parse_json(first: int, lines, common_headers) -> Block:
    """JSON lines: {"key", "value", "headers", "partition", "timestamp"} per line (a list,
    or a RawLines); blank lines skipped."""
    if isinstance(lines, RawLines):
        if _json_block_key_values is not None:
            kv = _json_block_key_values(lines.data, lines.end)  # as _json_key_values(lines.split())
            if kv is not None:
                return Block(kv[1], kv[0], [common_headers] * lines.count if common_headers else None)
            if _json_key_values is not None:
                return _parse_json_objects(first, lines.split(), common_headers)
        lines = lines.split()
    if _json_key_values is not None:
        kv = _json_key_values(lines)  # None unless every line has the common shape
        if kv is not None:
            return Block(kv[1], kv[0], [common_headers] * len(lines) if common_headers else None)
    return _parse_json_objects(first, lines, common_headers)


def _parse_json_objects(first: int, lines: list, common_headers) -> Block:
    """Lines of any shape: decoded a block at a time, else line by line."""
    block = _json_fast(first, lines, common_headers)
    if block is not None:
        return block
    rows, errors = parse_json_lines(first, lines)
    nums, keys, values, headers, parts, stamps = (list(c) for c in zip(*rows)) if rows else ([] for _ in range(6))
    headers = [common_headers + h if h else common_headers for h in headers]
    return Block(values, keys if keys.count(None) != len(keys) else None,
                 headers if any(headers) else None,
                 parts if parts.count(None) != len(parts) else None,
                 stamps if stamps.count(None) != len(stamps) else None, nums, errors)
