"""The batch walkers, CPU time per batch: `python -m bench walkers [--records N] [--batches N] [--reps R]`.

One log file of `--batches` v2 batches of `--records` 100-byte records (defaults: 148 records,
about 16 KB a batch, 4,096 batches = 64 MB) on a tmpfs, walked by every user of the one batch
walker (core.records.header.iter_headers):

- recover          LogSegment.recover: structure, CRC, offsets, offset and time index rebuilt
- iter_headers     the walker itself over the bytes in memory, CRC checked
- scan_log         dump-segment / verify / salvage: the file mmapped, CRC checked
- read_batches     the cleaner and Spark jobs: pread in 8 MB chunks, CRC checked
- segment.batches  the segment's header walk (load_tail, time lookups): no CRC

Best of R runs of process (CPU) time, so other jobs sharing the cores inflate it less than
wall time. Run it with PYTHONPATH pointing a `pylog` package at another tree for an A/B.
"""
from __future__ import annotations

import argparse
import os
import shutil
import struct
import tempfile
import time

from bench.storage import default_dir
from pylog.core.records import BatchBuilder
from pylog.core.records.header import iter_headers
from pylog.storage.scan import read_batches, scan_log
from pylog.storage.segment import LogSegment


def _best(fn, reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t = time.process_time()
        fn()
        best = min(best, time.process_time() - t)
    return best


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench walkers")
    ap.add_argument("--records", type=int, default=148, help="100-byte records per batch")
    ap.add_argument("--batches", type=int, default=4096)
    ap.add_argument("--reps", type=int, default=7)
    args = ap.parse_args(argv)
    root = tempfile.mkdtemp(prefix="pylog-walkers-", dir=default_dir())
    try:
        b = BatchBuilder()
        for i in range(args.records):
            b.append(1_700_000_000_000 + i, None, b"x" * 100)
        template = bytearray(b.build())
        parts = []
        for i in range(args.batches):
            struct.pack_into(">q", template, 0, i * args.records)  # baseOffset is outside the CRC
            parts.append(bytes(template))
        data = b"".join(parts)
        path = os.path.join(root, "00000000000000000000.log")
        with open(path, "wb") as f:
            f.write(data)

        def recover():
            seg = LogSegment(root, 0)
            seg.recover()
            seg.close()

        def walk():
            for _ in iter_headers(data, verify_crc=True):
                pass

        def scan():
            for _ in scan_log(path):
                pass

        def chunks():
            fd = os.open(path, os.O_RDONLY)
            try:
                for _ in read_batches(fd, 0, len(data), path):
                    pass
            finally:
                os.close(fd)

        def headers():
            seg = LogSegment(root, 0)
            try:
                for _ in seg.batches(0):
                    pass
            finally:
                seg.close()

        print(f"{args.batches} batches of {len(template)} bytes ({len(data) / 1e6:.0f} MB), best of {args.reps}, CPU time")
        for name, fn in (("recover", recover), ("iter_headers", walk), ("scan_log", scan), ("read_batches", chunks),
                         ("segment.batches", headers)):
            t = _best(fn, args.reps)
            print(f"{name:16} {len(data) / t / 1e9:7.2f} GB/s {t / args.batches * 1e6:8.2f} us/batch")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0
