"""`python -m bench cleaner [--mb 200] [--buffer-mb 32] [--codec none]`: log cleaner throughput.

Builds a compacted partition of ~MB megabytes with the storage engine (100-byte
values, 16-byte keys, 10% distinct keys drawn uniformly, ~16 KB batches,
64 MiB segments). Each run copies it afresh (untimed), times a plain read of
the copy's segment files (8 MB chunks) and then one full cleaning of it (map
pass + rewrite + swap, fsync off); medians over the runs, wall and CPU time.
Also the cleaner's peak RSS growth against the dedupe buffer size.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import tempfile
import time
from pathlib import Path

from bench._util import compare_implementations


def build(path: Path, mb: int, codec: int, seed: int = 1):
    from pylog.core.config import TOPIC_CONFIGS
    from pylog.core.records import BatchBuilder
    from pylog.storage.log import Log

    cfg = TOPIC_CONFIGS.resolve({"cleanup.policy": "compact", "segment.bytes": str(64 << 20),
                                 "file.delete.delay.ms": "0", "min.cleanable.dirty.ratio": "0"})
    lg = Log(path, cfg, fsync=False)
    rnd = random.Random(seed)
    per_batch = 130  # ~16 KB of 126-byte records
    total_records = mb * (1 << 20) // 126
    distinct = max(1, total_records // 10)
    value = bytes(rnd.randrange(256) for _ in range(100))
    now = int(time.time() * 1000)
    written = 0
    while written < total_records:
        b = BatchBuilder(codec=codec)
        for _ in range(per_batch):
            b.append(now, b"key-%012d" % rnd.randrange(distinct), value)
        lg.append_as_leader(bytearray(b.build()), 0, now_ms=now)
        written += per_batch
    lg.roll(now)  # everything cleanable
    return lg, written, distinct


def plain_read(lg) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, bytes) of reading every segment file in 8 MB chunks."""
    t = time.perf_counter()
    c = time.process_time()
    n = 0
    for seg in lg.segments:
        with open(seg.log_path, "rb", buffering=0) as f:
            while True:
                chunk = f.read(8 << 20)
                if not chunk:
                    break
                n += len(chunk)
    return time.perf_counter() - t, time.process_time() - c, n


