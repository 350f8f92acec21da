"""The Java client's transactions (kafka-clients 4.4.0) against pylog's broker and Apache Kafka,
at transaction.version 2 (KIP-890 part 2) and 1.

tests/kafka/java/TxnJava.java runs one workload (commit, abort, consume-transform-produce
with sendOffsetsToTransaction, fencing by a second producer) and prints the
read_committed and read_uncommitted view of each partition. pylog's answers must be
exactly the expected ones, and the same as Apache Kafka 4.4.0's (at the same transaction.version)
for the same workload, down to the producer epoch the transactional id ends with.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from support.kafka_peer import KafkaNode, java_program

JAVA = Path(__file__).parent / "kafka" / "java" / "TxnJava.java"
FENCED = {"ProducerFencedException", "InvalidProducerEpochException"}


def run(bootstrap: str, prefix: str) -> dict[str, str]:
    proc = java_program(JAVA.read_text(), bootstrap, prefix, timeout=300)
    return dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)


LEVELS = (2, 1)  # transaction.version: Kafka 4's default, and the level before KIP-890 part 2


@pytest.fixture(scope="module", params=LEVELS, ids=lambda v: f"tv{v}")
def level(request):
    return request.param


@pytest.fixture(scope="module")
def views(tmp_path_factory, level, kafka_node):
    """(pylog's views, Kafka's views) of the workload at `level`: the two runs side by side, on pylog's
    broker and on Kafka 4.4 at the same transaction.version (the shared node is formatted at 2)."""
    from support.broker_fixtures import BrokerProcess

    node = None
    with ThreadPoolExecutor(1) as pool:
        started = pool.submit(BrokerProcess(tmp_path_factory.mktemp(f"txn-java-tv{level}") / "data",
                                            "--feature", f"transaction.version={level}").start)
        try:
            if level != 2:  # started from this thread: a Kafka JVM dies with the thread that started it
                node = KafkaNode(tmp_path_factory.mktemp(f"kafka-tv{level}"),
                                 format_args=("--feature", f"transaction.version={level}")).format().start()
        finally:
            b = started.result()
    try:
        with ThreadPoolExecutor(1) as pool:
            kafka_side = pool.submit(run, (node or kafka_node).bootstrap, "jtx")
            mine = run(b.bootstrap, "jtx")
            yield mine, kafka_side.result()
    finally:
        b.stop_clean()
        if node is not None:
            node.stop()


@pytest.fixture(scope="module")
def pylog_views(views):
    return views[0]


@pytest.fixture(scope="module")
def kafka_views(views):
    return views[1]


def test_java_transactions_on_pylog(pylog_views, level):
    r = pylog_views
    assert r["read_committed.0"] == "[c0, c2, c4, " + ", ".join(f"in{i}!" for i in range(10)) + "]"
    assert r["read_committed.1"] == "[c1, c3, c5, second]"
    assert r["read_uncommitted.0"] == "[c0, c2, c4, a0, a2, " + ", ".join(f"in{i}!" for i in range(10)) + "]"
    assert r["read_uncommitted.1"].startswith("[c1, c3, c5, a1, a3, ")
    assert r["group.offset"] == "10"
    assert r["fenced"] in FENCED
    assert r["txn.state"] == "CompleteCommit"
    # level 2 bumps the epoch at each of the second producer's and the first's transaction ends
    assert (int(r["txn.epoch"]) >= 4) if level == 2 else (int(r["txn.epoch"]) <= 3), r["txn.epoch"]


def test_same_views_as_apache_kafka(pylog_views, kafka_views):
    k = kafka_views
    for key in ("read_committed.0", "read_committed.1", "read_uncommitted.0", "group.offset", "txn.epoch",
                "txn.state"):
        assert pylog_views[key] == k[key], key
    assert k["fenced"] in FENCED
