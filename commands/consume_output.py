"""`pylog consume` output: one poll's records rendered as one string, column by column.

A poll's records for a partition are transposed into columns (offsets, keys,
values...) with zip(*records); each format token becomes a column of strings
made by map() over the whole list (bytes.decode, str, json's string encoder),
and the columns are interleaved with one join. Output is the same text a
record-at-a-time renderer writes; tokens and decoders without a column form
(%h with headers present, hex/base64/json decoders) fall back to that renderer.

`render_bytes` is what piped stdout receives: the same text as UTF-8 with invalid
bytes unchanged. For a format string it runs the compiled `render_format` where
the extension is active, which copies keys and values straight from the records;
`render(...).encode(...)` is its reference.
"""
from __future__ import annotations

import json
from itertools import chain, repeat

from pylog.commands import fastpath
from pylog.core.client.fetch_records import decode_batch
from pylog.core.records.errors import RecordFormatError
from pylog.core.records.header import CODEC_MASK, CODEC_NONE, HEADER_SIZE, TIMESTAMP_TYPE_MASK
from pylog.core.records.record_decode import decode_records_py

_encode_str = json.encoder.encode_basestring  # what json.dumps(ensure_ascii=False) writes for a str
_ESCAPES = {"\\n": "\n", "\\t": "\t", "\\r": "\r", "\\\\": "\\", "%%": "%"}
_COLUMN_TOKENS = {"%s", "%k", "%o", "%p", "%t", "%T", "%K", "%S", "%h"}
_NATIVE_CODES = {"%s": 0, "%k": 1, "%o": 2, "%T": 3, "%K": 4, "%S": 5, "%h": 6}  # render_format's tokens
_NATIVE_MAX_PIECES = 64  # render_format's limit; longer formats render in Python


def _text(col, n, errors="replace"):
    """utf-8 text of a column of bytes (None: None), invalid bytes handled by `errors`."""
    if None in col:
        return [None if x is None else bytes(x).decode("utf-8", errors) for x in col]
    if set(map(type, col)) != {bytes}:
        col = list(map(bytes, col))
    return list(map(bytes.decode, col, repeat("utf-8", n), repeat(errors, n)))


def _lengths(col):
    if None in col:
        return [str(-1 if x is None else len(x)) for x in col]
    return list(map(str, map(len, col)))


def render_format_py(pieces, records):
    """The bytes of `records` ((offset, timestamp, key, value, headers) tuples) in a format cut into
    `pieces`: bytes (literal text, already encoded) or a token code (0 %s, 1 %k, 2 %o, 3 %T, 4 %K,
    5 %S, 6 %h); None when a record has headers and the format shows them (%h is rendered by
    Renderer.render). The reference of the compiled render_format (the same answers, property-tested)."""
    pieces = list(pieces)
    if len(pieces) > _NATIVE_MAX_PIECES:
        raise ValueError(f"render_format: more than {_NATIVE_MAX_PIECES} pieces")
    for p in pieces:
        if not isinstance(p, bytes) and not 0 <= p <= 6:
            raise ValueError(f"render_format: unknown token {p}")
    out = []
    put = out.append
    for r in records:
        if not isinstance(r, tuple) or len(r) < 5:
            raise TypeError("a record must be a tuple (offset, timestamp, key, value, headers)")
        for p in pieces:
            if isinstance(p, bytes):
                put(p)
            elif p <= 1:
                data = r[3 - p]
                if data is not None:
                    put(bytes(data))
            elif p <= 3:
                put(b"%d" % r[p - 2])
            elif p <= 5:
                data = r[p - 2]
                put(b"-1" if data is None else b"%d" % memoryview(data).nbytes)
            elif r[4]:
                return None
    return b"".join(out)


_render_format = fastpath.choose("render_format", render_format_py)


def render_records_py(pieces, data, base_offset, base_timestamp, log_append_time, from_offset):
    """(bytes, records rendered, records walked) for one batch's records section (decompressed) in a
    format cut into render_format's pieces, the records below `from_offset` left out; None when a
    record has headers or decode_records refuses the data (the caller decodes the batch then, which
    raises its error). The reference of the compiled render_records, which makes no record object."""
    render_format_py(pieces, ())  # the pieces are checked first, as the compiled twin does
    try:
        recs = decode_records_py(data, base_offset, base_timestamp, log_append_time)
    except RecordFormatError:
        return None
    if any(r.headers for r in recs):
        return None
    kept = [r for r in recs if r.offset >= from_offset]
    return render_format_py(pieces, kept), len(kept), len(recs)


_render_records = fastpath.choose("render_records", render_records_py)