def _open(path: Path):
    from pylog.core.config import TOPIC_CONFIGS
    from pylog.storage.log import Log

    cfg = TOPIC_CONFIGS.resolve({"cleanup.policy": "compact", "segment.bytes": str(64 << 20),
                                 "file.delete.delay.ms": "0", "min.cleanable.dirty.ratio": "0"})
    return Log(path, cfg, fsync=False)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench cleaner")
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--buffer-mb", type=int, default=32)
    ap.add_argument("--codec", default="none", choices=["none", "lz4", "zstd"])
    ap.add_argument("--runs", type=int, default=5, help="cleanings (each of a fresh copy of the same log)")
    ap.add_argument("--dir", default=None, help="where to build the log (default: a temp dir)")
    args = ap.parse_args(argv)
    from statistics import median

    from pylog.core.records import CODEC_IDS
    from pylog.storage.cleaner import Cleaner
    from pylog.storage.offset_map import OffsetMap

    tmp = Path(tempfile.mkdtemp(prefix="bench-cleaner-", dir=args.dir))
    try:
        t = time.perf_counter()
        lg, records, distinct = build(tmp / "src" / "bench-0", args.mb, CODEC_IDS[args.codec])
        lg.close()
        src = tmp / "src" / "bench-0"
        print(f"built {sum(f.stat().st_size for f in src.glob('*.log')) / 1e6:.0f} MB, {records:,} records, "
              f"{distinct:,} distinct keys in {time.perf_counter() - t:.1f} s")
        m = OffsetMap(args.buffer_mb << 20)
        rows = []
        for run in range(args.runs):
            # every run cleans a fresh copy of the same bytes; the plain read reads
            # that copy's files just before (both from the page cache)
            work = tmp / f"run{run}" / "bench-0"
            shutil.copytree(src, work)
            lg = _open(work)
            pr_wall, pr_cpu, n = plain_read(lg)
            t = time.perf_counter()
            c = time.process_time()
            res = Cleaner(m, fsync=False).clean(lg, None, force=True)
            cl_wall, cl_cpu = time.perf_counter() - t, time.process_time() - c
            st = res.stats
            # throughput in bytes of log cleaned (several passes read some bytes more than once)
            rows.append((n / pr_wall, n / pr_cpu, n / cl_wall, n / cl_cpu, st.map_bytes_read / st.map_seconds,
                         st.bytes_read / st.clean_seconds, st, records / cl_wall, records / cl_cpu))
            print(f"run {run + 1}: plain read {n / pr_wall / 1e6:,.0f} MB/s, cleaner {n / cl_wall / 1e6:,.1f} MB/s "
                  f"(CPU: {n / pr_cpu / 1e6:,.0f} / {n / cl_cpu / 1e6:,.1f} MB/s)")
            lg.close()
            shutil.rmtree(work.parent)
        st = rows[0][6]
        print()
        print(st.report())
        print()
        med = lambda i: median(r[i] for r in rows) / 1e6  # noqa: E731
        ratio_wall = median(r[2] / r[0] for r in rows)
        ratio_cpu = median(r[3] / r[1] for r in rows)
        us = median(r[6].seconds for r in rows) / records * 1e6
        recs = lambda i: median(r[i] for r in rows)  # noqa: E731
        print(f"medians of {args.runs} runs, {n / 1e6:.0f} MB, {args.codec}:")
        print("| what | MB/s (wall) | MB/s (CPU time) | records/s (wall / CPU) | vs plain read (wall) "
              "| vs plain read (CPU) |")
        print("|---|---|---|---|---|---|")
        print(f"| plain read (8 MB chunks) | {med(0):,.0f} | {med(1):,.0f} | | 1.00x | 1.00x |")
        print(f"| cleaner (map + rewrite + swap) | {med(2):,.1f} | {med(3):,.1f} | {recs(7):,.0f} / {recs(8):,.0f} "
              f"| {ratio_wall:.3f}x | {ratio_cpu:.3f}x |")
        print(f"| - map pass | {med(4):,.1f} | | | | |")
        print(f"| - rewrite pass | {med(5):,.1f} | | | | |")
        print()
        print(f"{us:.2f} us per record (wall); bytes read (all passes) {st.bytes_read:,}; "
              f"records {st.records_read:,} -> {st.records_written:,}; "
              f"bytes {st.bytes_read:,} -> {st.bytes_written:,}; passes {st.passes}; batches copied "
              f"{st.batches_copied:,}, rebuilt {st.batches_rebuilt:,}, removed {st.batches_removed:,}")
        figures = {"cleaner records/s (wall)": recs(7), "cleaner records/s (CPU)": recs(8),
                   "cleaner MB/s (wall)": med(2), "map pass MB/s": med(4), "rewrite pass MB/s": med(5),
                   "cleaner vs plain read (CPU) x": ratio_cpu}
        if os.environ.get("PYLOG_BENCH_FIGURES"):
            compare_implementations("cleaner", argv, figures)
            return 0
        # memory: one more cleaning under tracemalloc (slower, untimed), a fresh map
        import tracemalloc

        work = tmp / "mem" / "bench-0"
        shutil.copytree(src, work)
        lg = _open(work)
        tracemalloc.start()
        try:
            m2 = OffsetMap(args.buffer_mb << 20)
            base = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            Cleaner(m2, fsync=False).clean(lg, None, force=True)
            peak = tracemalloc.get_traced_memory()[1] - base
        finally:
            tracemalloc.stop()
            lg.close()
        print(f"dedupe buffer {args.buffer_mb << 20:,} B; map form: {'dict' if m2.uses_dict else 'arrays'}, "
              f"its bound at the peak {m2.peak_bytes:,} B ({m2.size:,} keys); peak of all Python allocations "
              f"during the cleaning (tracemalloc) {peak:,} B")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    compare_implementations("cleaner", argv, figures)
    return 0
