"""The compiled fast path as the property tests see it.

`EXTENSIONS` is every package's compiled extension as its owner loaded it (pylog.core.records,
pylog.core.client, pylog.storage, pylog.commands: each package's `fastpath` module);
tests/test_fastpath_every_twin.py requires it to name every extension setup.py declares.
`native` is one namespace of all their functions (each test calls the function it names, from
the extension that owns it), or None when none is active; `needs_native` skips a test while any
extension is not active (not built, or PYLOG_PURE_PYTHON=1), saying why, except in CI (CI=true),
where a missing extension is a failure.
"""
from __future__ import annotations

import os
from types import SimpleNamespace

import pytest

from pylog.commands import fastpath as commands_fastpath
from pylog.core import fastpath
from pylog.core.client import fastpath as client_fastpath
from pylog.core.records import fastpath as records_fastpath
from pylog.storage import fastpath as storage_fastpath

EXTENSIONS = tuple(m.extension for m in (records_fastpath, client_fastpath, storage_fastpath, commands_fastpath))
ACTIVE = [e for e in EXTENSIONS if e.native is not None]
native = SimpleNamespace(**{name: getattr(e.native, name) for e in ACTIVE for name in dir(e.native)
                            if not name.startswith("_")}) if ACTIVE else None
FORCED_PURE = os.environ.get("PYLOG_PURE_PYTHON", "") not in ("", "0")
needs_native = pytest.mark.skipif(
    len(ACTIVE) < len(EXTENSIONS) and (FORCED_PURE or not os.environ.get("CI")),
    reason=f"a compiled extension is not active: {fastpath.implementation(list(EXTENSIONS))}",
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
