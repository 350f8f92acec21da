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
