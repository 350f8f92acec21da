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


def compare_implementations(name: str, argv: list, figures: dict) -> None:
    """Print `figures` ({label: value}, this run's) beside the same benchmark's figures in
    pure Python, so every table has the pure-Python column next to the compiled one.

    The pure-Python figures come from a child `python -m bench NAME ARGV` with
    PYLOG_PURE_PYTHON=1 (the implementation is chosen once, at import). In that child
    this only hands the figures back. Labels ending in "x" are ratios (higher is better),
    others say their unit; the last column is compiled / pure Python for rates and
    ratios, pure Python / compiled for times (labels with "us" or " s" or "ms")."""
    import json
    import tempfile

    from pylog.core import fastpath

    out = os.environ.get("PYLOG_BENCH_FIGURES")
    if out:
        with open(out, "w") as f:
            json.dump(figures, f)
        return
    if not fastpath.is_compiled():
        print(f"implementation: {fastpath.implementation()}: no compiled column")
        return
    with tempfile.NamedTemporaryFile(suffix=".json") as f:
        env = {**os.environ, "PYLOG_PURE_PYTHON": "1", "PYLOG_BENCH_FIGURES": f.name}
        print(f"(running `python -m bench {name} {' '.join(argv)}` again in pure Python for the comparison)",
              flush=True)
        subprocess.run([sys.executable, "-m", "bench", name, *argv], env=env, stdout=subprocess.DEVNULL, check=True)
        pure = json.load(open(f.name))
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{name}: pure Python beside compiled (this machine, same arguments)")
    for col in ("figure", "pure Python", "compiled", "compiled gain"):
        table.add_column(col, justify="right")
    for label, value in figures.items():
        p = pure.get(label)
        is_time = any(u in label for u in (" us", " ms", " s ", "(s)", "(us)", "(ms)"))
        gain = "" if not p or not value else f"{(p / value if is_time else value / p):.2f}x"
        fmt = (lambda v: f"{v:,.2f}") if abs(value) < 100 else (lambda v: f"{v:,.0f}")
        table.add_row(label, fmt(p) if p is not None else "-", fmt(value), gain)
    Console().print(table)
