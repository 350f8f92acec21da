"""Transaction markers and aborted records after cleaning: pylog's cleaner against Apache Kafka 4.3.1.

The same transactional workload (commits and aborts rewriting a few keys on a compacted topic
with small segment.ms, min.cleanable.dirty.ratio and delete.retention.ms) goes to pylog's broker
and to Kafka. pylog's log is cleaned offline three times (a marker needs three cleanings to go:
its data goes, it gets a delete horizon, it goes after the horizon); Kafka's own cleaner runs
until its log reads the same. Compared: every surviving record (offset, key, value) and every
surviving marker (offset, type) below the workload's end.
"""
from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from support.broker_fixtures import BrokerProcess, call
from support.waiting import wait_until

from pylog.core.records.memory import iter_batches

TOPIC = "txclean"
CONFIG = {"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01",
          "delete.retention.ms": "100", "min.compaction.lag.ms": "0"}


def workload(bootstrap: str) -> int:
    """Transactions of 2 records on 4 keys, every third aborted; returns the log end offset."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(TOPIC, 1, 1, config=CONFIG)]).values():
        f.result(30)
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": "txclean-id", "linger.ms": 0})
    p.init_transactions(60)
    for i in range(12):
        p.begin_transaction()
        for j in range(2):
            p.produce(TOPIC, key=b"k%d" % ((i + j) % 4), value=b"v%d-%d" % (i, j), partition=0)
        assert p.flush(30) == 0  # sent, so an abort has records to abort
        if i % 3 == 1:
            p.abort_transaction(30)
        else:
            p.commit_transaction(30)
    # Kafka writes the last markers after EndTxn has answered: wait for all 12 of them
    wait_until(lambda: high_watermark(bootstrap) >= 12 * 3, what="the last transaction marker")
    return high_watermark(bootstrap)


def tail(bootstrap: str) -> None:
    """One plain record after segment.ms, so everything before it is in a rolled (cleanable) segment."""
    t = time.time()
    wait_until(lambda: time.time() > t + 0.3, what="segment.ms passing", step=0.05)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    p.produce(TOPIC, key=b"tail", value=b"t", partition=0)
    assert p.flush(30) == 0


def fetch(bootstrap: str, offset: int = 0) -> dict:
    host, port = bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=15) as s:
        r = call(s, 1, 12, {"max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 22, "isolation_level": 0,
                            "topics": [{"topic": TOPIC, "partitions": [
                                {"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 22}]}]})
    part = r["responses"][0]["partitions"][0]
    assert part["error_code"] == 0
    return part


def high_watermark(bootstrap: str) -> int:
    return fetch(bootstrap)["high_watermark"]


def contents(bootstrap: str, end: int) -> list:
    """Data records and control records below `end`, read with raw READ_UNCOMMITTED fetches (a
    fetch answers from one segment at most, and segment.ms rolls one every 100 ms)."""
    out: list = []
    offset = 0
    while offset < end:
        batches = list(iter_batches(bytes(fetch(bootstrap, offset)["records"] or b"")))
        if not batches:
            return out
        for b in batches:
            for rec in b.records():
                if rec.offset >= end:
                    return out
                if rec.offset < offset:
                    continue  # the start of a batch holding the offset asked for: read already
                if b.header.attributes & 0x20:
                    out.append((rec.offset, "marker", int.from_bytes(rec.key[2:4], "big")))
                else:
                    out.append((rec.offset, rec.key, rec.value))
            offset = max(offset, b.header.last_offset + 1)
    return out


@pytest.fixture(scope="module")
def pylog_cleaned(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("txclean") / "data").start()
    try:
        end = workload(b.bootstrap)
        before = contents(b.bootstrap, end)
    finally:
        b.stop_clean()
    for _ in range(3):  # as Kafka's cleaner: new dirty data, then a cleaning of the whole log
        b.start()
        try:
            tail(b.bootstrap)
        finally:
            b.stop_clean()
        t = time.time()
        r = subprocess.run([sys.executable, "-m", "pylog.cli.main", "compact", str(b.log_dir), "--json"],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        wait_until(lambda: time.time() > t + 0.3, what="delete.retention.ms passing", step=0.05)
    b.start()
    try:
        yield end, before, contents(b.bootstrap, end)
    finally:
        b.stop_clean()


def test_cleaned_transactions_as_apache_kafka(pylog_cleaned, kafka_node):
    end, before, mine = pylog_cleaned
    assert [x for x in before if x[1] == "marker"] and len(mine) < len(before)
    assert [x for x in before if x[1] == "marker" and x[2] == 0]  # ABORT markers were written
    assert not [x for x in mine if x[1] != "marker" and x[2].startswith((b"v1-", b"v4-", b"v7-", b"v10-"))]
    assert workload(kafka_node.bootstrap) == end
    seen = []

    def same():
        tail(kafka_node.bootstrap)  # fresh dirty data, so Kafka's cleaner keeps cleaning
        seen.append(contents(kafka_node.bootstrap, end))
        return seen[-1] == mine
    try:
        wait_until(same, timeout=150, what="Kafka's cleaned log to read as pylog's", step=1.0)
    except AssertionError:
        assert seen[-1] == mine  # shows the difference
