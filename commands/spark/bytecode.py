"""Compiled bytecode for the pylog.zip the executors import pylog from.

Python's zipimport compiles every module of a zip from source, in every Python worker, with no
cache: pylog's task modules cost each worker a few tenths of a second of CPU before its first
task. A zip may hold a module's bytecode beside its source (`pkg/mod.pyc`), which zipimport
takes first. `zipped_pyc` makes that file from the bytecode this interpreter already compiled
for the source (its `__pycache__` or PYTHONPYCACHEPREFIX; nothing is compiled here), as a
checked hash-based pyc: zipimport checks it against the zipped source's hash, so it is used
only with the very source it was compiled from, whatever the clocks and time zones of the
machines (a timestamp pyc would compare the zip entry's local time).
"""
from __future__ import annotations

import importlib.util
import os
from pathlib import Path

_MAGIC = importlib.util.MAGIC_NUMBER
_CHECKED_HASH = (0b11).to_bytes(4, "little")  # hash-based, check the source


def zipped_pyc(source: Path, source_bytes: bytes) -> bytes | None:
    """The checked hash-based pyc of `source` (whose content is `source_bytes`) from this
    interpreter's cached bytecode, or None when there is none current for it."""
    try:
        cached = importlib.util.cache_from_source(str(source))
        with open(cached, "rb") as f:
            data = f.read()
        st = os.stat(source)
    except (OSError, NotImplementedError, ValueError):
        return None
    if len(data) < 16 or data[:4] != _MAGIC:
        return None
    flags = int.from_bytes(data[4:8], "little")
    digest = importlib.util.source_hash(source_bytes)
    if flags & 0b1:  # already hash-based: current when its hash is the source's
        if data[8:16] != digest:
            return None
    elif (int.from_bytes(data[8:12], "little") != int(st.st_mtime) & 0xFFFFFFFF
          or int.from_bytes(data[12:16], "little") != st.st_size & 0xFFFFFFFF):
        return None  # a timestamp pyc of another version of the source
    return _MAGIC + _CHECKED_HASH + digest + data[16:]
