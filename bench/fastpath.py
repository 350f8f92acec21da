"""The hot functions, pure Python beside compiled, in one process on the same inputs.

    python -m bench fastpath [--quick]

Each row calls the pure-Python reference and the compiled twin (each package's fastpath module)
alternately on the same data and keeps the best CPU time (user + system of this
process, which other jobs on shared cores inflate less than wall time). "mixed"
records differ in size and key (the record-by-record path of the pure-Python code);
"run" records share one framing (the strided path the pure-Python code has for them).
The validating append rows time storage.log_validator.validate_fast, the whole check
of a produce request's batch (headers, CRC, every record's framing).
"""
from __future__ import annotations

import argparse
import time

from pylog.commands import produce_input
from bench._util import compiled_extensions
from pylog.core import fastpath
from pylog.core.client import partitioner
from pylog.core.config import TOPIC_CONFIGS
from pylog.core.records import batch, framing
from pylog.storage import compaction_rules, log_validator


def _best_cpu(fn, args, reps: int, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        t = time.process_time()
        for _ in range(reps):
            fn(*args)
        best = min(best, (time.process_time() - t) / reps)
    return best


def _records(n: int, mixed: bool, now: int):
    if mixed:
        return [(now + i % 7, b"key-%d" % i, b"x" * (90 + i % 20)) for i in range(n)]
    return [(now, None, b"x" * 100) for _ in range(n)]


def _encode(encode_record, recs):
    base = recs[0][0]
    return b"".join([encode_record(i, ts - base, k, v, ()) for i, (ts, k, v) in enumerate(recs)])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench fastpath")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    extensions = compiled_extensions()
    if any(e.native is None for e in extensions):
        print(f"implementation: {fastpath.implementation(extensions)}: nothing to compare")
        return 1
    records, client, storage, commands = (e.native for e in extensions)
    rounds = 3 if args.quick else 7
    now = int(time.time() * 1000)
    cfg = TOPIC_CONFIGS.resolve({"segment.bytes": str(64 << 20), "max.message.bytes": str(2 << 20)})
    rows = []

    def row(label, unit_count, unit, py, c, data_args, reps):
        t_py = _best_cpu(py, data_args, reps, rounds)
        t_c = _best_cpu(c, data_args, reps, rounds)
        rows.append((label, t_py * 1e6, t_c * 1e6, unit_count / t_py, unit_count / t_c, unit, t_py / t_c))

    for size, label in ((16384, "16 KB"), (1 << 20, "1 MB")):
        n = size // 110
        reps = max(1, 30000 // n) if args.quick else max(2, 200000 // n)
        for mixed in (False, True):
            kind = "mixed" if mixed else "run"
            recs = _records(n, mixed, now)
            raw = batch.build_batch(recs)
            data = raw[61:]
            row(f"check_records {label} {kind}", n, "rec/s", framing.check_records_py, records.check_records,
                (data, n, n - 1), reps)
            row(f"decode_records {label} {kind}", n, "rec/s", batch.decode_records_py, records.decode_records,
                (data, 0, now), reps)
            row(f"encode records {label} {kind}", n, "rec/s", lambda r: _encode(batch.encode_record_py, r),
                lambda r: _encode(records.encode_record, r), (recs,), max(1, reps // 4))
            if mixed:
                row(f"cleaner key scan {label}", n, "rec/s", compaction_rules.scan_records, storage.scan_records,
                    (data, 0, True), reps)
            mv = memoryview(raw)

            def validate(check, mv=mv, total=len(raw)):
                saved = log_validator.check_records
                log_validator.check_records = check
                try:
                    assert log_validator.validate_fast(mv, total, now, cfg, "t-0") is not None
                finally:
                    log_validator.check_records = saved
            row(f"validating append check {label} {kind}", n, "rec/s", lambda: validate(framing.check_records_py),
                lambda: validate(records.check_records), (), reps)
    keys = [b"key-%07d" % i for i in range(100_000)]
    row("murmur2_many 100,000 keys", len(keys), "keys/s", partitioner.murmur2_many_py, client.murmur2_many,
        (keys,), 2)
    lines = [k + b":" + b"v" * 90 for k in keys]
    row("split KEY:VALUE 100,000 lines", len(lines), "lines/s", produce_input.split_key_value_py,
        commands.split_key_value, (lines, b":"), 3)

    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"hot functions: pure Python beside compiled (best CPU time of {rounds})")
    for col in ("function, input", "pure Python us", "compiled us", "pure Python /s", "compiled /s", "gain"):
        table.add_column(col, justify="right")
    for label, us_py, us_c, r_py, r_c, unit, gain in rows:
        table.add_row(label, f"{us_py:,.1f}", f"{us_c:,.1f}", f"{r_py:,.0f} {unit}", f"{r_c:,.0f} {unit}",
                      f"{gain:.1f}x")
    Console(width=140).print(table)
    return 0
