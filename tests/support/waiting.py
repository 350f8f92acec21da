"""Waiting on a condition instead of sleeping: the one helper tests use.

Tests never sleep a fixed time hoping something has happened; they poll the
condition under a generous deadline (two shared cores can be slow), and a
timeout fails with what was awaited and the last value seen.
"""
from __future__ import annotations

import time
from typing import Callable, TypeVar

T = TypeVar("T")


def wait_until(cond: Callable[[], T], timeout: float = 30.0, what: str = "condition", step: float = 0.05) -> T:
    """Poll `cond()` until it returns something truthy and return that; fail after `timeout` s.

    `what` names the awaited state in the failure message; it may be a callable
    returning the text (evaluated only on failure, e.g. to show current state).
    """
    deadline = time.monotonic() + timeout
    while True:
        value = cond()
        if value:
            return value
        if time.monotonic() >= deadline:
            detail = what() if callable(what) else what
            raise AssertionError(f"timed out after {timeout:g}s waiting for {detail} (last: {value!r})")
        if step:
            time.sleep(step)
