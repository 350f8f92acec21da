"""Kafka Streams 4.4.0 word count with processing.guarantee=exactly_once_v2 on pylog's broker at
transaction.version 2 and 1, the broker killed -9 and restarted mid-run: every count update
appears exactly once.

The app has no record cache, so each input word yields one update of its count; read with
read_committed, the updates of each word must be exactly 1, 2, ..., n (a duplicate or a gap
would show a transaction that was not exactly once) and the last one the true count.
"""
from __future__ import annotations

import subprocess
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from support.broker_fixtures import BrokerProcess, read_to_end
from support.kafka_peer import compile_java, java_command
from support.waiting import wait_until

JAVA = Path(__file__).parent / "kafka" / "java" / "WordCountEos.java"
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon"]


def lines(start: int, n: int) -> list[str]:
    return [" ".join(WORDS[(i * 7 + j) % len(WORDS)] for j in range(1 + i % 3)) for i in range(start, start + n)]


def produce(b, topic, texts):
    p = Producer({"bootstrap.servers": b.bootstrap})
    for i, t in enumerate(texts):
        p.produce(topic, t.encode(), key=str(i).encode())
    assert p.flush(30) == 0


def updates(b, topic, partitions) -> dict[str, list[int]]:
    """Each word's count updates, read_committed; what arrived in 30 s while the broker may be restarting."""
    out: dict[str, list[int]] = defaultdict(list)
    for m in read_to_end(b, topic, range(partitions), "read_committed", 30, strict=False):
        out[m.key().decode()].append(int(m.value().decode()))
    return out


def producer_epochs(b) -> list[int]:
    """The producer epoch of every transactional id the broker knows (ListTransactions, DescribeTransactions)."""
    from support.broker_fixtures import call, connect

    with connect(b) as s:
        ids = [t["transactional_id"] for t in call(s, 66, 0, {"state_filters": [], "producer_id_filters": []})[
            "transaction_states"]]
        states = call(s, 65, 0, {"transactional_ids": ids})["transaction_states"]
    return [st["producer_epoch"] for st in states]


@pytest.mark.parametrize("level", [2, 1], ids=["tv2", "tv1"])
def test_word_count_exactly_once_across_broker_kill9(tmp_path, level):
    b = BrokerProcess(tmp_path / "data", "--set", "group.initial.rebalance.delay.ms=0",
                      "--set", "transaction.abort.timed.out.transaction.cleanup.interval.ms=500",
                      "--feature", f"transaction.version={level}").start()
    app = None
    try:
        admin = AdminClient({"bootstrap.servers": b.bootstrap})
        for f in admin.create_topics([NewTopic("wc-in", 2, 1), NewTopic("wc-out", 2, 1)]).values():
            f.result(15)
        texts = lines(0, 400)
        produce(b, "wc-in", texts[:200])
        classes, name = compile_java(JAVA.read_text())
        app = subprocess.Popen(java_command(name, b.bootstrap, "wc-app", "wc-in", "wc-out", str(tmp_path / "state"),
                                            extra_cp=classes),
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=open(tmp_path / "app.err", "wb"),
                               text=True)
        # mid-run: some counts are out, not all
        wait_until(lambda: sum(len(v) for v in updates(b, "wc-out", 2).values()) > 50, 120, "first counts")
        b.kill9()
        b.restart()
        produce(b, "wc-in", texts[200:])
        expected = Counter(w for t in texts for w in t.split(" "))
        wait_until(lambda: {k: v[-1] for k, v in updates(b, "wc-out", 2).items()} == dict(expected), 180,
                   lambda: f"final counts {dict(expected)}; app stderr: {(tmp_path / 'app.err').read_text()[-2000:]}")
        seen = updates(b, "wc-out", 2)
        for word, counts in seen.items():
            assert counts == list(range(1, expected[word] + 1)), (word, counts)
        # level 2: the epoch moved at every commit (several before and after the kill); level 1:
        # only at an init, which this run does at most twice
        epochs = producer_epochs(b)
        assert epochs and (max(epochs) >= 4 if level == 2 else max(epochs) <= 2), epochs
    finally:
        if app is not None:
            app.stdin.close()
            try:
                app.wait(60)
            except subprocess.TimeoutExpired:
                app.kill()
                app.wait()
        b.stop_clean() if b.alive() else None
