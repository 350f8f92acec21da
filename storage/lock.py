"""The `.lock` file that keeps a second process out of a log dir (fcntl.flock)."""
from __future__ import annotations

import fcntl
import os
from pathlib import Path

from pylog.core.errors import DataError

LOCK_FILE = ".lock"


class DirLock:
    """An exclusive, non-blocking flock on `<dir>/.lock`, held until release()."""

    def __init__(self, log_dir: str | os.PathLike):
        self.dir = Path(log_dir)
        self.path = self.dir / LOCK_FILE
        self._fd: int | None = None

    @property
    def locked(self) -> bool:
        """True while this process holds the lock."""
        return self._fd is not None

    def acquire(self) -> "DirLock":
        """Take the lock (non-blocking); raises DataError when another process holds it."""
        if self._fd is not None:
            return self
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise DataError(f"log dir {self.dir} is locked by another pylog process (or a Kafka broker): {self.path}") from None
        except OSError:
            os.close(fd)
            raise
        self._fd = fd
        return self

    def release(self) -> None:
        """Give the lock up."""
        if self._fd is not None:
            try:
                fcntl.flock(self._fd, fcntl.LOCK_UN)
            finally:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> "DirLock":
        return self.acquire()

    def __exit__(self, *exc) -> None:
        self.release()


def in_use(log_dir: str | os.PathLike) -> bool:
    """True when another process (a running broker) holds the log dir's lock.

    Read-only: a missing `.lock` means no broker holds it, and none is created."""
    path = Path(log_dir) / LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        # Apache Kafka (Java's FileChannel.tryLock) takes a POSIX record lock, which flock does not see
        fcntl.lockf(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except (BlockingIOError, PermissionError):
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # closing releases the probe's shared lock
    return False
