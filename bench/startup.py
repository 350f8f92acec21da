"""`python -m bench startup`: what a one-record `pylog produce` costs from exec to exit, per tree;
with --first-answer, how soon a fresh `pylog broker start` answers its first request.

    python -m bench startup [--runs N] [--rev REV ...] [--broker HOST:PORT]
    python -m bench startup --first-answer [--runs N] [--rev REV ...]

--first-answer: each run spawns `python -m pylog.cli broker start` (its defaults) on a fresh log dir
and a free port, and from the spawn connects to the port every 0.5 ms until it accepts, sends
ApiVersions (v3) and waits for the answer: spawn to answer (wall), and the broker's CPU (user +
system, /proc) when it answered; then the broker is stopped (SIGTERM). Also measured the same way:
`python -c pass` (the interpreter's floor with this install's site-packages and .pth files).

Each run is a fresh `python -m pylog.cli produce TOPIC -b HOST:PORT` of one line, as a user runs
it; its CPU (user + system, from wait4) and wall time are kept, min and median of --runs. Without
--rev the tree is this install; with --rev (repeatable, e.g. `--rev main --rev HEAD`) each
revision is checked out into a temporary tree of pylog's package layout, compiled to .pyc, and
run from PYTHONPATH (the runs of the trees interleaved, so load swings hit all alike). A tree
whose C sources equal this checkout's takes this install's extension; others build their own.
One `pylog broker start` of this install serves every run. Also printed: the modules each
tree's produce imports (`python -X importtime`).
"""
from __future__ import annotations

import argparse
import compileall
import glob
import io
import os
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

from bench.client import start_broker, stop_broker

ROOT = Path(__file__).resolve().parents[1]
NOT_PRODUCT = {"tests", "bench"}


def packages_at(rev: str) -> list[str]:
    """REV's top-level folders with an __init__.py (the parts setup.py installs as pylog.<folder>)."""
    names = subprocess.run(["git", "-C", str(ROOT), "ls-tree", "-r", "--name-only", rev],
                           check=True, capture_output=True, text=True).stdout.split()
    return sorted({n.split("/")[0] for n in names if n.count("/") == 1 and n.endswith("/__init__.py")} - NOT_PRODUCT)
C_SOURCES = ("*.c", "*.h")  # the compiled extensions' sources, wherever their owner packages keep them


def make_tree(rev: str, parent: str) -> str:
    """REV's pylog in PARENT/REV/pylog (the installed layout), compiled; the directory for PYTHONPATH."""
    top = Path(parent) / rev.replace("/", "_")
    src = top / "src"
    src.mkdir(parents=True)
    parts = packages_at(rev)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", rev, *parts, "setup.py", "pyproject.toml",
                              "README.md"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tf:
        tf.extractall(src)
    same_c = subprocess.run(["git", "-C", str(ROOT), "diff", "--quiet", rev, "--", *C_SOURCES]).returncode == 0
    installed = [Path(p) for p in glob.glob(str(ROOT / "**" / "_speedups*.so"), recursive=True)
                 if "build" not in Path(p).relative_to(ROOT).parts]
    if same_c and installed:
        for so in installed:
            shutil.copy(so, src / so.parent.relative_to(ROOT))
    else:
        subprocess.run([sys.executable, "setup.py", "-q", "build_ext", "--inplace"], cwd=src, check=False,
                       capture_output=True)
    (top / "pylog").mkdir()
    (top / "pylog" / "__init__.py").write_text("")
    for p in parts:
        (src / p).rename(top / "pylog" / p)
    compileall.compile_dir(str(top / "pylog"), quiet=1)
    return str(top)


