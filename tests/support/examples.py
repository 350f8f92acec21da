"""How many examples a property test draws: the number it names, scaled by PYLOG_TEST_EXAMPLES.

The install tier (.ci/install-tier) runs the fast tier against installed packages with
PYLOG_TEST_EXAMPLES=0.1: there the question is whether the installed package works, and the
suite has already run every example against the same code. Unset (or 1): each test's own number.
"""
from __future__ import annotations

import os

SCALE = float(os.environ.get("PYLOG_TEST_EXAMPLES") or 1)


def examples(n: int) -> int:
    """`n` scaled, at least one."""
    return max(1, round(n * SCALE))
