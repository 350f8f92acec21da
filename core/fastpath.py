"""Which implementation of the hot loops runs: a compiled extension or pure Python.

pylog's record codec, validating walk, cleaner key scan, murmur2 and the
produce/consume text loops each have a pure-Python implementation (the simple
reference) and, when the optional C extensions were built at install time, a
compiled one with the same contract. The compiled code is split by owner: each
package whose modules hold the pure-Python twins builds its own extension
(`<package>._speedups`) and has a `fastpath` module that loads it with `load`
here and chooses, function by function: `fastpath.choose(name, python_impl)`.

    pylog.core.records.fastpath  pylog.core.records._speedups  varints, record codecs, CRC-32C
    pylog.core.client.fastpath   pylog.core.client._speedups   the producer's run encoders, murmur2
    pylog.storage.fastpath       pylog.storage._speedups       the append's walk, cleaner scans, index entries
    pylog.commands.fastpath      pylog.commands._speedups      produce input and consume output text

This module is the one place that decides whether compiled code may run at all:
PYLOG_PURE_PYTHON=1 (any value but "" and "0") forces pure Python everywhere; so
does an install where an extension could not be built (no C compiler or headers).
"""
from __future__ import annotations

import importlib
import os
from types import ModuleType

__all__ = ["FORCED", "Extension", "load", "implementation"]

FORCED = os.environ.get("PYLOG_PURE_PYTHON", "") not in ("", "0")


class Extension:
    """One package's compiled extension as loaded: `native` is the module, or None with `reason`."""

    def __init__(self, name: str, native: ModuleType | None, reason: str) -> None:
        self.name = name
        self.native = native
        self.reason = reason

    def choose(self, name: str, python_impl):
        """The compiled `name` when this extension is active and has it, else `python_impl`."""
        if self.native is None:
            return python_impl
        return getattr(self.native, name, python_impl)

    def __repr__(self) -> str:
        return f"Extension({self.name!r}, {'compiled' if self.native is not None else self.reason!r})"


def load(name: str) -> Extension:
    """The extension `name` (`<package>._speedups`), asked for by its owner package's fastpath module."""
    if FORCED:
        return Extension(name, None, "forced by PYLOG_PURE_PYTHON")
    try:
        return Extension(name, importlib.import_module(name), "")
    except ImportError as e:
        return Extension(name, None, f"the compiled extension is not installed ({e})")


def implementation(extensions: list[Extension]) -> str:
    """One line for `pylog --version` and `--debug`: which implementation is active and why."""
    compiled = [e.name for e in extensions if e.native is not None]
    missing = [e for e in extensions if e.native is None]
    if not missing:
        return f"compiled (C extension{'s' if len(compiled) > 1 else ''} {', '.join(compiled)})"
    if not compiled:
        return f"pure Python ({missing[0].reason})"
    return (f"partly compiled (C extension{'s' if len(compiled) > 1 else ''} {', '.join(compiled)}; pure Python for "
            + ", ".join(f"{e.name}: {e.reason}" for e in missing) + ")")