def one_run(env: dict, topic: str, bs: str) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one produce of one record."""
    t = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "pylog.cli", "produce", topic, "-b", bs], stdin=subprocess.PIPE,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    p.stdin.write(b"startup\n")
    p.stdin.close()
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)  # the child's own rusage: Popen.wait would reap it first
    wall = time.perf_counter() - t
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise RuntimeError(f"produce exited {p.returncode}: {err.decode(errors='replace')[-1000:]}")
    return usage.ru_utime + usage.ru_stime, wall


def imported(env: dict, topic: str, bs: str) -> int:
    r = subprocess.run([sys.executable, "-X", "importtime", "-m", "pylog.cli", "produce", topic, "-b", bs],
                       input=b"startup\n", capture_output=True, env=env, check=True)
    return sum(1 for line in r.stderr.decode().splitlines() if line.startswith("import time:")) - 1


def _api_versions() -> bytes:
    body = struct.pack(">hhih", 18, 3, 1, 5) + b"bench" + b"\x00" + b"\x06pylog\x021\x00"  # v3: flexible
    return struct.pack(">i", len(body)) + body


def _cpu_s(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def first_answer(env: dict, workdir: str) -> tuple[float, float]:
    """(wall seconds from spawn to the first ApiVersions answer, the broker's CPU seconds then)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    data = tempfile.mkdtemp(dir=workdir)
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-m", "pylog.cli", "broker", "start", "--listen", f"127.0.0.1:{port}",
                          "--log-dir", os.path.join(data, "data")], stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, env=env)
    try:
        while True:
            if p.poll() is not None:
                raise RuntimeError(f"broker start exited {p.returncode}")
            try:
                c = socket.create_connection(("127.0.0.1", port), timeout=30)
                break
            except OSError:
                time.sleep(0.0005)
        with c:
            c.sendall(_api_versions())
            got = c.recv(10)  # size, correlation id, error code: the rest follows in the same write
            wall = time.perf_counter() - t0
            cpu = _cpu_s(p.pid)
        if len(got) < 10 or struct.unpack_from(">ih", got, 4) != (1, 0):
            raise RuntimeError(f"ApiVersions was not answered (got {got!r})")
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(60)
        shutil.rmtree(data, ignore_errors=True)
    return wall, cpu


def interpreter_floor(env: dict) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
    return time.perf_counter() - t0


def main_first_answer(a, workdir: str) -> int:
    trees = {rev: make_tree(rev, workdir) for rev in a.rev} or {"this install": None}
    envs = {name: dict(os.environ, **({"PYTHONPATH": path} if path else {})) for name, path in trees.items()}
    got = {name: [] for name in trees}
    floor = []
    for i in range(a.runs):
        for name in (list(trees) if i % 2 == 0 else list(trees)[::-1]):
            got[name].append(first_answer(envs[name], workdir))
        floor.append(interpreter_floor(envs[next(iter(trees))]))
    print(f"`pylog broker start` (python -m pylog.cli, fresh log dir): spawn to the first ApiVersions answer, "
          f"{a.runs} runs each, interleaved; load average {os.getloadavg()[0]:.1f}\n")
    print("| tree | wall min s | wall median s | broker CPU at answer, min s | median s |")
    print("|---|---:|---:|---:|---:|")
    for name, runs in got.items():
        wall = [w for w, _ in runs]
        cpu = [c for _, c in runs]
        print(f"| {name} | {min(wall):.3f} | {statistics.median(wall):.3f} | {min(cpu):.2f} | "
              f"{statistics.median(cpu):.2f} |")
    print(f"| `python -c pass` (floor) | {min(floor):.3f} | {statistics.median(floor):.3f} | | |")
    return 0


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench startup")
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--rev", action="append", default=[], help="a git revision to measure (repeatable)")
    ap.add_argument("--broker", default="pylog", help="pylog, or HOST:PORT of a running broker")
    ap.add_argument("--first-answer", action="store_true",
                    help="time a fresh `pylog broker start` from spawn to its first ApiVersions answer")
    a = ap.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="bench-startup-")
    if a.first_answer:
        try:
            return main_first_answer(a, workdir)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)
    proc = None
    try:
        trees = {rev: make_tree(rev, workdir) for rev in a.rev} or {"this install": None}
        if a.broker == "pylog":
            proc, bs = start_broker("pylog", workdir)
        else:
            bs = a.broker
        topic = f"startup-{int(time.time())}"
        subprocess.run([sys.executable, "-m", "pylog.cli", "topics", "create", topic, "-b", bs], check=True,
                       capture_output=True)
        envs = {name: dict(os.environ, **({"PYTHONPATH": path} if path else {})) for name, path in trees.items()}
        got = {name: [] for name in trees}
        for i in range(a.runs):
            for name in (list(trees) if i % 2 == 0 else list(trees)[::-1]):
                got[name].append(one_run(envs[name], topic, bs))
        print(f"one-record `pylog produce` (python -m pylog.cli), {a.runs} runs each, interleaved; "
              f"load average {os.getloadavg()[0]:.1f}\n")
        print("| tree | CPU min s | CPU median s | wall median s | modules imported |")
        print("|---|---:|---:|---:|---:|")
        for name, runs in got.items():
            cpu = [c for c, _ in runs]
            wall = [w for _, w in runs]
            print(f"| {name} | {min(cpu):.3f} | {statistics.median(cpu):.3f} | {statistics.median(wall):.3f} "
                  f"| {imported(envs[name], topic, bs)} |")
    finally:
        stop_broker(proc)
        shutil.rmtree(workdir, ignore_errors=True)
    return 0
