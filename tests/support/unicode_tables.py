"""Hypothesis's Unicode tables, made once for a parallel run instead of once per xdist worker.

`st.text()` draws from the characters UTF-8 can encode: the first draw in a process reads that
table (and the category table) from `.hypothesis/unicode_data/`, or, on a fresh clone where it is
not there yet, computes it from every code point (~3.5 s of CPU) and writes it. Every worker of a
fresh `pytest -n 3` run computed it again. The controller starts one process that writes the
tables while the workers start and collect (~10 s); a worker waits for it before its first test
(a lock the writer holds while it runs) and then reads them."""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import tempfile
import time

# the tables `st.text()` needs; hypothesis is pinned in constraints.txt
_WRITE = ("from hypothesis.internal.charmap import charmap, intervals_from_codec\n"
          "charmap()\nintervals_from_codec('utf-8')\n")
_ENV = "PYLOG_TESTS_UNICODE_LOCK"
WAIT = 120.0  # past it a worker computes the tables itself, as without the writer

_writer: subprocess.Popen | None = None


def start(config) -> None:
    """On an xdist controller, write the tables in the background (in the workers' directory),
    holding a lock the workers inherit the name of."""
    global _writer
    if getattr(config, "workerinput", None) is not None or not config.getoption("numprocesses", None):
        return
    fd, path = tempfile.mkstemp(prefix="pylog-tests-unicode-", suffix=".lock")
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # the writer shares this open file: the lock lasts while it runs
        _writer = subprocess.Popen([sys.executable, "-c", _WRITE], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(fd,))
        os.environ[_ENV] = path
    except OSError:
        _writer = None
    finally:
        os.close(fd)
    if _writer is None:
        os.unlink(path)


def wait_for_writer() -> None:
    """On a worker, before its first test: wait until the controller's writer is done."""
    path = os.environ.get(_ENV)
    if not path:
        return
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        deadline = time.monotonic() + WAIT
        while time.monotonic() < deadline:
            try:
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                time.sleep(0.1)
    finally:
        os.close(fd)


def finish() -> None:
    """On the controller: reap the writer (long done by the end of a run) and drop its lock file."""
    global _writer
    if _writer is None:
        return
    try:
        _writer.wait(timeout=60)
    except subprocess.TimeoutExpired:
        _writer.kill()
        _writer.wait()
    _writer = None
    try:
        os.unlink(os.environ.pop(_ENV))
    except (KeyError, OSError):
        pass
