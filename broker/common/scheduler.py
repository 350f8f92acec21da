"""The broker's periodic work: storage jobs (retention, checkpoints, flushes, producer
expiration) and the coordinators' timers.

A storage job runs every `every` seconds on one worker thread (the event loop must
not block on disk), never overlapping itself; a coordinator's Ticker runs on the event
loop itself. A failed run is logged and the job keeps its schedule.
"""
from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from typing import Callable

log = logging.getLogger("pylog.broker")


class Scheduler:
    """Named periodic jobs on the event loop's timers and one worker thread."""

    def __init__(self, thread_name: str = "pylog-log-timers"):
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=thread_name)
        self._timers: dict[str, asyncio.TimerHandle] = {}
        self._busy: set[str] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopped = False

    def start(self, loop: asyncio.AbstractEventLoop, jobs: list[tuple[str, float, Callable[[], None]]]) -> None:
        """Schedule (name, every seconds, fn) jobs; the first run of each is `every` from now."""
        self._loop = loop
        for name, every, fn in jobs:
            self._schedule(name, every, fn)

    def _schedule(self, name: str, every: float, fn: Callable[[], None]) -> None:
        def fire():
            if self._stopped:
                return
            if name not in self._busy:
                self._busy.add(name)
                fut = self._loop.run_in_executor(self._executor, _run_job, name, fn)
                fut.add_done_callback(lambda _f: self._busy.discard(name))
            self._timers[name] = self._loop.call_later(every, fire)

        self._timers[name] = self._loop.call_later(every, fire)

    def cancel(self) -> None:
        """No job starts after this; one already running finishes (see wait)."""
        self._stopped = True
        for t in self._timers.values():
            t.cancel()

    def wait(self) -> None:
        """Block until a running job is done and release the worker thread."""
        self._executor.shutdown(wait=True)


def _run_job(name: str, fn: Callable[[], None]) -> None:
    try:
        fn()
    except Exception:  # noqa: BLE001 - a failed timer must not stop the broker
        log.exception("periodic %s failed", name)


class Ticker:
    """`fn()` every `every` seconds on the event loop (a coordinator's timer); a failure is
    logged to `logger` as "`what` failed" and the ticker keeps its schedule until cancel()."""

    def __init__(self, loop: asyncio.AbstractEventLoop, every: float, fn: Callable[[], None], what: str,
                 logger: logging.Logger = log):
        self._loop, self._every, self._fn, self._what, self._log = loop, every, fn, what, logger
        self._stopped = False
        self._handle = loop.call_later(every, self._fire)

    def _fire(self) -> None:
        try:
            self._fn()
        except Exception:  # noqa: BLE001 - keep ticking
            self._log.exception("%s failed", self._what)
        if not self._stopped:
            self._handle = self._loop.call_later(self._every, self._fire)

    def cancel(self) -> None:
        """No run starts after this."""
        self._stopped = True
        self._handle.cancel()

    def cancelled(self) -> bool:
        """Whether cancel() was called."""
        return self._stopped
