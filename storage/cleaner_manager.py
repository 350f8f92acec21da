"""The log cleaner's manager: which compacted log to clean next (dirtiest first), the
cleaner checkpoints it keeps, pausing for deletion and truncation, and the
`log.cleaner.threads` background threads."""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path
from typing import Callable, Iterable

from pylog.storage.cleaner import (
    Cleaner,
    CleanerAborted,
    CleanerStats,
    log_section,
    read_cleaner_checkpoint,
    update_cleaner_checkpoint,
)
from pylog.storage.compaction_rules import should_clean
from pylog.storage.offset_map import OffsetMap

log = logging.getLogger("pylog.storage.cleaner")  # one logger for the cleaner and its threads


# ---------------------------------------------------------------- choosing logs, background threads
def dedupe_map_for(broker_config, threads: int = 1) -> OffsetMap:
    """One thread's map: Kafka splits the dedupe buffer across cleaner threads."""
    size = broker_config["log.cleaner.dedupe.buffer.size"] // max(1, threads)
    return OffsetMap(size, broker_config["log.cleaner.io.buffer.load.factor"])


class CleanerManager:
    """Kafka's LogCleaner + LogCleanerManager for the logs of a LogManager (or any
    callable returning Logs): dirtiest-first choice, checkpoints, and
    `log.cleaner.threads` background threads sleeping `log.cleaner.backoff.ms`
    when there is nothing to clean."""

    def __init__(self, logs: Callable[[], Iterable], broker_config, *, clock: Callable[[], float] = time.time):
        self._logs = logs
        self.config = broker_config
        self._clock = clock
        self._lock = threading.Lock()
        self.in_progress: set[tuple[str, int]] = set()
        self.paused: set[tuple[str, int]] = set()
        self.uncleanable: dict[tuple[str, int], str] = {}
        self.history: list[CleanerStats] = []
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._idle = threading.Condition(self._lock)

    # ---- choosing ----
    def checkpoints(self, lg) -> dict:
        return read_cleaner_checkpoint(lg.dir.parent)

    def grab_filthiest(self, now_ms: int | None = None):
        """(log, section) of the dirtiest cleanable log not being cleaned, marked in progress; or None."""
        now = int(self._clock() * 1000) if now_ms is None else now_ms
        best = None
        cps: dict[Path, dict] = {}
        for lg in list(self._logs()):
            key = (lg.topic, lg.partition)
            if lg.closed or not lg.is_compacted or key in self.uncleanable or key in self.paused:
                continue
            with self._lock:
                if key in self.in_progress:
                    continue
            d = lg.dir.parent
            if d not in cps:
                cps[d] = read_cleaner_checkpoint(d)
            section = log_section(lg, cps[d].get(key), now)
            if not should_clean(section, lg.config["min.cleanable.dirty.ratio"]):
                continue
            rank = (section.needs_compaction_now, section.dirty_ratio)
            if best is None or rank > best[0]:
                best = (rank, lg, section)
        if best is None:
            return None
        with self._lock:
            key = (best[1].topic, best[1].partition)
            if key in self.in_progress:
                return None
            self.in_progress.add(key)
        return best[1], best[2]

    def _done(self, lg) -> None:
        with self._lock:
            self.in_progress.discard((lg.topic, lg.partition))
            self._idle.notify_all()

    def clean_once(self, cleaner: Cleaner, now_ms: int | None = None) -> CleanerStats | None:
        """Clean the dirtiest log, if any is dirty enough; returns its statistics."""
        got = self.grab_filthiest(now_ms)
        if got is None:
            return None
        lg, section = got
        try:
            res = cleaner.clean(lg, section.first_dirty, now_ms=now_ms, force=True)
            if res.cleaned:
                update_cleaner_checkpoint(lg.dir.parent, lg.topic, lg.partition, res.checkpoint)
                log.info("%s", res.stats.report(cleaner.thread_id))
                self.history.append(res.stats)
                del self.history[:-100]
            return res.stats
        except CleanerAborted as e:
            log.info("cleaning aborted: %s", e)
            return None
        except Exception as e:  # Kafka marks the partition uncleanable and goes on with the others
            if lg.closed:
                return None
            self.uncleanable[(lg.topic, lg.partition)] = str(e)
            log.exception("log cleaner failed on %s-%s; the partition is marked uncleanable", lg.topic, lg.partition)
            return None
        finally:
            self._done(lg)

    # ---- pausing (topic deletion, truncation) ----
    def abort_and_pause(self, topic: str, partition: int, timeout: float = 60.0) -> None:
        key = (topic, partition)
        with self._lock:
            self.paused.add(key)
            self._idle.wait_for(lambda: key not in self.in_progress, timeout)

    def resume(self, topic: str, partition: int) -> None:
        with self._lock:
            self.paused.discard((topic, partition))

    # ---- threads ----
    def startup(self) -> None:
        n = self.config["log.cleaner.threads"]
        self._stop.clear()
        for i in range(n):
            cleaner = Cleaner(lambda: dedupe_map_for(self.config, n), clock=self._clock, thread_id=i,
                              cancel=self._stop)
            t = threading.Thread(target=self._run, args=(cleaner,), name=f"pylog-cleaner-{i}", daemon=True)
            self._threads.append(t)
            t.start()

    def wakeup(self) -> None:
        self._wake.set()

    def _run(self, cleaner: Cleaner) -> None:
        backoff = self.config["log.cleaner.backoff.ms"] / 1000
        while not self._stop.is_set():
            try:
                stats = self.clean_once(cleaner)
            except Exception:
                log.exception("log cleaner thread %d", cleaner.thread_id)
                stats = None
            if stats is None and not self._stop.is_set():
                self._wake.wait(backoff)
                self._wake.clear()

    def shutdown(self) -> None:
        self._stop.set()
        self._wake.set()
        for t in self._threads:
            t.join()
        self._threads = []

    @property
    def running(self) -> bool:
        return any(t.is_alive() for t in self._threads)
