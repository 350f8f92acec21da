"""Record format throughput: pylog vs kafka-python's `kafka.record`, same data.

    python -m bench records [--quick]

Encode: append every record to a builder and build the batch bytes.
Decode: parse the batch and materialise every record (offset, timestamp,
key, value, headers). MB/s counts key + value bytes, so the codecs compare on
the same payload. Header walk: step over a buffer of 16 KiB batches reading
only headers and checking each CRC-32C, against bytes() of the same buffer.
"""
from __future__ import annotations

import argparse
import random
import time

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from bench._util import compare_implementations
from pylog.core.records import BatchBuilder, RecordBatch, iter_headers
from pylog.core.records.header import CODEC_IDS, set_base_offset

_WORDS = [w.encode() for w in (
    "kafka log segment offset index broker partition leader replica producer consumer "
    "record batch header value key timestamp epoch sequence transaction commit abort "
    "compaction retention cleaner snapshot checkpoint fetch produce metadata topic group"
).split()]


def _value(rng: random.Random, size: int) -> bytes:
    # Word soup: compresses about as well as typical JSON-ish payloads (2-4x).
    out = bytearray()
    while len(out) < size:
        out += rng.choice(_WORDS)
        out += b" " if rng.random() < 0.8 else b"%d," % rng.randrange(100000)
    return bytes(out[:size])


