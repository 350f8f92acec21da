"""Records of a v2 batch's records section as Arrow column buffers, with no Python object per record.

`decode_columns(data, base_offset, base_timestamp, log_append_time, start, end, cols)`
decodes every record (framing checked as decode_records checks it) and appends
those with offsets in [start, end) to `cols` (a `Columns`' `.cols`): offsets
(int64), timestamps in microseconds (int64), key and value each as Arrow's
nullable binary layout (validity bitmap, int32 offsets, data), and (row, headers)
for the rows that have headers. It returns how many records it decoded. The
compiled twin (pylog.core.records._speedups) runs when the extension is built.
"""
from __future__ import annotations

import struct

from pylog.core.records import fastpath
from pylog.core.records.errors import CorruptRecordError
from pylog.core.records.record_decode import decode_records

__all__ = ["Columns", "decode_columns", "decode_columns_py"]

_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")


def _binary(valid: bytearray, offs: bytearray, data: bytearray, row: int, value) -> None:
    if len(valid) < row // 8 + 1:
        valid.extend(bytes(row // 8 + 1 - len(valid)))
    if value is not None:
        valid[row // 8] |= 1 << (row % 8)
        data += value
    if len(data) > 0x7FFFFFFF:
        raise OverflowError("decode_columns: a binary column passed 2 GiB: flush it sooner")
    offs += _I32.pack(len(data))


def decode_columns_py(data, base_offset: int, base_timestamp: int, log_append_time, start: int, end: int,
                      cols: list) -> int:
    """The pure-Python reference of decode_columns (see the module's docstring)."""
    offsets, ts, kvalid, koffs, kdata, vvalid, voffs, vdata, headers = cols
    recs = decode_records(data, base_offset, base_timestamp, log_append_time)
    for i, r in enumerate(recs):
        if not -(1 << 63) <= r.offset < 1 << 63:
            raise CorruptRecordError(f"record {i}: offset overflows")
        if not start <= r.offset < end:
            continue
        row = len(offsets) // 8
        if not -(1 << 63) <= r.timestamp * 1000 < 1 << 63:
            raise CorruptRecordError(f"record {i}: timestamp {r.timestamp} out of range")
        if r.headers:
            headers.append((row, r.headers))
        offsets += _I64.pack(r.offset)
        ts += _I64.pack(r.timestamp * 1000)
        _binary(kvalid, koffs, kdata, row, r.key)
        _binary(vvalid, voffs, vdata, row, r.value)
    return len(recs)


decode_columns = fastpath.choose("decode_columns", decode_columns_py)


class Columns:
    """Column buffers filled by decode_columns, a batch at a time, turned into Arrow arrays."""

    def __init__(self):
        self.cols = [bytearray(), bytearray(), bytearray(), bytearray(4), bytearray(), bytearray(),
                     bytearray(4), bytearray(), []]
        self.runs: list = []  # (rows, timestamp type, leader epoch) per Kafka batch

    def __len__(self) -> int:
        return len(self.cols[0]) // 8

    def data_bytes(self) -> int:
        return len(self.cols[4]) + len(self.cols[7])

    def add(self, data, base_offset: int, base_timestamp: int, log_append_time, start: int, end: int,
            ts_type: int, epoch: int) -> int:
        """Decode one batch's records section; the records decoded (all, in range or not)."""
        before = len(self)
        n = decode_columns(data, base_offset, base_timestamp, log_append_time, start, end, self.cols)
        if len(self) > before:
            self.runs.append((len(self) - before, ts_type, epoch))
        return n

    def add_records(self, recs, ts_type: int, epoch: int) -> None:
        """Append decoded records (v0/v1 batches, which decode_columns does not read)."""
        if not recs:
            return
        offsets, ts, kvalid, koffs, kdata, vvalid, voffs, vdata, headers = self.cols
        for r in recs:
            row = len(offsets) // 8
            if r.headers:
                headers.append((row, tuple(r.headers)))
            offsets += _I64.pack(r.offset)
            ts += _I64.pack(r.timestamp * 1000)
            _binary(kvalid, koffs, kdata, row, r.key)
            _binary(vvalid, voffs, vdata, row, r.value)
        self.runs.append((len(recs), ts_type, epoch))

    def arrays(self) -> dict:
        """{"offset", "timestamp", "key", "value", "timestampType", "leaderEpoch": Arrow arrays,
        "headers": [(row, headers)]} (timestamp as int64 microseconds)."""
        import pyarrow as pa

        n = len(self)
        offsets, ts, kvalid, koffs, kdata, vvalid, voffs, vdata, headers = self.cols

        def binary(valid, offs, data):
            return pa.Array.from_buffers(pa.binary(), n, [pa.py_buffer(valid), pa.py_buffer(offs), pa.py_buffer(data)])

        def runs(i):
            return pa.py_buffer(b"".join(_I32.pack(r[i]) * r[0] for r in self.runs))

        return {"offset": pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(offsets)]),
                "timestamp": pa.Array.from_buffers(pa.int64(), n, [None, pa.py_buffer(ts)]),
                "key": binary(kvalid, koffs, kdata), "value": binary(vvalid, voffs, vdata),
                "timestampType": pa.Array.from_buffers(pa.int32(), n, [None, runs(1)]),
                "leaderEpoch": pa.Array.from_buffers(pa.int32(), n, [None, runs(2)]), "headers": headers}
