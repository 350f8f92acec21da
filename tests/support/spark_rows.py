"""Rows, inputs and checks shared by the spark-ingest tests."""
from __future__ import annotations
import csv
import json
import time
from collections import Counter, defaultdict
from pathlib import Path
from pylog.spark.compaction import _batches
from pylog.core.client import Consumer, TopicPartition
from pylog.core.client.partitioner import murmur2
from pylog.core.records import decode_records


N_ROWS = 240


PARTITIONS = 3


def make_rows(n: int = N_ROWS) -> list[dict]:
    rows = []
    for i in range(n):
        rows.append({
            "id": None if i % 10 == 7 else f"user-{i % 37}",
            "name": f"value {i} " + "é" * (i % 5),
            "region": None if i % 9 == 0 else f"r{i % 4}",
            "seq": str(i),
            "ts": 1_700_000_000_000 + i * 1000,
        })
    return rows


def expected(rows: list[dict]) -> list[tuple]:
    """(key, value, headers, timestamp) for --key-column id --value-column name
    --headers-columns region,seq --timestamp-column ts."""
    out = []
    for r in rows:
        out.append((r["id"].encode() if r["id"] is not None else None, r["name"].encode(),
                    (("region", r["region"].encode() if r["region"] is not None else None), ("seq", r["seq"].encode())),
                    r["ts"]))
    return out


COLUMNS = ["--key-column", "id", "--value-column", "name", "--headers-columns", "region,seq",
           "--timestamp-column", "ts"]


def write_input(fmt: str, rows: list[dict], d: Path) -> Path:
    if fmt == "json":
        p = d / "in.jsonl"
        p.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return p
    if fmt == "csv":
        p = d / "in.csv"
        with open(p, "w", newline="", encoding="utf-8") as f:
            w = csv.writer(f)
            w.writerow(["id", "name", "region", "seq", "ts"])
            for r in rows:  # an empty CSV field reads back as null
                w.writerow(["" if r[c] is None else r[c] for c in ("id", "name", "region", "seq", "ts")])
        return p
    if fmt == "parquet":
        from pylog.spark.session import live_run

        spark = live_run().spark
        p = d / "in.parquet"
        df = spark.createDataFrame([(r["id"], r["name"], r["region"], r["seq"], r["ts"]) for r in rows],
                                   "id string, name string, region string, seq string, ts long")
        df.coalesce(1).write.parquet(str(p))  # one file: Spark orders several files by size, not name
        return p
    raise AssertionError(fmt)


def read_partition_dir(folder: Path) -> list[tuple]:
    """(offset, key, value, headers, timestamp) of every record in a partition folder."""
    out = []
    for seg in sorted(folder.glob("*.log")):
        for buf, off, h in _batches(str(seg)):
            from pylog.storage.compaction_rules import batch_records_data

            raw = memoryview(buf)[off:off + h.batch_length + 12]
            for r in decode_records(batch_records_data(raw, h), h.base_offset, h.base_timestamp):
                out.append((r.offset, r.key, r.value, tuple(r.headers), r.timestamp))
    return out


def check_partitions(by_partition: dict[int, list[tuple]], rows: list[dict], *, ordered: bool) -> None:
    """Every expected record is there exactly once; keyed ones on the Java client's partition."""
    exp = expected(rows)
    got_all = Counter()
    for p, recs in by_partition.items():
        for rec in recs:
            got_all[rec] += 1
            if rec[0] is not None:
                assert p == (murmur2(rec[0]) & 0x7FFFFFFF) % PARTITIONS, (rec, p)
    assert got_all == Counter(exp)
    if ordered:  # segments mode keeps the input order within a partition
        pos = {e: i for i, e in enumerate(exp)}
        for recs in by_partition.values():
            idx = [pos[r] for r in recs]
            assert idx == sorted(idx)


def consume_all(bootstrap: str, topic: str, expected_count: int, timeout: float = 30.0) -> dict[int, list[tuple]]:
    by_p: dict[int, list[tuple]] = defaultdict(list)
    with Consumer({"bootstrap.servers": bootstrap}) as c:
        parts = c.partitions_for(topic)
        tps = [TopicPartition(topic, p) for p in parts]
        c.assign(tps)
        c.seek_to_beginning(tps)
        n = 0
        deadline = time.monotonic() + timeout
        while n < expected_count and time.monotonic() < deadline:
            for tp, recs in c.poll(500).items():
                for r in recs:
                    by_p[tp.partition].append((r.key, r.value, tuple(r.headers), r.timestamp))
                    n += 1
    return by_p
