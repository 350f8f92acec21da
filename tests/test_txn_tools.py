"""Apache Kafka 4.3.1's kafka-transactions.sh (TransactionsCommand) against pylog's broker.

A transaction left hanging on pylog's broker is seen by `list`, `describe` and
`describe-producers` as Kafka would show it, and `abort --start-offset` (DescribeProducers,
then WriteTxnMarkers) ends it: the last stable offset moves past it and read_committed
readers skip its records. A transaction whose coordinator state was lost is found by
Kafka's `find-hanging` and by `pylog transactions find-hanging` alike.
"""
from __future__ import annotations

import json
import shutil

import pytest

from support.broker_fixtures import BrokerProcess
from support.client_fixtures import pylog_cli
from support.kafka_peer import ToolShell
from support.txn_clients import READ_COMMITTED, READ_UNCOMMITTED, create, list_offset, open_raw_txn, read

TOOL = "org.apache.kafka.tools.TransactionsCommand"


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("txn-tools") / "data").start()
    yield b
    b.stop_clean()


def rows(text: str) -> list[list[str]]:
    return [[c.strip() for c in line.rstrip("\t").split("\t")] for line in text.splitlines() if line.strip()]


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


def test_find_hanging_agrees_with_kafkas_tool(broker_factory):
    """An open transaction whose `__transaction_state` was lost hangs (no coordinator will write its
    marker); an open transaction its coordinator knows does not. Kafka's find-hanging and pylog's
    report the same rows; pylog's abort ends the hanging one."""
    b = broker_factory(None)
    create(b, "fh-lost")
    create(b, "fh-live")
    lost_pid, lost_epoch = open_raw_txn(b, "fh-lost-id", "fh-lost", b"lost", timeout_ms=600000)
    b.kill9()
    for d in b.log_dir.glob("__transaction_state-*"):
        shutil.rmtree(d)
    b.restart()
    live_pid, _ = open_raw_txn(b, "fh-live-id", "fh-live", b"live", timeout_ms=600000)
    assert live_pid != lost_pid
    shell = ToolShell()
    try:
        def kafkas(*args):
            return rows(shell.run(TOOL, "--bootstrap-server", b.bootstrap, "find-hanging", *args,
                                  check=True).stdout)

        def ours(*args):
            r = pylog_cli("transactions", "find-hanging", "-b", b.bootstrap, *args)
            assert r.returncode == 0, r.stderr
            return rows(r.stdout)

        def no_duration(table):
            return [r[:-1] for r in table]

        search = ["--broker-id", "1", "--max-transaction-timeout", "0"]
        theirs = kafkas(*search)
        assert theirs[0] == ["Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset",
                             "LastTimestamp", "Duration(min)"]
        assert [r[:6] for r in theirs[1:]] == [["fh-lost", "0", str(lost_pid), str(lost_epoch), "-1", "0"]]
        assert no_duration(ours(*search)) == no_duration(theirs)
        found = json.loads(pylog_cli("transactions", "find-hanging", "-b", b.bootstrap, "--json", *search).stdout)
        assert [(h["topic"], h["partition"], h["producer_id"], h["start_offset"]) for h in found] == \
            [("fh-lost", 0, lost_pid, 0)]
        # scoped to the live transaction's topic, or with Kafka's default 15 minutes: nothing hangs
        for args in (["--topic", "fh-live", "--max-transaction-timeout", "0"], ["--broker-id", "1"]):
            assert ours(*args) == kafkas(*args) and len(ours(*args)) == 1  # the header only
        r = pylog_cli("transactions", "abort", "-b", b.bootstrap, "--topic", "fh-lost", "--partition", "0",
                      "--start-offset", "0")
        assert r.returncode == 0, r.stderr
        assert ours(*search) == kafkas(*search) and len(kafkas(*search)) == 1
        assert read(b, "fh-lost", [0], READ_COMMITTED) == {0: []}
    finally:
        shell.close()


def test_find_hanging_bad_input(broker):
    for args, says in ((["--partition", "0"], "requires either --topic or --broker-id"),
                       (["--broker-id", "1", "--partition", "0"], "--partition argument requires --topic"),
                       (["--topic", "no-such-topic"], "UNKNOWN_TOPIC_OR_PARTITION")):
        r = pylog_cli("transactions", "find-hanging", "-b", broker.bootstrap, *args)
        assert r.returncode != 0 and says in r.stderr and "Traceback" not in r.stderr, (args, r.stderr)
