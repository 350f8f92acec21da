"""Storage engine throughput: `python -m bench storage [--mb N] [--reps R] [--dir PATH]`.

Append (100-byte records in 16 KB and 1 MB batches) against a plain write of
the same bytes, sequential reads, and recovery against a plain read of the
same files.

Method (so that a ratio compares like with like):
- both sides run in this process, on the same batch bytes (one pre-built list
  of buffers per side, built outside the timing), into the same directory;
- no fsync on either side (the Log is opened with fsync=False; the plain
  write never fsyncs);
- the files live on a tmpfs (/dev/shm when present, or --dir): no disk
  writeback, which otherwise made single runs swing by 2-3x; every run writes
  fresh files (the previous run's are deleted first), so both sides pay the
  same page allocation;
- the two sides alternate R times (who goes first alternates too) and the
  figures are medians: MB/s of each side, and the median of the per-pair
  ratios (with their min-max);
- the ratio is also given on CPU time (user + system of this process), which
  other jobs sharing the cores do not inflate the way they inflate wall time.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time

from bench._util import Timer, compare_implementations, default_dir
from pylog.core.config import TOPIC_CONFIGS
from pylog.core.records.batch import build_batch
from pylog.core.records.header import iter_headers, parse_header
from pylog.storage import Log


def _batch(batch_bytes: int) -> bytes:
    n = max(1, batch_bytes // 110)
    now = int(time.time() * 1000)
    return build_batch([(now, None, b"x" * 100) for _ in range(n)])


def _plain_write(path: str, bufs: list) -> Timer:
    with Timer() as t:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        for b in bufs:
            os.write(fd, b)
        os.close(fd)
    return t


def _append(d: str, cfg, bufs: list) -> tuple[Timer, Log]:
    lg = Log(d, cfg, fsync=False)
    append = lg.append_as_leader
    with Timer() as t:
        for b in bufs:
            append(b, 0)
    return t, lg


def _plain_read(dir: str) -> tuple[int, Timer]:
    total = 0
    with Timer() as t:
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
    return total, t


def _sequential_read(lg: Log) -> tuple[int, float]:
    off, total = 0, 0
    t = time.perf_counter()
    while off < lg.log_end_offset:
        fs = lg.read(off, 1 << 20)
        data = fs.read_bytes()
        total += len(data)
        off = _next_offset(data)
    return total, time.perf_counter() - t


def _next_offset(data: bytes) -> int:
    last = None
    for _, h in iter_headers(data, verify_crc=False):
        last = h
    return last.next_offset


def _rm(path: str) -> None:
    if os.path.isdir(path):
        shutil.rmtree(path)
    elif os.path.exists(path):
        os.unlink(path)


def _fmt_ratio(ref: list, ours: list) -> str:
    """Median of the per-pair wall-time ratios (min-max), and the same on CPU time."""
    wall = [r.wall / o.wall for r, o in zip(ref, ours)]
    cpu = [r.cpu / o.cpu for r, o in zip(ref, ours) if o.cpu > 0]
    return (f"{statistics.median(wall):.2f} (min {min(wall):.2f}, max {max(wall):.2f});"
            f" on CPU time {statistics.median(cpu):.2f}")


def _med(timers: list) -> float:
    return statistics.median(t.wall for t in timers)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench storage")
    ap.add_argument("--mb", type=int, default=200, help="MB appended per batch size")
    ap.add_argument("--reps", type=int, default=5, help="interleaved repetitions (medians reported)")
    ap.add_argument("--dir", default=None, help="where to write (default: /dev/shm when it is a usable tmpfs)")
    args = ap.parse_args(argv)
    where = args.dir or default_dir()
    root = tempfile.mkdtemp(prefix="pylog-bench-", dir=where)
    print(f"files in {root} ({args.mb} MB per run, {args.reps} interleaved runs per side, no fsync on either side)")
    cfg = TOPIC_CONFIGS.resolve({"segment.bytes": str(64 << 20), "max.message.bytes": str(2 << 20)})
    figures: dict = {}
    try:
        for label, bsize in (("16 KB", 16384), ("1 MB", 1 << 20)):
            template = _batch(bsize)
            count = (args.mb << 20) // len(template)
            recs = parse_header(template).record_count
            mb = count * len(template) / 1e6
            logdir = os.path.join(root, f"t-{bsize}")
            plain_path = os.path.join(root, "plain.bin")
            app_times, plain_times = [], []
            for rep in range(args.reps):
                # fresh buffers each run: the append patches offsets into its buffers in place
                app_bufs = [bytearray(template) for _ in range(count)]
                plain_bufs = [bytearray(template) for _ in range(count)]
                _rm(logdir)
                _rm(plain_path)
                order = ("append", "plain") if rep % 2 == 0 else ("plain", "append")
                for side in order:
                    if side == "append":
                        el, lg = _append(logdir, cfg, app_bufs)
                        lg.close()
                        app_times.append(el)
                    else:
                        plain_times.append(_plain_write(plain_path, plain_bufs))
                del app_bufs, plain_bufs
            _rm(plain_path)
            app, plain = _med(app_times), _med(plain_times)
            print(f"append {label:5} batches: {mb / app:8.1f} MB/s {count * recs / app / 1e6:6.2f} M records/s"
                  f" {app / count * 1e6:8.1f} us/batch (CPU {statistics.median(t.cpu for t in app_times) / count * 1e6:.1f})"
                  f" | plain write {mb / plain:8.1f} MB/s | ratio {_fmt_ratio(plain_times, app_times)}")
            figures[f"append {label} batch (us)"] = app / count * 1e6
            figures[f"append {label} batch, CPU (us)"] = statistics.median(t.cpu for t in app_times) / count * 1e6
            figures[f"append {label} MB/s"] = mb / app
            if bsize == 16384:
                lg = Log(logdir, cfg, fsync=False)
                reads = [_sequential_read(lg) for _ in range(args.reps)]
                lg.close()
                total = reads[0][0]
                print(f"sequential read (1 MB fetches, pread): {total / 1e6 / statistics.median(t for _, t in reads):8.1f} MB/s")
        # recovery: unclean open of the 16 KB log from offset 0, against a plain read of its .log files
        d = os.path.join(root, "t-16384")
        rec_times, plain_times = [], []
        total = 0
        for rep in range(args.reps):
            order = ("recover", "plain") if rep % 2 == 0 else ("plain", "recover")
            for side in order:
                if side == "plain":
                    total, el = _plain_read(d)
                    plain_times.append(el)
                else:
                    with Timer() as t:
                        lg = Log(d, cfg, had_clean_shutdown=False, recovery_point=0, fsync=False)
                    rec_times.append(t)
                    lg.close()
        rec, plain = _med(rec_times), _med(plain_times)
        print(f"recovery: {total / 1e9 / rec:6.2f} GB/s | plain read {total / 1e9 / plain:6.2f} GB/s"
              f" | ratio {_fmt_ratio(plain_times, rec_times)}")
        figures["recovery GB/s"] = total / 1e9 / rec
    finally:
        shutil.rmtree(root, ignore_errors=True)
    compare_implementations("storage", argv, figures)
    return 0
