"""Apache Kafka 4.3.1's kafka-transactions.sh (TransactionsCommand) against pylog's broker.

A transaction left hanging on pylog's broker is seen by `list`, `describe` and
`describe-producers` as Kafka would show it, and `abort --start-offset` (DescribeProducers,
then WriteTxnMarkers) ends it: the last stable offset moves past it and read_committed
readers skip its records.
"""
from __future__ import annotations

import pytest

from broker_fixtures import BrokerProcess
from kafka_peer import ToolShell
from test_txn_confluent import READ_COMMITTED, READ_UNCOMMITTED, create, list_offset, open_raw_txn, read

TOOL = "org.apache.kafka.tools.TransactionsCommand"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("txn-tools") / "data").start()
    yield b
    b.stop_clean()


def rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.split("\t")] for line in text.splitlines() if line.strip()]


def test_kafka_transactions_tool_lists_describes_and_aborts(broker):
    create(broker, "hang")
    pid, epoch = open_raw_txn(broker, "hang-id", "hang", b"h0", timeout_ms=600000)
    shell = ToolShell()
    try:
        def tool(*args):
            return shell.run(TOOL, "--bootstrap-server", broker.bootstrap, *args, check=True).stdout

        listed = rows(tool("list"))
        assert listed[0][:4] == ["TransactionalId", "Coordinator", "ProducerId", "TransactionState"]
        assert ["hang-id", "1", str(pid), "Ongoing"] in [r[:4] for r in listed]
        described = rows(tool("describe", "--transactional-id", "hang-id"))
        head, row = described[0], dict(zip(described[0], described[1]))
        assert "TopicPartitions" in head and row["TopicPartitions"] == "hang-0"
        assert (row["ProducerId"], row["ProducerEpoch"], row["TransactionState"]) == (str(pid), str(epoch), "Ongoing")
        producers = rows(tool("describe-producers", "--topic", "hang", "--partition", "0"))
        prow = dict(zip(producers[0], producers[1]))
        assert prow["ProducerId"] == str(pid) and prow["CurrentTransactionStartOffset"] == "0"
        assert list_offset(broker, "hang", 0, 1) == 0
        tool("abort", "--topic", "hang", "--partition", "0", "--start-offset", "0")
        assert list_offset(broker, "hang", 0, 1) == 2  # past the ABORT marker
        assert read(broker, "hang", [0], READ_COMMITTED) == {0: []}
        assert read(broker, "hang", [0], READ_UNCOMMITTED) == {0: ["h0"]}
        prow = dict(zip(*rows(tool("describe-producers", "--topic", "hang", "--partition", "0"))[:2]))
        assert prow["CurrentTransactionStartOffset"] == "None"
    finally:
        shell.close()
