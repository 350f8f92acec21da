"""Benchmark: dump-segment (batch level, deep iteration) and verify
against a plain read of the same files.

    python -m bench dump [--mb 200] [--reps 5] [--dir DIR]

Builds a partition with the storage engine (100-byte records in ~16 KB
uncompressed batches). Method:
- the tools run in this process (their click commands, output to /dev/null),
  like the plain read they are compared with, so the ratio compares the work
  on the bytes, not Python's start-up; the start-up of a real `pylog` process
  is measured separately (a dump of an empty segment) and so is one full
  process run of each tool, for the end-to-end figure;
- the plain read reads the same .log files in 8 MB chunks into one reused
  buffer (the fastest way to read them from Python);
- files sit on a tmpfs (/dev/shm when usable, or --dir) or at least hot in
  the page cache, for both sides;
- each tool and the plain read alternate R times; figures are medians, and
  ratios are also given on CPU time (user + system), which other jobs sharing
  the cores inflate less than wall time.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._util import Timer, default_dir


def build(dir: Path, mb: int) -> tuple[int, int]:
    from pylog.core.config import TOPIC_CONFIGS
    from pylog.core.records import BatchBuilder
    from pylog.storage.log import Log

    b = BatchBuilder()
    value = b"v" * 80
    while b.size_in_bytes() < 16 * 1024 - 120:
        b.append(1_700_000_000_000, b"key-%08d" % b.record_count, value)
    template = b.build()
    per_batch = b.record_count
    log = Log(dir, TOPIC_CONFIGS.resolve({}), fsync=False)
    n = (mb << 20) // len(template)
    for _ in range(n):
        log.append_as_leader(bytearray(template), 0)
    log.take_snapshot()
    log.close()
    return n, n * per_batch


def plain_read(files) -> Timer:
    with Timer() as t:
        buf = bytearray(8 << 20)
        for f in files:
            with open(f, "rb", buffering=0) as fh:
                while fh.readinto(buf):
                    pass
    return t


def in_process(args) -> Timer:
    """Run a pylog command in this process with stdout to /dev/null."""
    from pylog.cli.main import cli

    saved = sys.stdout
    with open(os.devnull, "w") as null:
        sys.stdout = null
        try:
            with Timer() as t:
                try:
                    rv = cli.main(args=[str(a) for a in args], prog_name="pylog", standalone_mode=False)
                except SystemExit as e:
                    rv = e.code
                null.flush()
        finally:
            sys.stdout = saved
    if rv:
        raise SystemExit(f"pylog {' '.join(map(str, args))} exited {rv}")
    return t


def process(args) -> float:
    exe = shutil.which("pylog")
    cmd = ([exe] if exe else [sys.executable, "-m", "pylog.cli"]) + [str(a) for a in args]
    t = time.perf_counter()
    rc = subprocess.run(cmd, stdout=subprocess.DEVNULL).returncode
    elapsed = time.perf_counter() - t
    if rc != 0:
        raise SystemExit(f"{' '.join(cmd)} exited {rc}")
    return elapsed


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench dump")
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--reps", type=int, default=5, help="interleaved repetitions (medians reported)")
    ap.add_argument("--deep-reps", type=int, default=3, help="repetitions of the (slow) deep iteration")
    ap.add_argument("--dir", default=None)
    a = ap.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="pylog-bench-dump-", dir=a.dir or default_dir()))
    pdir = root / "bench-0"
    try:
        batches, records = build(pdir, a.mb)
        logs = sorted(pdir.glob("*.log"))
        size = sum(p.stat().st_size for p in logs)
        mbs = size / 1e6
        empty = root / "empty-0" / "00000000000000000000.log"
        empty.parent.mkdir()
        empty.touch()
        tools = {
            "dump (batch level)": (["dump-segment", *logs], a.reps),
            "verify": (["verify", "--no-progress", pdir], a.reps),
            "dump --deep-iteration": (["dump-segment", "--deep-iteration", *logs], a.deep_reps),
        }
        in_process(["dump-segment", empty])  # imports, outside the timing
        plain_all: list[Timer] = []
        results = {}
        for name, (args, reps) in tools.items():
            ours, ref = [], []
            for rep in range(reps):
                order = (0, 1) if rep % 2 == 0 else (1, 0)
                for side in order:
                    if side == 0:
                        ours.append(in_process(args))
                    else:
                        ref.append(plain_read(logs))
            plain_all += ref
            results[name] = (ours, ref)
        startup = statistics.median(process(["dump-segment", empty]) for _ in range(3))
        whole = {name: process(args) for name, (args, _) in tools.items() if "deep" not in name}

        plain = statistics.median(t.wall for t in plain_all)
        print(f"log: {mbs:.0f} MB in {root}, {batches} batches, {records} records (100-byte records, 16 KB batches); "
              f"medians of {a.reps} interleaved runs ({a.deep_reps} for deep iteration), in process")
        print(f"plain read              {mbs / plain:8.0f} MB/s")
        for name, (ours, ref) in results.items():
            w = statistics.median(t.wall for t in ours)
            wall_ratio = statistics.median(r.wall / o.wall for r, o in zip(ref, ours))
            cpu_ratio = statistics.median(r.cpu / o.cpu for r, o in zip(ref, ours) if o.cpu > 0)
            c = statistics.median(t.cpu for t in ours)
            print(f"{name:22}  {mbs / w:8.0f} MB/s  {records / w:12,.0f} records/s  ratio {wall_ratio:.2f}x"
                  f" | on CPU time: {records / c:12,.0f} records/s, ratio {cpu_ratio:.2f}x")
        print(f"process start-up (pylog dump-segment of an empty file): {startup:.3f} s")
        for name, el in whole.items():
            print(f"{name} as a pylog process, start-up included: {el:.3f} s = {mbs / el:.0f} MB/s")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0
