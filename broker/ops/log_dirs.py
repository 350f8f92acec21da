"""Log dir health: a full disk, a failed fsync, a log dir that vanishes or turns read-only.

- Full (ENOSPC, EDQUOT on an append): one ERROR line per log dir naming it and
  its free space, the append answered at once with KAFKA_STORAGE_ERROR (the
  segment cut back to its last whole batch by storage), reads go on; the next
  append that fits clears the state (one INFO line): appends resume by
  themselves when space returns.
- Any other I/O error on an append, a failed fsync (the page cache may have
  dropped the data: retrying would claim durability it does not have), or a
  log dir found gone or read-only by the periodic check: the log dir goes
  offline as in Kafka's LogDirFailureChannel. Its partitions answer
  KAFKA_STORAGE_ERROR, the other dirs keep serving; when no log dir is left
  the broker stops, without a clean-shutdown marker, so the next start
  recovers the logs.
"""
from __future__ import annotations

import errno
import logging
import os
from pathlib import Path
from typing import Callable

from pylog.broker.common.partition_logs import PartitionLogs
from pylog.storage import faults

log = logging.getLogger("pylog.broker")

CHECK_EVERY_S = 2.0  # how often the log dirs are checked for vanishing or turning read-only
_FULL = {errno.ENOSPC, errno.EDQUOT}


def free_bytes(path) -> int | None:
    """Bytes free to unprivileged writers on the filesystem of `path`, None when unreadable."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize


class LogDirMonitor:
    """Tracks full and offline log dirs for one broker; everything runs on the event loop
    (reports from other threads arrive through call_soon_threadsafe)."""

    def __init__(self, partitions: PartitionLogs, storage_errors: dict[str, int], stopping: Callable[[], bool],
                 halt: Callable[[str], None]):
        """`storage_errors`: the node's count of failed appends per log dir; `halt(reason)` stops
        the node uncleanly once no log dir is left."""
        self.partitions = partitions
        self.storage_errors = storage_errors
        self._stopping, self._halt = stopping, halt
        self.full: set[Path] = set()
        self._ids: dict[Path, tuple[int, int]] = {}
        self._loop = None

    def start(self, loop) -> None:
        """Remember each log dir's identity and listen for fsync failures."""
        self._loop = loop
        for d in self.partitions.logs.log_dirs:
            try:
                st = os.stat(d)
                self._ids[d] = (st.st_dev, st.st_ino)
            except OSError:
                pass
        faults.on_io_failure.append(self._io_failed)

    def stop(self) -> None:
        """Stop listening for fsync failures."""
        if self._io_failed in faults.on_io_failure:
            faults.on_io_failure.remove(self._io_failed)

    # ---- reports ---------------------------------------------------------
    def append_failed(self, plog, exc: OSError) -> None:
        """An append to `plog` raised `exc` (storage already cut the segment back)."""
        d = plog.dir.parent
        stats = self.storage_errors
        stats[str(d)] = stats.get(str(d), 0) + 1
        if exc.errno in _FULL and "cutting back" not in str(exc):
            if d not in self.full:
                self.full.add(d)
                free = free_bytes(d)
                log.error("log dir %s is full (%s bytes free): appends to its partitions fail with "
                          "KAFKA_STORAGE_ERROR until space is freed", d, "?" if free is None else free)
            return
        self.take_offline(d, f"append to {plog.topic}-{plog.partition} failed: {exc.strerror or exc}")

    def append_ok(self, plog) -> None:
        """An append succeeded: its log dir has space again if it was full."""
        d = plog.dir.parent
        if d in self.full:
            self.full.discard(d)
            log.info("log dir %s has space again (%s bytes free): appends resumed", d, free_bytes(d))

    def _io_failed(self, path: str, exc: OSError) -> None:
        # any thread: the flush threads, the scheduler's worker, the loop itself
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(self._io_failed_on_loop, path, exc)

    def _io_failed_on_loop(self, path: str, exc: OSError) -> None:
        p = Path(path)
        for d in list(self.partitions.logs.log_dirs):
            if p == d or d in p.parents:
                self.take_offline(d, f"writing or syncing {path} failed: {exc.strerror or exc}")
                return

    def check(self) -> list[tuple[Path, str]]:
        """(dir, reason) for each online log dir that vanished or turned read-only (any thread)."""
        bad = []
        for d in list(self.partitions.logs.log_dirs):
            try:
                st = os.stat(d)
            except OSError as e:
                bad.append((d, f"cannot stat it: {e.strerror or e}"))
                continue
            if d in self._ids and self._ids[d] != (st.st_dev, st.st_ino):
                bad.append((d, "it was replaced (a different directory is at its path now)"))
            elif not os.access(d, os.W_OK):
                bad.append((d, "it is not writable (read-only filesystem?)"))
        return bad

    def periodic_check(self) -> None:
        """The scheduler's job: hand what check() finds to the loop."""
        for d, reason in self.check():
            self._loop.call_soon_threadsafe(self.take_offline, d, reason)

    # ---- offline -----------------------------------------------------------
    def take_offline(self, d: Path, reason: str) -> None:
        """Stop using log dir `d`; stop the broker when it was the last one."""
        logs = self.partitions.logs
        first = d not in logs.offline_dirs
        gone = logs.take_dir_offline(d, reason)
        if first and d in logs.offline_dirs:
            self.full.discard(d)
            log.error("log dir %s is offline: %s; its %d partitions answer KAFKA_STORAGE_ERROR", d, reason,
                      len(gone))
            for topic, part in gone:
                self.partitions.wake(topic, part)  # parked fetches answer now
        if not logs.log_dirs and not self._stopping():
            fatal = f"every log dir is offline (last: {d}: {reason})"
            log.error("shutting down the broker: %s", fatal)
            self._halt(fatal)
