"""`pylog spark-ingest` end to end on local[2] and local-cluster[2,1,1024].

Every test runs on both masters (the session-scoped `spark_master` fixture);
inputs are small so the whole Spark suite stays within a few minutes.
"""
from __future__ import annotations

import csv
import json
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from pylog.commands.spark.compaction import _batches
from pylog.core.client import Consumer, TopicPartition
from pylog.core.client.partitioner import murmur2
from pylog.core.records import decode_records
from spark_fixtures import run_pylog

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
        from pylog.commands.spark.session import live_run

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


@pytest.mark.parametrize("fmt", ["json", "csv", "parquet"])
def test_ingest_segments(spark_master, fmt, tmp_path):
    rows = make_rows()
    src = write_input(fmt, rows, tmp_path)
    log_dir = tmp_path / "logs"
    res = run_pylog("spark-ingest", src, "--topic", "events", "--mode", "segments", "--log-dir", log_dir,
                    "--partitions", PARTITIONS, "--master", spark_master, "--batch-size", "2000", *COLUMNS, "--json")
    doc = json.loads(res.output)
    assert doc["records"] == N_ROWS and doc["partitions_mismatched"] == 0 and doc["format"] == fmt
    assert doc["tasks"] == PARTITIONS  # one task per Kafka partition
    by_p = {}
    for p in range(PARTITIONS):
        recs = read_partition_dir(log_dir / f"events-{p}")
        offsets = [r[0] for r in recs]
        assert offsets == list(range(len(recs)))
        by_p[p] = [r[1:] for r in recs]
    check_partitions(by_p, rows, ordered=True)
    # the storage engine's files are all there and consistent
    for name in ("meta.properties", "pylog-topics.json", "recovery-point-offset-checkpoint",
                 "log-start-offset-checkpoint", "replication-offset-checkpoint", ".kafka_cleanshutdown"):
        assert (log_dir / name).exists(), name
    assert (log_dir / "events-0" / "partition.metadata").exists()
    assert any((log_dir / "events-0").glob("*.snapshot"))
    assert not (log_dir / ".pylog-spark-staging").exists()
    run_pylog("verify", log_dir)
    # a partition with data is refused without --append ...
    res = run_pylog("spark-ingest", src, "--topic", "events", "--mode", "segments", "--log-dir", log_dir,
                    "--master", spark_master, *COLUMNS, expect=1)
    assert "already hold data" in res.output and "--append" in res.output
    # ... and extended with it
    run_pylog("spark-ingest", src, "--topic", "events", "--mode", "segments", "--log-dir", log_dir, "--append",
              "--master", spark_master, *COLUMNS, "--json")
    total = 0
    for p in range(PARTITIONS):
        recs = read_partition_dir(log_dir / f"events-{p}")
        assert [r[0] for r in recs] == list(range(len(recs)))
        total += len(recs)
    assert total == 2 * N_ROWS
    run_pylog("verify", log_dir)


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


def test_segments_served_by_broker(spark_master, tmp_path, broker_factory):
    rows = make_rows()
    src = write_input("json", rows, tmp_path)
    log_dir = tmp_path / "logs"
    run_pylog("spark-ingest", src, "-t", "served", "--mode", "segments", "--log-dir", log_dir, "--partitions",
              PARTITIONS, "--master", spark_master, "--compression", "lz4", *COLUMNS, "--json")
    b = broker_factory(log_dir)
    by_p = consume_all(b.bootstrap, "served", N_ROWS)
    check_partitions(by_p, rows, ordered=True)


@pytest.mark.parametrize("fmt", ["json", "csv", "parquet"])
def test_ingest_produce(spark_master, fmt, tmp_path, broker):
    rows = make_rows()
    src = write_input(fmt, rows, tmp_path)
    topic = f"produced-{fmt}-{spark_master[:7].replace('[', '')}"
    res = run_pylog("spark-ingest", src, "--topic", topic, "--bootstrap", broker.bootstrap, "--partitions",
                    PARTITIONS, "--master", spark_master, "--compression", "gzip", *COLUMNS, "--json")
    doc = json.loads(res.output)
    assert doc["mode"] == "produce" and doc["records"] == N_ROWS
    assert doc["partitions_mismatched"] == 0
    assert "at-least-once" in doc["delivery"]
    assert sum(p["acknowledged"] for p in doc["partitions"]) == N_ROWS
    by_p = consume_all(broker.bootstrap, topic, N_ROWS)
    check_partitions(by_p, rows, ordered=False)


