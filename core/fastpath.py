"""Which implementation of the hot loops runs: the compiled extension or pure Python.

pylog's record codec, validating walk, cleaner key scan, murmur2 and the
produce/consume text loops each have a pure-Python implementation (the simple
reference) and, when the optional C extension `pylog.core._speedups` was built
at install time, a compiled one with the same contract. This module is the one
place that decides: every owner of a hot function asks `choose(name, python_impl)`.

PYLOG_PURE_PYTHON=1 (any value but "" and "0") forces pure Python; so does an
install where the extension could not be built (no C compiler or headers).
"""
from __future__ import annotations

import os

__all__ = ["native", "choose", "implementation", "is_compiled", "reason"]

_FORCED = os.environ.get("PYLOG_PURE_PYTHON", "") not in ("", "0")

native = None
reason = "forced by PYLOG_PURE_PYTHON" if _FORCED else ""
if not _FORCED:
    try:
        from pylog.core import _speedups as native  # noqa: F401 - the optional extension
    except ImportError as e:
        reason = f"the compiled extension is not installed ({e})"


def is_compiled() -> bool:
    """True when the compiled extension is in use."""
    return native is not None


def implementation() -> str:
    """One line for `pylog --version` and `--debug`: which implementation is active and why."""
    if native is not None:
        return f"compiled (C extension {native.__name__})"
    return f"pure Python ({reason})"


def choose(name: str, python_impl):
    """The compiled `name` when the extension is active and has it, else `python_impl`."""
    if native is None:
        return python_impl
    return getattr(native, name, python_impl)
