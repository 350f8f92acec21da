"""Pieces several benchmarks share (underscore: not a benchmark itself)."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time


class Timer:
    """Wall and CPU (user + system) seconds of a block."""

    def __enter__(self):
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = time.perf_counter() - self.wall
        self.cpu = time.process_time() - self.cpu


def default_dir() -> str | None:
    """/dev/shm when it is a writable tmpfs with 2 GiB free, else None (the system temp dir)."""
    shm = "/dev/shm"
    if os.path.isdir(shm) and os.access(shm, os.W_OK):
        st = os.statvfs(shm)
        if st.f_bavail * st.f_frsize > (2 << 30):
            return shm
    return None


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_pylog_broker(args: list, *, stderr=subprocess.DEVNULL, env: dict | None = None):
    """`pylog broker start ARGS` in a subprocess, returned once it listens: (process, the address it printed)."""
    proc = subprocess.Popen([sys.executable, "-m", "pylog.cli", "broker", "start", *map(str, args)],
                            stdout=subprocess.PIPE, stderr=stderr, text=True, env=env)
    for line in proc.stdout:
        if line.startswith("pylog broker listening on "):
            return proc, line.strip().rsplit(" ", 1)[1]
    raise RuntimeError(f"pylog broker did not start (exit code {proc.poll()})")