def _dataset(value_size: int, batch_bytes: int, total_bytes: int, seed: int = 42):
    """Batches as lists of (timestamp, key, value)."""
    rng = random.Random(seed)
    per_batch = max(1, batch_bytes // (value_size + 12))
    n_batches = max(1, total_bytes // (per_batch * (value_size + 12)))
    ts0 = 1_700_000_000_000
    batches = []
    for b in range(n_batches):
        batches.append([
            (ts0 + b * per_batch + i, b"key-%08d" % rng.randrange(10**8), _value(rng, value_size))
            for i in range(per_batch)
        ])
    return batches


def _pylog_encode(batches, codec):
    out = []
    for recs in batches:
        bb = BatchBuilder(codec=codec, partition_leader_epoch=0)
        for ts, k, v in recs:
            bb.append(ts, k, v)
        out.append(bb.build())
    return out


def _kafka_encode(batches, codec):
    out = []
    for recs in batches:
        kb = DefaultRecordBatchBuilder(
            magic=2, compression_type=codec, is_transactional=False,
            producer_id=-1, producer_epoch=-1, base_sequence=-1, batch_size=1 << 30,
        )
        for i, (ts, k, v) in enumerate(recs):
            kb.append(i, ts, k, v, [])
        out.append(bytes(kb.build()))
    return out


def _pylog_decode(encoded):
    n = 0
    for buf in encoded:
        b = RecordBatch(buf)
        b.check_crc()  # pylog pays for the CRC, kafka-python does not
        for r in b.records():
            n += 1
            r.key, r.value, r.headers
    return n


def _kafka_decode(encoded):
    n = 0
    for buf in encoded:
        for r in DefaultRecordBatch(buf):
            n += 1
            r.key, r.value, r.headers
    return n


def _best(fn, *args, repeat: int, min_time: float = 0.0) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - t0)
    return best


def _walk_pylog(buf):
    n = 0
    for _ in iter_headers(buf, verify_crc=True):
        n += 1
    return n


def _walk_kafka(buf):
    mr = MemoryRecords(buf)
    n = 0
    while mr.has_next():
        b = mr.next_batch()
        if not b.validate_crc():
            raise AssertionError("crc")
        n += 1
    return n


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench records")
    ap.add_argument("--quick", action="store_true", help="smaller data, for a smoke run")
    args = ap.parse_args(argv)

    from rich.console import Console
    from rich.table import Table

    console = Console()
    total = (1 << 20) if args.quick else (8 << 20)
    repeat = 2 if args.quick else 5
    rows = []
    for value_size in (100, 1024):
        data = _dataset(value_size, batch_bytes=64 * 1024, total_bytes=total)
        n_records = sum(len(b) for b in data)
        payload = sum(len(k) + len(v) for b in data for _, k, v in b)
        for codec_name in ("none", "lz4", "zstd"):
            codec = CODEC_IDS[codec_name]
            ours_enc = _pylog_encode(data, codec)
            theirs_enc = _kafka_encode(data, codec)
            # Same data, both ways, before timing anything.
            assert _pylog_decode(theirs_enc) == n_records
            assert _kafka_decode(ours_enc) == n_records
            for op, ours, theirs in (
                ("encode", lambda: _pylog_encode(data, codec), lambda: _kafka_encode(data, codec)),
                ("decode", lambda: _pylog_decode(ours_enc), lambda: _kafka_decode(theirs_enc)),
            ):
                t_ours = _best(ours, repeat=repeat)
                t_theirs = _best(theirs, repeat=repeat)
                rows.append((f"{value_size} B", codec_name, op, n_records / t_ours, payload / t_ours / 1e6,
                             n_records / t_theirs, payload / t_theirs / 1e6, t_theirs / t_ours))

    table = Table(title="records: pylog vs kafka-python (best of %d)" % repeat)
    for col in ("value", "codec", "op", "pylog rec/s", "pylog MB/s", "kafka-python rec/s", "kafka-python MB/s", "ratio"):
        table.add_column(col, justify="right")
    for size, codec_name, op, r1, m1, r2, m2, ratio in rows:
        table.add_row(size, codec_name, op, f"{r1:,.0f}", f"{m1:,.1f}", f"{r2:,.0f}", f"{m2:,.1f}",
                      f"[{'green' if ratio >= 3 else 'red'}]{ratio:.1f}x[/]")
    console.print(table)

    # ---- header walk with CRC over 16 KiB batches
    data = _dataset(100, batch_bytes=16 * 1024, total_bytes=16 * 1024)
    one = _pylog_encode(data[:1], 0)[0]
    count = (16 << 20 if args.quick else 64 << 20) // len(one)
    buf = bytearray(one * count)
    for i in range(count):  # distinct base offsets; outside the CRC, so still valid
        set_base_offset(buf, i * len(one), i * 1000)
    buf = bytes(buf)
    assert _walk_pylog(buf) == count
    t_walk = _best(_walk_pylog, buf, repeat=repeat)
    t_copy = _best(lambda b: bytes(memoryview(b)), buf, repeat=repeat)
    walk_kp_buf = buf[: len(one) * min(count, 512)]  # kafka-python is slow: a smaller slice
    t_kp = _best(_walk_kafka, walk_kp_buf, repeat=repeat)
    gbs = lambda size, t: size / t / 1e9  # noqa: E731
    walk = Table(title=f"header walk with CRC-32C: {count} batches of {len(one)} bytes ({len(buf) >> 20} MiB)")
    for col in ("what", "GB/s", "batches/s"):
        walk.add_column(col, justify="right")
    walk.add_row("pylog iter_headers(verify_crc=True)", f"{gbs(len(buf), t_walk):.2f}", f"{count / t_walk:,.0f}")
    walk.add_row("bytes(buffer) copy", f"{gbs(len(buf), t_copy):.2f}", "")
    walk.add_row("kafka-python MemoryRecords + validate_crc",
                 f"{gbs(len(walk_kp_buf), t_kp):.2f}", f"{(len(walk_kp_buf) // len(one)) / t_kp:,.0f}")
    console.print(walk)
    figures = {}
    for size, codec_name, op, r1, _m1, r2, _m2, ratio in rows:
        figures[f"{size} {codec_name} {op} rec/s"] = r1
        figures[f"{size} {codec_name} {op} vs kafka-python x"] = ratio
    figures["header walk GB/s"] = gbs(len(buf), t_walk)
    compare_implementations("records", argv, figures)
    return 0
