"""`python -m bench cleaner [--mb 200] [--buffer-mb 32] [--codec none]`: log cleaner throughput.

Builds a compacted partition of ~MB megabytes with the storage engine (100-byte
values, 16-byte keys, 10% distinct keys drawn uniformly, ~16 KB batches,
64 MiB segments), then times a plain read of the same segment files (8 MB
chunks) against one full cleaning (map pass + rewrite + swap, fsync off), and
measures the cleaner's peak RSS growth against the dedupe buffer size.
"""
from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import tempfile
import time
from pathlib import Path


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


def plain_read(lg) -> tuple[float, int]:
    t = time.perf_counter()
    n = 0
    for seg in lg.segments:
        with open(seg.log_path, "rb", buffering=0) as f:
            while True:
                chunk = f.read(8 << 20)
                if not chunk:
                    break
                n += len(chunk)
    return time.perf_counter() - t, n


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench cleaner")
    ap.add_argument("--mb", type=int, default=200)
    ap.add_argument("--buffer-mb", type=int, default=32)
    ap.add_argument("--codec", default="none", choices=["none", "lz4", "zstd"])
    args = ap.parse_args(argv)
    from pylog.core.records import CODEC_IDS
    from pylog.storage.cleaner import Cleaner
    from pylog.storage.offset_map import OffsetMap

    tmp = Path(tempfile.mkdtemp(prefix="bench-cleaner-"))
    try:
        t = time.perf_counter()
        lg, records, distinct = build(tmp / "bench-0", args.mb, CODEC_IDS[args.codec])
        size = sum(s.size for s in lg.segments)
        print(f"built {size / 1e6:.0f} MB, {records:,} records, {distinct:,} distinct keys, "
              f"{len(lg.segments)} segments in {time.perf_counter() - t:.1f} s")
        best_read = min(plain_read(lg)[0] for _ in range(2))
        read_mbs = size / 1e6 / best_read
        rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        m = OffsetMap(args.buffer_mb << 20)
        t = time.perf_counter()
        res = Cleaner(m, fsync=False).clean(lg, None, force=True)
        secs = time.perf_counter() - t
        rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        st = res.stats
        clean_mbs = st.bytes_read / 1e6 / secs
        print(res.stats.report())
        print()
        print("| what | MB/s | vs plain read |")
        print("|---|---|---|")
        print(f"| plain read (8 MB chunks) | {read_mbs:,.0f} | 1.00x |")
        print(f"| cleaner (map + rewrite + swap), {args.codec} | {clean_mbs:,.1f} | {clean_mbs / read_mbs:.3f}x |")
        print(f"| - map pass only | {st.map_bytes_read / 1e6 / st.map_seconds:,.1f} | |")
        print(f"| - rewrite pass only | {st.bytes_read / 1e6 / st.clean_seconds:,.1f} | |")
        print()
        print(f"records {st.records_read:,} -> {st.records_written:,}; bytes {st.bytes_read:,} -> {st.bytes_written:,}; "
              f"passes {st.passes}; map utilization {100 * st.buffer_utilization:.1f}%")
        print(f"dedupe buffer {args.buffer_mb << 20:,} B, map arrays {m.memory_bytes:,} B, "
              f"peak RSS growth during cleaning {rss1 - rss0:,} B "
              f"(= map + {(rss1 - rss0 - m.memory_bytes) / 1e6:.1f} MB)")
        lg.close()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0
