"""Both Spark jobs through Spark Connect (`--remote sc://...` and SPARK_REMOTE), against a
server started from pyspark's start-connect-server.sh on the standalone cluster (the run's one
server, `connect_server`). For this module its executors run a Python that has pylog's
dependencies but not pylog: its code reaches them only through Spark Connect's artifact upload.

The client here is full pyspark with its connect extra (grpcio, protobuf); the lean
`pylog[spark-connect]` install (pyspark-client) runs the same client code.
"""
from __future__ import annotations

import json

import pytest

from support.spark_fixtures import run_pylog
from support.spark_rows import COLUMNS, N_ROWS, PARTITIONS, check_partitions, consume_all, make_rows, \
    read_partition_dir, write_input


@pytest.mark.timeout(1800)  # three Spark jobs on a shared 2-core machine
def test_both_jobs_through_spark_connect(spark_connect, keep_session, tmp_path, broker, monkeypatch):
    rows = make_rows()
    src = write_input("json", rows, tmp_path)
    log_dir = tmp_path / "logs"
    res = run_pylog("spark-ingest", src, "-t", "events", "--mode", "segments", "--log-dir", log_dir,
                    "--partitions", PARTITIONS, "--batch-size", "2000", *COLUMNS, "--remote", spark_connect.url,
                    "--json")
    assert "Spark Connect" in res.stderr and "uploaded as an artifact" in res.stderr
    doc = json.loads(res.stdout)
    assert doc["master"] == spark_connect.url and doc["executor_python"]["how"] == "server"
    # --ship-env auto asked the server's executors once: they have the dependencies, nothing shipped
    assert doc["executor_python"]["probe"] == "probed: they have pylog's dependencies"
    assert "probing the executors' Python" in res.stderr and "shipped" not in res.stderr
    assert doc["records"] == N_ROWS and doc["partitions_mismatched"] == 0
    by_p = {p: [r[1:] for r in read_partition_dir(log_dir / f"events-{p}")] for p in range(PARTITIONS)}
    check_partitions(by_p, rows, ordered=True)
    run_pylog("verify", log_dir)

    # SPARK_REMOTE, Spark's own variable, works as --remote does
    monkeypatch.setenv("SPARK_REMOTE", spark_connect.url)
    res = run_pylog("spark-ingest", src, "-t", "produced", "-b", broker.bootstrap, "--partitions", PARTITIONS,
                    *COLUMNS, "--json")
    doc = json.loads(res.stdout)
    assert doc["master"] == spark_connect.url
    assert doc["records"] == N_ROWS and doc["partitions_mismatched"] == 0
    check_partitions(consume_all(broker.bootstrap, "produced", N_ROWS), rows, ordered=False)

    res = run_pylog("spark-compaction", log_dir, "--json")
    doc = json.loads(res.stdout)
    assert doc["totals"]["records"] == N_ROWS
    assert {p["partition"]: p["records"] for p in doc["partitions"]} == \
        {p: len(by_p[p]) for p in range(PARTITIONS)}


def test_bad_remote_is_one_line(tmp_path):
    (tmp_path / "a.jsonl").write_text('{"k": 1}\n')
    res = run_pylog("spark-ingest", tmp_path / "a.jsonl", "-t", "t", "--mode", "segments", "--log-dir",
                    tmp_path / "l", "--partitions", 1, "--remote", "http://127.0.0.1:1", expect=2)
    assert "--remote expects sc://HOST:PORT" in res.output
