"""Storage's write and fsync call sites, with a fault-injection seam for tests.

Every segment append (`pwrite`), checkpoint write (`write`) and fsync of
storage goes through these functions. Normally they are the os calls plus
one global check. With PYLOG_STORAGE_FAULTS=FILE in the environment, each
call first reads the rules in FILE (re-read when it changes), one a line:

    OP KIND [PATH-SUBSTRING]

OP is pwrite, write or fsync; KIND is an errno name (EIO, ENOSPC, EROFS, ...)
that the call raises, or `short`: a write stores half its bytes and the next
write through the same rule raises ENOSPC (a write that fails half way).
PATH-SUBSTRING limits the rule to files whose path contains it. An empty
file injects nothing.

`on_io_failure` callbacks run (from whichever thread it was) when an fsync
fails, or a checkpoint write fails other than for a full disk, so the broker
can take the log dir offline: after a failed fsync the page cache may have
dropped the data, and retrying would claim durability it does not have. (A
failed segment append reaches the broker as the produce's exception instead.)
"""
from __future__ import annotations

import errno
import os
from typing import Callable

ENV = "PYLOG_STORAGE_FAULTS"

on_io_failure: list[Callable[[str, OSError], None]] = []


class _Rules:
    """The rules of the fault file, re-read when its mtime or size changes."""

    def __init__(self, path: str):
        self.path = path
        self.stamp = None
        self.rules: list[tuple[str, str, str]] = []
        self.short_pending: set[int] = set()  # fds whose next write fails after a short one

    def current(self) -> list[tuple[str, str, str]]:
        try:
            st = os.stat(self.path)
            stamp = (st.st_mtime_ns, st.st_size)
        except OSError:
            stamp = None
        if stamp != self.stamp:
            self.stamp = stamp
            rules = []
            if stamp is not None:
                with open(self.path) as f:
                    for line in f:
                        parts = line.split()
                        if len(parts) >= 2:
                            rules.append((parts[0], parts[1], parts[2] if len(parts) > 2 else ""))
            self.rules = rules
            self.short_pending.clear()
        return self.rules

    def hit(self, op: str, path: str) -> str | None:
        for rop, kind, where in self.current():
            if rop == op and where in path:
                return kind
        return None


_rules: _Rules | None = _Rules(os.environ[ENV]) if os.environ.get(ENV) else None


def _raise(kind: str, path: str) -> None:
    code = getattr(errno, kind, errno.EIO)
    raise OSError(code, os.strerror(code), path)


def pwrite(fd: int, data, offset: int, path) -> int:
    """os.pwrite, or the injected fault (`path`, a str or Path, is made a str only then)."""
    if _rules is not None:
        n = _inject("pwrite", fd, data, str(path))
        if n is not None:
            return os.pwrite(fd, data[:n], offset)
    return os.pwrite(fd, data, offset)


def write(fd: int, data, path: str) -> int:
    """os.write (or the injected fault); a failure other than a full disk is reported to
    on_io_failure, then raised."""
    try:
        if _rules is not None:
            n = _inject("write", fd, data, path)
            if n is not None:
                return os.write(fd, data[:n])
        return os.write(fd, data)
    except OSError as e:
        if e.errno not in (errno.ENOSPC, errno.EDQUOT):
            for cb in list(on_io_failure):
                cb(path, e)
        raise


def _inject(op: str, fd: int, data, path: str) -> int | None:
    """None: no fault; a byte count: write only that much; or raise."""
    kind = _rules.hit(op, path)
    if kind is None:
        return None
    if kind == "short":
        if fd in _rules.short_pending or len(data) < 2:
            _rules.short_pending.discard(fd)
            _raise("ENOSPC", path)
        _rules.short_pending.add(fd)
        return len(data) // 2
    _raise(kind, path)


def fsync(fd: int, path: str) -> None:
    """os.fsync (or the injected fault); a failure is reported to on_io_failure, then raised."""
    sync(lambda: os.fsync(fd), path)


def sync(flush: Callable[[], None], path: str) -> None:
    """Run `flush` (an fsync, an mmap's msync) at a flush site of `path`: the fault seam, and a
    failure reported to on_io_failure, then raised."""
    try:
        if _rules is not None:
            kind = _rules.hit("fsync", path)
            if kind is not None:
                _raise(kind, path)
        flush()
    except OSError as e:
        for cb in list(on_io_failure):
            cb(path, e)
        raise
