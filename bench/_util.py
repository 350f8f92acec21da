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

    out = os.environ.get("PYLOG_BENCH_FIGURES")
    if out:
        with open(out, "w") as f:
            json.dump(figures, f)
        return
    extensions = compiled_extensions()
    if not any(e.native is not None for e in extensions):
        from pylog.core import fastpath

        print(f"implementation: {fastpath.implementation(extensions)}: no compiled column")
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


def compiled_extensions() -> list:
    """Every package's compiled extension as its fastpath module loaded it (records, client, storage,
    CLI text)."""
    from pylog.commands import fastpath as commands_fastpath
    from pylog.core.client import fastpath as client_fastpath
    from pylog.core.records import fastpath as records_fastpath
    from pylog.storage import fastpath as storage_fastpath

    return [m.extension for m in (records_fastpath, client_fastpath, storage_fastpath, commands_fastpath)]


def open_broker_in_process(prefix: str):
    """A Broker on a temporary log dir with its whole handler table in place and its services
    started, driven by calling `dispatch` directly (no socket); run inside an event loop.
    Works on older trees too (`--compare-with`): the broker before its folders, before the
    handler table, before the start gate."""
    import asyncio
    import tempfile

    try:
        from pylog.broker.node.broker import Broker
        from pylog.broker.node.settings import build_settings
    except ModuleNotFoundError:  # the broker before its folders
        from pylog.broker.broker import Broker
        from pylog.broker.settings import build_settings

    b = Broker(build_settings({}, {}, (tempfile.mkdtemp(prefix=prefix),), "127.0.0.1:0"))
    b.open_storage()
    b.loop = asyncio.get_running_loop()
    if hasattr(b, "register_apis"):  # the broker before the handler table
        b.register_apis()
    else:
        try:  # the handler table in two parts: the rest loads while the first requests are answered
            from pylog.broker.api.handlers import the_rest
        except ImportError:
            the_rest = None
        dispatcher = getattr(b, "dispatcher", None)
        if dispatcher is not None:  # the request path in its own layer (broker/dispatch.py)
            b.start_the_rest(the_rest())
        else:
            if the_rest is not None:
                b.handlers.update((h.key, h) for h in the_rest())
            b._start_services()
            gate = getattr(b, "_gate", None)
            if gate is not None:  # what serve() does once every handler is in place
                gate.open(b.dispatch)
    b.settings.advertised_port = 9092
    return b


def dispatch_of(b):
    """The function that takes a request frame: the dispatcher's, or the Broker's in older trees."""
    dispatcher = getattr(b, "dispatcher", None)
    return dispatcher.dispatch if dispatcher is not None else b.dispatch
