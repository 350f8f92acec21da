"""Damage to bytes for property tests: the fuzzers' flips, cuts, insertions and deletions."""
from __future__ import annotations

from hypothesis import strategies as st


def damage(draw, data: bytearray, ops: int, kinds: list, set_values: list, insert_max: int, span_max: int) -> bytearray:
    """Apply up to `ops` edits drawn from `kinds` to `data` in place: flip a bit, set a byte to
    one of `set_values`, cut the rest, insert up to `insert_max` random bytes, delete or
    duplicate up to `span_max` bytes. Returns `data`."""
    for _ in range(ops):
        kind = draw(st.sampled_from(kinds))
        if not data:
            break
        i = draw(st.integers(0, len(data) - 1))
        if kind == "flip":
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set":
            data[i] = draw(st.sampled_from(set_values))
        elif kind == "cut":
            del data[i:]
        elif kind == "insert":
            data[i:i] = draw(st.binary(min_size=1, max_size=insert_max))
        elif kind == "delete":
            del data[i:i + draw(st.integers(1, span_max))]
        else:  # dup
            data[i:i] = data[i:i + draw(st.integers(1, span_max))]
    return data
