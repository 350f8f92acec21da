"""Storage engine throughput: `python -m bench storage [--mb N] [--dir PATH]`.

Append (100-byte records in 16 KB and 1 MB batches) against a plain write of
the same bytes, sequential reads, and recovery against a plain read of the
same files. No fsync anywhere, so the page cache is what is measured on both
sides of each ratio.
"""
from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time

from pylog.core.config import TOPIC_CONFIGS
from pylog.core.records.batch import build_batch
from pylog.core.records.header import parse_header
from pylog.storage import Log


def _batch(batch_bytes: int) -> bytes:
    n = max(1, batch_bytes // 110)
    now = int(time.time() * 1000)
    return build_batch([(now, None, b"x" * 100) for _ in range(n)])


def _plain_write(path: str, bufs: list) -> float:
    t = time.perf_counter()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    for b in bufs:
        os.write(fd, b)
    os.close(fd)
    return time.perf_counter() - t


def _plain_read(dir: str) -> tuple[int, float]:
    t = time.perf_counter()
    total = 0
    buf = bytearray(8 << 20)
    for name in sorted(os.listdir(dir)):
        if name.endswith(".log"):
            fd = os.open(os.path.join(dir, name), os.O_RDONLY)
            while True:
                n = os.readv(fd, [buf])
                if n <= 0:
                    break
                total += n
            os.close(fd)
    return total, time.perf_counter() - t


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench storage")
    ap.add_argument("--mb", type=int, default=200, help="MB appended per batch size")
    ap.add_argument("--dir", default=None)
    args = ap.parse_args(argv)
    root = tempfile.mkdtemp(prefix="pylog-bench-", dir=args.dir)
    cfg = TOPIC_CONFIGS.resolve({"segment.bytes": str(64 << 20), "max.message.bytes": str(2 << 20)})
    try:
        for label, bsize in (("16 KB", 16384), ("1 MB", 1 << 20)):
            template = _batch(bsize)
            count = (args.mb << 20) // len(template)
            recs = parse_header(template).record_count
            bufs = [bytearray(template) for _ in range(count)]
            d = os.path.join(root, f"t-{bsize}")
            lg = Log(d, cfg, fsync=False)
            t = time.perf_counter()
            for b in bufs:
                lg.append_as_leader(b, 0)
            el = time.perf_counter() - t
            mb = count * len(template) / 1e6
            plain = _plain_write(os.path.join(root, "plain.bin"), bufs)
            os.unlink(os.path.join(root, "plain.bin"))
            print(f"append {label:5} batches: {mb / el:8.1f} MB/s {count * recs / el / 1e6:6.2f} M records/s"
                  f" | plain write {mb / plain:8.1f} MB/s | ratio {plain / el:.2f}")
            if bsize == 16384:
                off, total = 0, 0
                t = time.perf_counter()
                while off < lg.log_end_offset:
                    fs = lg.read(off, 1 << 20)
                    total += len(fs.read_bytes())
                    off = _next_offset(fs)
                el = time.perf_counter() - t
                print(f"sequential read (1 MB fetches, pread): {total / 1e6 / el:8.1f} MB/s")
            lg.close()
        # recovery: unclean open of the 16 KB log from offset 0, against a plain read
        d = os.path.join(root, "t-16384")
        total, plain = _plain_read(d)
        t = time.perf_counter()
        lg = Log(d, cfg, had_clean_shutdown=False, recovery_point=0, fsync=False)
        el = time.perf_counter() - t
        lg.close()
        print(f"recovery: {total / 1e9 / el:6.2f} GB/s | plain read {total / 1e9 / plain:6.2f} GB/s | ratio {plain / el:.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0


def _next_offset(fs) -> int:
    from pylog.core.records.header import iter_headers
    last = None
    for _, h in iter_headers(fs.read_bytes(), verify_crc=False):
        last = h
    return last.next_offset
