"""`pylog produce --transactional-id`, `pylog consume --isolation` and `pylog transactions` against Apache
Kafka; `pylog transactions` output compared with Kafka's own kafka-transactions.sh (TransactionsCommand)."""
from __future__ import annotations

import json
import time

import pytest

from support.cli import pylog_in_process
from support.client_fixtures import pylog_cli
from support.kafka_peer import ToolShell
from pylog.core.client import Producer
from support.txn_clients import PEERS, new_topic
from support.waiting import wait_until

TOOL = "org.apache.kafka.tools.TransactionsCommand"


@pytest.fixture(scope="module")
def tools():
    shell = ToolShell()
    yield shell
    shell.close()


@pytest.fixture(params=PEERS)
def bs(request):
    if request.param == "kafka":
        return request.getfixturevalue("kafka_node").bootstrap
    return request.getfixturevalue("broker").bootstrap


def consume(bs, topic, isolation):
    r = pylog_cli("consume", topic, "-b", bs, "--from-beginning", "-e", "--isolation", isolation)
    assert r.returncode == 0, r.stderr
    return r.stdout.split()


def test_produce_in_transactions_and_consume_by_isolation(bs):
    topic = new_topic(bs, 1, configs={"max.message.bytes": "2000"})
    lines = [str(i) for i in range(1, 6)] + ["x" * 5000] + [str(i) for i in range(7, 13)]
    r = pylog_cli("produce", topic, "-b", bs, "--transactional-id", f"cli-{topic}", "--transaction-size", "4",
                  "--json", input="\n".join(lines) + "\n")
    assert r.returncode == 1, r.stderr  # some records failed
    s = json.loads(r.stdout)
    assert (s["transactions_committed"], s["transactions_aborted"]) == (2, 1)
    assert s["records"] == 8 and sorted(f["line"] for f in s["failed"]) == [5, 6, 7, 8]
    # lines 1-4 and 9-12 committed; line 5 was written, then its transaction aborted
    assert consume(bs, topic, "read_committed") == ["1", "2", "3", "4", "9", "10", "11", "12"]
    assert consume(bs, topic, "read_uncommitted") == ["1", "2", "3", "4", "5", "9", "10", "11", "12"]
    r = pylog_cli("produce", topic, "-b", bs, "--transaction-size", "4", input="a\n")
    assert r.returncode == 2 and "--transactional-id" in r.stderr


def test_produce_whole_input_is_one_transaction(bs):
    topic = new_topic(bs, 2)
    r = pylog_cli("produce", topic, "-b", bs, "--transactional-id", f"cli-{topic}", "--json",
                  input="".join(f"v{i}\n" for i in range(1000)))
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["records"] == 1000 and s["transactions_committed"] == 1 and s["failures"] == 0
    assert sorted(consume(bs, topic, "read_committed")) == sorted(f"v{i}" for i in range(1000))


def _rows(text: str) -> list[list[str]]:
    return [line.rstrip("\t").split("\t") for line in text.splitlines() if line.strip()]


def test_transactions_list_describe_abort_match_kafka_tool(bs, tools, request):
    # `pylog transactions` as a real process against pylog's broker, in this process against Kafka's
    run = pylog_in_process if request.node.callspec.params["bs"] == "kafka" else pylog_cli
    topic = new_topic(bs, 1)
    tid = f"hang-{topic}"
    p = Producer({"bootstrap.servers": bs, "transactional.id": tid})
    try:
        p.init_transactions()
        p.begin_transaction()
        for i in range(3):
            p.send(topic, f"h{i}", partition=0).get(30)

        def ours(*args):
            r = run("transactions", *args, "-b", bs)
            assert r.returncode == 0, r.stderr
            return r.stdout

        def kafkas(*args):
            return tools.run(TOOL, "--bootstrap-server", bs, *args, check=True).stdout

        # list: the same header and the same row for our transactional id
        mine = [r for r in _rows(ours("list")) if r[0].strip() in (tid, "TransactionalId")]
        theirs = [r for r in _rows(kafkas("list")) if r[0].strip() in (tid, "TransactionalId")]
        assert [[c.strip() for c in r] for r in mine] == [[c.strip() for c in r] for r in theirs]
        assert [c.strip() for c in mine[1]][3] == "Ongoing"
        # describe: every column but the duration, which moves with the clock
        d_mine, d_theirs = _rows(ours("describe", "--transactional-id", tid)), \
            _rows(kafkas("describe", "--transactional-id", tid))
        strip = [[c.strip() for i, c in enumerate(r) if i != 7] for r in d_mine]
        assert strip == [[c.strip() for i, c in enumerate(r) if i != 7] for r in d_theirs]
        assert d_mine[1][8].strip() == f"{topic}-0"
        # describe-producers: the open transaction starts at offset 0
        pr_mine = ours("describe-producers", "--topic", topic, "--partition", "0")
        assert pr_mine == kafkas("describe-producers", "--topic", topic, "--partition", "0")
        assert _rows(pr_mine)[1][5].strip() == "0"
        js = json.loads(run("transactions", "describe", "--transactional-id", tid, "-b", bs,
                            "--json").stdout)
        assert js["state"] == "Ongoing" and js["topic_partitions"] == [f"{topic}-0"]
        # abort the (hanging) transaction by its start offset: read_committed passes it at once
        r = run("transactions", "abort", "-b", bs, "--topic", topic, "--partition", "0",
                "--start-offset", "0")
        assert r.returncode == 0, r.stderr
        wait_until(lambda: "None" in _rows(ours("describe-producers", "--topic", topic, "--partition", "0"))[1][5],
                   30, "the open transaction gone from the partition")
        assert consume(bs, topic, "read_committed") == []
        assert consume(bs, topic, "read_uncommitted") == ["h0", "h1", "h2"]
        r = run("transactions", "abort", "-b", bs, "--topic", topic, "--partition", "0",
                "--start-offset", "0")
        assert r.returncode == 1 and "Could not find any open transactions starting at offset 0" in r.stderr
        assert "Traceback" not in r.stderr
    finally:
        p.close()


