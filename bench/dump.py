"""Benchmark for issue 4: dump-segment (batch level, deep iteration) and verify
against a plain read of the same files.

    python -m bench dump [--mb 200] [--dir DIR]

Builds a partition with the storage engine (100-byte records in ~16 KB
uncompressed batches), then times, each through a real `pylog` process with
stdout to /dev/null: `dump-segment` (batch level), `dump-segment
--deep-iteration`, and `verify`; the baseline reads the same .log files in
8 MB chunks.
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


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


def plain_read(files) -> float:
    t = time.perf_counter()
    for f in files:
        with open(f, "rb", buffering=0) as fh:
            while fh.read(8 << 20):
                pass
    return time.perf_counter() - t


def timed(args) -> float:
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
    ap.add_argument("--dir", default=None)
    a = ap.parse_args(argv)
    root = Path(a.dir or tempfile.mkdtemp(prefix="pylog-bench-dump-"))
    pdir = root / "bench-0"
    try:
        batches, records = build(pdir, a.mb)
        logs = sorted(pdir.glob("*.log"))
        size = sum(p.stat().st_size for p in logs)
        plain = min(plain_read(logs) for _ in range(3))
        dump = min(timed(["dump-segment", *logs]) for _ in range(2))
        verify = min(timed(["verify", "--no-progress", pdir]) for _ in range(2))
        deep = timed(["dump-segment", "--deep-iteration", *logs])
        mbs = size / 1e6
        print(f"log: {mbs:.0f} MB, {batches} batches, {records} records (100-byte records, 16 KB batches)")
        print(f"plain read           {mbs / plain:8.0f} MB/s")
        print(f"dump (batch level)   {mbs / dump:8.0f} MB/s  {records / dump:12,.0f} records/s  ratio {plain / dump:.2f}x")
        print(f"verify               {mbs / verify:8.0f} MB/s  {records / verify:12,.0f} records/s  ratio {plain / verify:.2f}x")
        print(f"dump --deep-iteration{mbs / deep:8.0f} MB/s  {records / deep:12,.0f} records/s  ratio {plain / deep:.2f}x")
    finally:
        if a.dir is None:
            shutil.rmtree(root, ignore_errors=True)
    return 0
