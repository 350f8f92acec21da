"""The run encoder: many v2 records with one timestamp written into a batch's buffer.

`encode_run` is what `ProducerBatch.append_run` calls for the bulk path of
`pylog produce` and `Producer.send_many`. The pure-Python `encode_run_py` is the
reference (whole-list operations: map/zip/join run in C, no Python loop per
record); the compiled extension's `encode_run` has the same contract and is
tested against it (tests/test_fastpath_runs.py). pylog.core.client.fastpath chooses.
"""
from __future__ import annotations

import functools
import operator
from bisect import bisect_right
from itertools import accumulate, chain, repeat

from pylog.core.client import fastpath
from pylog.core.client.partitioner import murmur2_many
from pylog.core.records.varint import encode_varint

__all__ = ["VARINT", "VARINT_LIMIT", "column_lengths", "column_lengths_py", "encode_frame_run",
           "encode_frame_run_py", "encode_run", "encode_run_py", "frame_columns", "frame_groups", "frame_groups_py",
           "frame_partitions", "frame_partitions_py"]

VARINT_LIMIT = 1 << 14
# zig-zag varint bytes of non-negative n < 2**14 (lengths, deltas): the hot lookup
VARINT = list(map(encode_varint, range(VARINT_LIMIT)))
_V = VARINT
_VLIM = VARINT_LIMIT


@functools.lru_cache(maxsize=None)
def _tables():
    """The reference's lookup tables, made on its first use (a compiled install never needs them)."""
    vsize = [len(_V[n]) + n for n in range(_VLIM)]  # length varint + the bytes it counts
    return (
        vsize,
        [len(v) for v in _V],
        _V + [b"\x01"],  # key and value parts by length, where length -1 (the last entry) is a null
        vsize + [1],
        [b"\x00\x00" + v for v in _V],  # offset delta after the attributes and a zero timestamp delta
        [b"\x00\x00" + v + b"\x01" for v in _V],  # ... and a null key after
        [v + b"\x01" for v in _V],
        [b"\x00" + v for v in _V],  # empty headers, then the next record's length
    )


def encode_run_py(buf, od, tsd, room, values, start, stop, keys, headers, value_lens, key_lens):
    """Append records values[start:stop] to bytearray `buf` as v2 records with offset
    deltas od, od + 1, ... and timestamp delta `tsd`, as many as fit in `room` bytes
    (an empty batch, od == 0, takes its first record whatever its size) and no offset
    delta past 16382. `keys` is None (every key null) or a list like `values`; a null
    key or value is b"" there with length -1 in `key_lens`/`value_lens` (lists like
    `values`, or None: the lengths of the items); `headers` is the encoded headers
    shared by every record, or a list like `values` of them. Returns (taken, full):
    full when a record was left out for want of room. A record of 16384 bytes or more
    is a ValueError, raised before anything is written. This reference may take fewer
    records than fit (it looks at a guessed number); the caller calls again."""
    _VSIZE, _VLEN, _VN, _VNSIZE, _MID, _MID_NULL_KEY, _V1, _P = _tables()
    count = min(stop - start, _VLIM - 1 - od)
    shared = not isinstance(headers, list)
    # look at no more records than can fit (every record looked at costs): a guess
    # from the first few; taking too few only means another call
    probe = min(count, 32)
    sample = (sum(map(len, values[start:start + probe])) + (sum(map(len, keys[start:start + probe]))
              if keys is not None else 0)) / probe
    count = min(count, int(room * 1.25 / (sample + 8 + (len(headers) if shared else 8))) + 8)
    stop = start + count
    values = values[start:stop]
    vls = value_lens[start:stop] if value_lens is not None else list(map(len, values))
    kls = None
    if keys is not None:
        keys = keys[start:stop]
        kls = key_lens[start:stop] if key_lens is not None else list(map(len, keys))
    if not shared:
        headers = headers[start:stop]
    fixed = b"\x00" + (_V[tsd] if 0 <= tsd < _VLIM else encode_varint(tsd))  # attributes, timestamp delta
    if keys is None:
        mids = _MID_NULL_KEY[od:od + count] if tsd == 0 else list(map(fixed.__add__, _V1[od:od + count]))
        extra = len(fixed) + 1
    else:
        mids = _MID[od:od + count] if tsd == 0 else list(map(fixed.__add__, _V[od:od + count]))
        extra = len(fixed)
    # record body sizes: fixed part, offset delta, key part, value part, headers
    sizes = map(operator.add, map(_VNSIZE.__getitem__, vls), map(_VLEN.__getitem__, range(od, od + count)))
    if kls is not None:
        sizes = map(operator.add, sizes, map(_VNSIZE.__getitem__, kls))
    if shared:
        extra += len(headers)
    else:
        sizes = map(operator.add, sizes, map(len, headers))
    bodies = list(map(operator.add, sizes, repeat(extra, count)))
    if max(bodies) >= _VLIM:
        raise ValueError("append_run: a record of 16384 bytes or more")
    totals = list(accumulate(map(_VSIZE.__getitem__, bodies)))
    n = bisect_right(totals, room)
    if n == 0 and od == 0:
        n = 1  # an empty batch takes its first record whatever its size
    full = False
    if n < count:
        full = n < len(totals) and totals[n] > room
        if n == 0:
            return 0, full
        bodies, mids, values, vls = bodies[:n], mids[:n], values[:n], vls[:n]
        if kls is not None:
            keys, kls = keys[:n], kls[:n]
        if not shared:
            headers = headers[:n]
    # each record's headers go out with the next record's length varint: one piece fewer
    heads = map(_V.__getitem__, bodies)
    first = next(heads)
    if shared:
        tails = map(headers.__add__, heads) if headers != b"\x00" else map(_P.__getitem__, bodies[1:])
        last = headers
    else:
        tails = map(operator.add, headers, heads)
        last = headers[-1]
    tails = chain(tails, (last,))
    if keys is None:
        parts = zip(mids, map(_VN.__getitem__, vls), values, tails)
    else:
        parts = zip(mids, map(_VN.__getitem__, kls), keys, map(_VN.__getitem__, vls), values, tails)
    rest = b"".join(chain.from_iterable(parts))  # before writing: a TypeError leaves buf as it was
    buf += first
    buf += rest
    return n, full


