"""The Java client's transactions (kafka-clients 4.3.1) against pylog's broker and Apache Kafka.

tests/kafka/java/TxnJava.java runs one workload (commit, abort, consume-transform-produce
with sendOffsetsToTransaction, fencing by a second producer) and prints the
read_committed and read_uncommitted view of each partition. pylog's answers must be
exactly the expected ones, and the same as Apache Kafka 4.3.1's for the same workload.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from support.kafka_peer import java_program

JAVA = Path(__file__).parent / "kafka" / "java" / "TxnJava.java"
FENCED = {"ProducerFencedException", "InvalidProducerEpochException"}


def run(bootstrap: str, prefix: str) -> dict[str, str]:
    proc = java_program(JAVA.read_text(), bootstrap, prefix, timeout=300)
    return dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)


@pytest.fixture(scope="module")
def pylog_views(tmp_path_factory):
    from support.broker_fixtures import BrokerProcess

    b = BrokerProcess(tmp_path_factory.mktemp("txn-java") / "data").start()
    try:
        yield run(b.bootstrap, "jtx")
    finally:
        b.stop_clean()


def test_java_transactions_on_pylog(pylog_views):
    r = pylog_views
    assert r["read_committed.0"] == "[c0, c2, c4, " + ", ".join(f"in{i}!" for i in range(10)) + "]"
    assert r["read_committed.1"] == "[c1, c3, c5, second]"
    assert r["read_uncommitted.0"] == "[c0, c2, c4, a0, a2, " + ", ".join(f"in{i}!" for i in range(10)) + "]"
    assert r["read_uncommitted.1"].startswith("[c1, c3, c5, a1, a3, ")
    assert r["group.offset"] == "10"
    assert r["fenced"] in FENCED


def test_same_views_as_apache_kafka(pylog_views, kafka_node):
    k = run(kafka_node.bootstrap, "jtx")
    for key in ("read_committed.0", "read_committed.1", "read_uncommitted.0", "group.offset"):
        assert pylog_views[key] == k[key], key
    assert k["fenced"] in FENCED
