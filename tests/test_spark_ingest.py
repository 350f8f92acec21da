"""`pylog spark-ingest` end to end on local[2] and local-cluster[2,1,1024].

Every test runs on local[2] (the session-scoped `spark_master` fixture); each mode
(segments from Parquet, produce from JSON) also runs on local-cluster, whose executors
import pylog only from the zip the job ships. Inputs are small.
"""
from __future__ import annotations

import json

import pytest

from pylog.spark.compaction import _batches
from pylog.core.client import Consumer, TopicPartition
from pylog.core.client.partitioner import murmur2
from pylog.core.records import decode_records
from support.spark_fixtures import local_only, run_pylog
from support.spark_rows import (  # noqa: F401
    COLUMNS, N_ROWS, PARTITIONS, check_partitions, consume_all, expected, make_rows,
    read_partition_dir, write_input,
)
from support.cli import pylog


def test_ingest_segments(spark_master, tmp_path):
    check_ingest_segments(spark_master, "parquet", tmp_path)


@local_only
@pytest.mark.parametrize("fmt", ["json", "csv"])
def test_ingest_segments_text_formats(spark_master, fmt, tmp_path):
    check_ingest_segments(spark_master, fmt, tmp_path)


def check_ingest_segments(spark_master, fmt, tmp_path):
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


@local_only
def test_segments_served_by_broker(spark_master, tmp_path, broker_factory):
    rows = make_rows()
    src = write_input("json", rows, tmp_path)
    log_dir = tmp_path / "logs"
    run_pylog("spark-ingest", src, "-t", "served", "--mode", "segments", "--log-dir", log_dir, "--partitions",
              PARTITIONS, "--master", spark_master, "--compression", "lz4", *COLUMNS, "--json")
    b = broker_factory(log_dir)
    by_p = consume_all(b.bootstrap, "served", N_ROWS)
    check_partitions(by_p, rows, ordered=True)


def test_ingest_produce(spark_master, tmp_path, broker):
    check_ingest_produce(spark_master, "json", tmp_path, broker)


@local_only
@pytest.mark.parametrize("fmt", ["csv", "parquet"])
def test_ingest_produce_other_formats(spark_master, fmt, tmp_path, broker):
    check_ingest_produce(spark_master, fmt, tmp_path, broker)


def check_ingest_produce(spark_master, fmt, tmp_path, broker):
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


@local_only
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


@local_only
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


@local_only
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

    (tmp_path / "a.jsonl").write_text('{"x": 1}\n')
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "SPARK_HOME")}
    env["PATH"] = str(tmp_path)  # no java on it
    res = pylog("spark-ingest", tmp_path / "a.jsonl", "-t", "t", "--mode", "segments", "--log-dir", tmp_path / "l",
                "--partitions", "1", env=env, timeout=60)
    assert res.returncode == 1
    assert res.stderr.strip().count("\n") == 0, res.stderr
    assert "Java 17" in res.stderr and "JAVA_HOME" in res.stderr