class Renderer:
    """Renders {TopicPartition: [Record]} for a format string or as JSON lines."""

    def __init__(self, pieces, kdec, vdec, as_json, render_one, json_one, errors="replace", escape=None):
        self.pieces = pieces  # the format string cut into tokens and literal text
        self.as_json = as_json
        self.errors = errors  # how text output shows invalid UTF-8 (surrogateescape: bytes unchanged)
        self.escape = escape  # str -> str for a terminal, or None
        self.binary = False  # the caller writes render_bytes() to a byte stream
        self.leader_of = lambda topic, partition: -1
        self.render_one = render_one  # (topic, partition, record) -> str: the fallback
        self.json_one = json_one
        strings = kdec == "string" and vdec == "string"
        self.columns = strings and (as_json or all(p in _COLUMN_TOKENS or p in _ESCAPES or not p.startswith(("%", "\\"))
                                                   for p in pieces))
        piped = errors == "surrogateescape" and escape is None
        native = self.columns and piped and not as_json and len(pieces) <= _NATIVE_MAX_PIECES
        # compiled only: pure Python renders by columns (render()), faster there than the twin
        self._native = _render_format if native and _render_format is not render_format_py else None
        self._native_records = _render_records if self._native is not None else None
        self._codes: dict = {}  # (topic, partition) -> render_format's pieces

    @property
    def renders_batches(self) -> bool:
        """True when render_fetched() makes piped output from whole batches (compiled only)."""
        return self._native_records is not None and self.binary

    def native_pieces(self, topic, partition) -> list:
        """The format for render_format: token codes, and literal text (%t and %p included) as bytes."""
        out: list = []
        for p in self.pieces:
            if p in _NATIVE_CODES:
                out.append(_NATIVE_CODES[p])
                continue
            text = topic if p == "%t" else str(partition) if p == "%p" else _ESCAPES.get(p, p)
            data = text.encode("utf-8", "surrogateescape")
            if out and isinstance(out[-1], bytes):
                out[-1] += data
            else:
                out.append(data)
        return out

    def _pieces_for(self, topic, partition) -> list:
        codes = self._codes.get((topic, partition))
        if codes is None:
            codes = self._codes[(topic, partition)] = self.native_pieces(topic, partition)
        return codes

    def render_fetched(self, fetched) -> tuple[bytes, int]:
        """Consumer.poll_fetched()'s whole fetches as render_bytes() writes their records, and how
        many: each v2 batch straight from its bytes, any other (or one with headers, or one that
        does not decode) through its decoded records."""
        out, n = [], 0
        for tp, records, parts, position in fetched:
            if records:
                out.append(self.render_bytes(tp.topic, tp.partition, records))
                n += len(records)
            for part in parts:
                got = self._render_batch(tp.topic, tp.partition, part[0], position)
                if got is None:
                    recs = decode_batch(tp, part, position)
                    got = self.render_bytes(tp.topic, tp.partition, recs), len(recs)
                out.append(got[0])
                n += got[1]
        return b"".join(out), n

    def _render_batch(self, topic, partition, batch, from_offset):
        if batch.magic != 2:
            return None
        h = batch.header
        try:  # uncompressed: the records as they are in the fetched bytes, not a copy
            data = batch.raw[HEADER_SIZE:] if h.attributes & CODEC_MASK == CODEC_NONE else batch.records_data()
        except RecordFormatError:
            return None  # decoded again by the caller, which raises it as the consumer does
        got = self._native_records(self._pieces_for(topic, partition), data, h.base_offset, h.base_timestamp,
                                   h.max_timestamp if h.attributes & TIMESTAMP_TYPE_MASK else None, from_offset)
        return None if got is None or got[2] != h.record_count else got[:2]

    def render_bytes(self, topic, partition, records) -> bytes:
        """render()'s text as the bytes piped stdout gets: UTF-8, invalid bytes unchanged."""
        if self._native is not None and records:
            out = self._native(self._pieces_for(topic, partition), records)
            if out is not None:  # None: a record with headers for %h
                return out
        return self.render(topic, partition, records).encode("utf-8", "surrogateescape")

    def render(self, topic, partition, records) -> str:
        if not records:
            return ""
        if not self.columns:
            if self.as_json:
                return "".join([self.json_one(topic, partition, r) for r in records])
            return "".join([self.render_one(topic, partition, r) for r in records])
        offsets, stamps, keys, values, headers = zip(*records)
        n = len(records)
        noheaders = headers.count(()) == n
        if self.as_json:
            try:
                return self._json(topic, partition, n, offsets, stamps, keys, values, headers, noheaders)
            except UnicodeDecodeError:
                return "".join([self.json_one(topic, partition, r) for r in records])
        if ("%h" in self.pieces and not noheaders) or self.escape is not None:
            return "".join([self.render_one(topic, partition, r) for r in records])
        errors = self.errors
        cols = []
        for p in self.pieces:
            if p in _ESCAPES:
                cols.append(repeat(_ESCAPES[p], n))
            elif p == "%s":
                text = _text(values, n, errors)
                cols.append(["" if v is None else v for v in text] if None in values else text)
            elif p == "%k":
                text = _text(keys, n, errors)
                cols.append(["" if k is None else k for k in text] if None in keys else text)
            elif p == "%o":
                cols.append(map(str, offsets))
            elif p == "%p":
                cols.append(repeat(str(partition), n))
            elif p == "%t":
                cols.append(repeat(topic, n))
            elif p == "%T":
                cols.append(map(str, stamps))
            elif p == "%K":
                cols.append(_lengths(keys))
            elif p == "%S":
                cols.append(_lengths(values))
            elif p == "%h":
                cols.append(repeat("", n))
            else:
                cols.append(repeat(p, n))
        return "".join(chain.from_iterable(zip(*cols)))

    def _json(self, topic, partition, n, offsets, stamps, keys, values, headers, noheaders) -> str:
        def strings(col):
            text = _text(col, n, "strict")  # not UTF-8: the per-record path writes base64
            if None in col:
                return ["null" if t is None else _encode_str(t) for t in text]
            return list(map(_encode_str, text))

        if noheaders:
            hcol = repeat("{}", n)
        else:
            hcol = [json.dumps({k: (None if v is None else bytes(v).decode("utf-8", "backslashreplace")) for k, v in h},
                               separators=(",", ":"), ensure_ascii=False) if h else "{}" for h in headers]
        head = '{"topic":%s,"partition":%d,"offset":' % (_encode_str(topic), partition)
        return "".join(chain.from_iterable(zip(
            repeat(head, n), map(str, offsets), repeat(',"timestamp":', n), map(str, stamps),
            repeat(',"key":', n), strings(keys), repeat(',"value":', n), strings(values),
            repeat(',"headers":', n), hcol, repeat("}\n", n))))
