"""The compiled fast path as the property tests see it.

`native` is the extension module or None; `needs_native` skips a test while the extension is
not active (not built, or PYLOG_PURE_PYTHON=1), saying why, except in CI (CI=true), where a
missing extension is a failure.
"""
from __future__ import annotations

import os

import pytest

from pylog.core import fastpath

native = fastpath.native
FORCED_PURE = os.environ.get("PYLOG_PURE_PYTHON", "") not in ("", "0")
needs_native = pytest.mark.skipif(
    native is None and (FORCED_PURE or not os.environ.get("CI")),
    reason=f"the compiled extension is not active: {fastpath.reason}",
)


def drive_run(step, count: int, limit: int, od: int, prefill: bytes = b"") -> tuple[list, type | None]:
    """A run of `count` records into batches of `limit` bytes, as ProducerBatch.append_run drives an
    encoder: `step(buf, od, room, pos, count)` -> (records taken, batch full), called again until the
    run is taken, a new batch when one is full. ([bytes of each batch], the error type or None)."""
    from pylog.core.client import runs

    batches, buf, pos = [], bytearray(prefill), 0
    try:
        while pos < count:
            room = limit - len(buf) - 5
            if od + 1 >= runs.VARINT_LIMIT or (room <= 0 and od):
                took, full = 0, True
            else:
                took, full = step(buf, od, room, pos, count)
            pos += took
            od += took
            if full or took == 0 or len(buf) >= limit:
                batches.append(bytes(buf))
                buf, od = bytearray(), 0
    except (ValueError, TypeError) as e:
        return batches, type(e)
    return batches + [bytes(buf)], None


def printed_in_pure_python(code: str) -> list[str]:
    """The words `code` prints in a fresh interpreter with PYLOG_PURE_PYTHON=1 (what a process with the
    extension switched off binds)."""
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYLOG_PURE_PYTHON": "1"})
    assert r.returncode == 0, r.stderr
    return r.stdout.split()
