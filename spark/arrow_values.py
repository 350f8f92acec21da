"""Arrow arrays of a few Python values, built from buffers.

pyarrow's conversion from Python objects (`pa.array`, `pa.scalar`,
`RecordBatch.from_pydict`) imports pandas the first time it runs, to check
whether a value is a pandas object: about 0.3 s of CPU in each fresh Spark
Python worker, before its first task, for nothing when no pandas object is
involved. The read and write tasks of `spark-export` build their constant
columns and their file lists here instead (pure buffer assembly, no pandas).
Only the types those need: string, binary, int32, int64, float64, no nulls.
"""
from __future__ import annotations

import array as _array
import struct

# array/struct codes in the machine's byte order, as Arrow buffers are
_FIXED = {"int32": "i", "int64": "q", "double": "d"}


def _check(type_) -> str:
    name = str(type_)
    if name not in _FIXED and name not in ("string", "binary"):
        raise TypeError(f"arrow_values builds string, binary, int32, int64 and double arrays, not {name}")
    return name


def repeat(value, type_, n: int):
    """An array of `n` copies of `value` (not None) of Arrow `type_`."""
    import pyarrow as pa

    name = _check(type_)
    if name in _FIXED:
        return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(struct.pack(_FIXED[name], value) * n)])
    data = value.encode() if isinstance(value, str) else bytes(value)
    offsets = _array.array("i", range(0, len(data) * (n + 1), len(data))).tobytes() if data else bytes(4 * (n + 1))
    return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(offsets), pa.py_buffer(data * n)])


def array(values: list, type_):
    """An array of `values` (none of them None) of Arrow `type_`."""
    import pyarrow as pa

    name = _check(type_)
    n = len(values)
    if name in _FIXED:
        return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(_array.array(_FIXED[name], values).tobytes())])
    parts = [v.encode() if isinstance(v, str) else bytes(v) for v in values]
    ends, pos = [0], 0
    for p in parts:
        pos += len(p)
        ends.append(pos)
    return pa.Array.from_buffers(type_, n, [None, pa.py_buffer(_array.array("i", ends).tobytes()),
                                            pa.py_buffer(b"".join(parts))])


def record_batch(columns: dict, schema):
    """A record batch of `schema` from {name: list of values}."""
    import pyarrow as pa

    return pa.RecordBatch.from_arrays([array(columns[f.name], f.type) for f in schema], schema=schema)