def test_text_and_whole_row(spark_master, tmp_path):
    # text: one record per line, no key; JSON without --value-column: the row as a JSON object
    (tmp_path / "lines.txt").write_text("alpha\nbeta\ngamma\n")
    log_dir = tmp_path / "logs"
    run_pylog("spark-ingest", tmp_path / "lines.txt", "-t", "lines", "--mode", "segments", "--log-dir", log_dir,
              "--partitions", 1, "--master", spark_master)
    assert [r[2] for r in read_partition_dir(log_dir / "lines-0")] == [b"alpha", b"beta", b"gamma"]
    (tmp_path / "rows.json").write_text('{"k": "a", "n": 1}\n{"k": "b", "n": 2}\n')
    run_pylog("spark-ingest", tmp_path / "rows.json", "-t", "rows", "--mode", "segments", "--log-dir", log_dir,
              "--partitions", 1, "--key-column", "k", "--master", spark_master)
    recs = read_partition_dir(log_dir / "rows-0")
    assert [(r[1], json.loads(r[2])) for r in recs] == [(b"a", {"k": "a", "n": 1}), (b"b", {"k": "b", "n": 2})]


# Kafka's murmur2 reference values (UtilsTest): the partition the Java client picks is
# toPositive(murmur2(key)) % partitions.
JAVA_MURMUR2 = {
    "21": -973932308,
    "foobar": -790332482,
    "a-little-bit-long-string": -985981536,
    "a-little-bit-longer-string": -1486304829,
    "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    "abc": 479470107,
}


def test_java_compatible_partitions(spark_master, tmp_path):
    src = tmp_path / "keys.jsonl"
    src.write_text("".join(json.dumps({"key": k, "v": i}) + "\n" for i, k in enumerate(JAVA_MURMUR2)))
    n = 7
    log_dir = tmp_path / "logs"
    run_pylog("spark-ingest", src, "-t", "keys", "--mode", "segments", "--log-dir", log_dir, "--partitions", n,
              "--key-column", "key", "--value-column", "v", "--master", spark_master)
    where = {}
    for p in range(n):
        for r in read_partition_dir(log_dir / f"keys-{p}"):
            where[r[1].decode()] = p
    assert where == {k: (h & 0x7FFFFFFF) % n for k, h in JAVA_MURMUR2.items()}


def test_bad_input_one_line(spark_master, tmp_path):
    (tmp_path / "a.jsonl").write_text('{"x": 1}\n')
    res = run_pylog("spark-ingest", tmp_path / "a.jsonl", "-t", "t", "--mode", "segments", "--log-dir",
                    tmp_path / "l", "--partitions", 1, "--key-column", "nope", "--master", spark_master, expect=2)
    assert "no column 'nope'" in res.output
    res = run_pylog("spark-ingest", tmp_path / "a.weird", "-t", "t", "--mode", "segments", "--log-dir",
                    tmp_path / "l", "--master", spark_master, expect=2)
    assert "does not exist" in res.output


def test_missing_java_is_one_line(tmp_path):
    import os
    import subprocess
    import sys

    (tmp_path / "a.jsonl").write_text('{"x": 1}\n')
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")}
    env["PATH"] = str(tmp_path)  # no java on it
    res = subprocess.run([sys.executable, "-m", "pylog.cli", "spark-ingest", str(tmp_path / "a.jsonl"), "-t", "t",
                          "--mode", "segments", "--log-dir", str(tmp_path / "l"), "--partitions", "1"],
                         capture_output=True, text=True, env=env, timeout=60)
    assert res.returncode == 1
    assert res.stderr.strip().count("\n") == 0, res.stderr
    assert "Java 17" in res.stderr and "JAVA_HOME" in res.stderr