_BYTES_OR_NONE = {bytes, type(None)}


def column_lengths_py(items):
    """(lengths with -1 for None, how many are None, the longest length or -1) of a list of
    bytes and None: one pass for what the run encoder and its caller need to know of a
    key or value column. None when `items` is anything else (the caller converts it)."""
    if not isinstance(items, list) or not set(map(type, items)) <= _BYTES_OR_NONE:
        return None
    lens = [-1 if x is None else len(x) for x in items]
    return lens, lens.count(-1), max(lens, default=-1)


def frame_columns(data, offsets, idx=None):
    """(keys, values, key lengths) of framed records (`pylog produce`'s text lines where they lie
    in the read block: four int64s per record, key start, key length or -1 for a null key, value
    start, value length), of every record or of records `idx`, as the run encoder takes them:
    a null key is b"" with length -1, and keys is None when every key is null."""
    data = data if isinstance(data, bytes) else bytes(data)
    m = memoryview(offsets).cast("q")
    ks, kls, vs, vls = m[0::4].tolist(), m[1::4].tolist(), m[2::4].tolist(), m[3::4].tolist()
    if idx is not None:
        ks, kls, vs, vls = ([col[i] for i in idx] for col in (ks, kls, vs, vls))
    values = [data[s:s + n] for s, n in zip(vs, vls)]
    if kls.count(-1) == len(kls):
        return None, values, None
    keys = [data[s:s + n] if n >= 0 else b"" for s, n in zip(ks, kls)]
    return keys, values, kls


def encode_frame_run_py(buf, od, tsd, room, data, offsets, idx, start, stop, headers):
    """encode_run_py of framed records: record j of the run is framed record idx[j] (or j when
    idx is None), for j in start..stop; `headers` the encoded headers every record shares."""
    count = len(offsets) // 32 if idx is None else len(idx)
    if not 0 <= start <= stop <= count:
        raise ValueError("encode_frame_run: need 0 <= start <= stop <= records and od >= 0")
    keys, values, kls = frame_columns(data, offsets, (idx or range(count))[start:stop])
    return encode_run_py(buf, od, tsd, room, values, 0, stop - start, keys, headers, None, kls)


def frame_partitions_py(data, offsets, n):
    """The partition of every framed record by its key: murmur2 mod n, -1 for a null key."""
    keys, _, kls = frame_columns(data, offsets)
    if keys is None:
        return [-1] * (len(offsets) // 32)
    return [h % n if kl >= 0 else -1 for h, kl in zip(murmur2_many(keys), kls)]


def frame_groups_py(data, offsets, n):
    """[the indexes of the framed records of partition p, in order, for p in range(n)] by their keys
    (frame_partitions); a record without a key is a ValueError."""
    parts = frame_partitions_py(data, offsets, n)
    if -1 in parts:
        raise ValueError("frame_groups: a record without a key")
    groups = [[] for _ in range(n)]
    for i, part in enumerate(parts):
        groups[part].append(i)
    return groups


encode_run = fastpath.choose("encode_run", encode_run_py)
encode_frame_run = fastpath.choose("encode_frame_run", encode_frame_run_py)
frame_partitions = fastpath.choose("frame_partitions", frame_partitions_py)
frame_groups = fastpath.choose("frame_groups", frame_groups_py)
column_lengths = fastpath.choose("column_lengths", column_lengths_py)