def test_transactions_bad_input(bs):
    r = pylog_cli("transactions", "describe", "-b", bs, "--transactional-id", f"absent-{time.time()}")
    assert r.returncode == 1 and "TRANSACTIONAL_ID_NOT_FOUND" in r.stderr and "Traceback" not in r.stderr
    r = pylog_cli("transactions", "abort", "-b", bs, "--topic", "t", "--partition", "0")
    assert r.returncode == 2 and "--start-offset" in r.stderr
    r = pylog_cli("transactions", "abort", "-b", bs, "--topic", "t", "--partition", "0", "--producer-id", "5")
    assert r.returncode == 2 and "--producer-epoch" in r.stderr


def test_dump_segment_transaction_log_decoder_like_kafka(kafka_node):
    """`pylog dump-segment --transaction-log-decoder` prints what Kafka's DumpLogSegments prints for the
    `__transaction_state` segments Kafka wrote for this module's transactions."""
    from support.dump_compare import assert_same_dump

    bs = kafka_node.bootstrap
    topic = new_topic(bs, 1)
    p = Producer({"bootstrap.servers": bs, "transactional.id": f"dump-{topic}"})
    try:
        p.init_transactions()
        p.begin_transaction()
        p.send(topic, "v")
        p.commit_transaction()
    finally:
        p.close()
    tid = f"dump-{topic}"

    def completed():  # the coordinator writes CompleteCommit just after answering EndTxn
        segments = sorted(f for f in kafka_node.log_dir.glob("__transaction_state-*/*.log") if f.stat().st_size)
        mine = [line for line in dump_text(segments).splitlines() if f'"transactionalId":"{tid}"' in line]
        return segments if mine and '"transactionStatus":"CompleteCommit"' in mine[-1] else None
    segments = wait_until(completed, 30, "CompleteCommit of the transaction in __transaction_state")
    out = assert_same_dump(segments, "--transaction-log-decoder")
    assert f'"transactionalId":"{tid}"' in out and '"transactionPartitions":[{"topic"' in out
    r = pylog_cli("dump-segment", "--transaction-log-decoder", "--offsets-decoder", segments[0])
    assert r.returncode == 2 and "exclusive" in r.stderr


def dump_text(files) -> str:
    r = pylog_cli("dump-segment", "--transaction-log-decoder", *files)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_dump_segment_transaction_log_decoder_on_kafkas_golden(tmp_path):
    """The CLI on the `__transaction_state` segment Kafka wrote (tests/fixtures/kafka-transaction-log):
    the same text as Kafka's DumpLogSegments --transaction-log-decoder --print-data-log (dump.txt)."""
    import shutil
    from pathlib import Path

    fixture = Path(__file__).parent / "fixtures" / "kafka-transaction-log"
    seg = tmp_path / "00000000000000000000.log"
    shutil.copy(fixture / seg.name, seg)
    r = pylog_cli("dump-segment", "--transaction-log-decoder", "--print-data-log", seg)
    assert r.returncode == 0, r.stderr
    golden = (fixture / "dump.txt").read_text()
    assert r.stdout.replace(str(seg), seg.name) == golden
