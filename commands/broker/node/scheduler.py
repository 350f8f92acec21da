"""The broker's periodic storage work: retention, checkpoints, flushes, producer expiration.

Each job runs every `every` seconds on one worker thread (the event loop must
not block on disk), never overlapping itself; a failed run is logged and the
job keeps its schedule.
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
