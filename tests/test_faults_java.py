"""Faults on demand, with Kafka's Java client (kafka-clients, the pinned version): each kind of
fault and the recovery the Java client really performs.

The rules for every scenario are set before one JVM runs them all
(tests/kafka/java/FaultsJava.java, topics and groups named jf-SCENARIO); the scenarios that
wait for a rule to fire clear it themselves over the broker's /faults endpoint. Each test
checks one scenario's output and what the broker stored.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from support.kafka_peer import java_program
from pylog.testing import EmbeddedBroker

JAVA = Path(__file__).parent / "kafka" / "java" / "FaultsJava.java"
SCENARIOS = ["nl", "rto", "close0", "close1", "drop", "delay", "throttle", "txn", "oor-earliest", "oor-latest",
             "rip", "offline", "coord"]
RULES = [
    {"id": "j-nl", "api": "Produce", "topic": "jf-nl", "error": "NOT_LEADER_OR_FOLLOWER", "count": 3},
    {"id": "j-rto", "api": "Produce", "topic": "jf-rto", "error": "REQUEST_TIMED_OUT", "after_handling": True,
     "count": 1},
    {"id": "j-close0", "kind": "close", "api": "Produce", "topic": "jf-close0", "count": 1},
    {"id": "j-close1", "kind": "close", "api": "Produce", "topic": "jf-close1", "after_handling": True, "count": 1},
    {"id": "j-drop", "kind": "no_answer", "api": "Produce", "topic": "jf-drop", "after_handling": True, "count": 1},
    {"id": "j-delay", "kind": "delay", "api": "Produce", "topic": "jf-delay", "ms": 1500, "count": 1},
    {"id": "j-throttle", "kind": "throttle", "api": "Produce", "topic": "jf-throttle", "ms": 1000, "count": 1},
    {"id": "j-txn", "api": "Produce", "transactional_id": "jf-txn-id", "error": "TRANSACTION_ABORTABLE", "count": 1},
    {"id": "j-oor-earliest", "api": "Fetch", "topic": "jf-oor-earliest", "error": "OFFSET_OUT_OF_RANGE", "count": 1},
    {"id": "j-oor-latest", "api": "Fetch", "topic": "jf-oor-latest", "error": "OFFSET_OUT_OF_RANGE", "count": 1},
    # the Java client ignores REBALANCE_IN_PROGRESS on a heartbeat sent while its SyncGroup is still out (a
    # slow machine), so the rule fires on five heartbeats, 300 ms apart: at least one reaches a stable member
    {"id": "j-rip", "api": "Heartbeat", "group": "jf-rip-g", "error": "REBALANCE_IN_PROGRESS", "count": 5},
    {"id": "j-offline", "kind": "offline", "topic": "jf-offline", "partition": 0},
    {"id": "j-coord", "kind": "coordinator", "group": "jf-coord-g"},
]


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """(broker, the program's key=value output) after every scenario ran in one JVM."""
    # the rip and coord groups' first joins are not held back group.initial.rebalance.delay.ms (3 s)
    settings = {"metrics.listener": "http://127.0.0.1:0", "faults.enable": "true",
                "group.initial.rebalance.delay.ms": "0"}
    with EmbeddedBroker(tmp_path_factory.mktemp("faults-java"), settings=settings) as kafka:
        for s in SCENARIOS:
            kafka.create_topic(f"jf-{s}")
        for name in ("oor-earliest", "oor-latest"):
            kafka.produce(f"jf-{name}", [f"v{i}" for i in range(10)])
        kafka.produce("jf-rip", [f"v{i}" for i in range(5)])
        kafka.produce("jf-coord", ["a", "b"])
        for r in RULES:
            kafka.faults.add(r)
        admin = f"http://127.0.0.1:{kafka.broker.metrics.port}"
        proc = java_program(JAVA.read_text(), kafka.bootstrap, admin, "jf", *SCENARIOS, timeout=600)
        out = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
        yield kafka, out


def stored(kafka, topic):
    return [r.value.decode() for r in kafka.consume(topic)]


def hits(kafka, rule_id):
    rule = kafka.faults.get(rule_id)
    return rule.hits if rule is not None else None


@pytest.mark.parametrize("scenario,n,fired", [("nl", 20, 3), ("rto", 10, 1), ("close0", 10, 1), ("close1", 10, 1),
                                              ("drop", 5, 1)])
def test_idempotent_producer_retries_without_duplicates(run, scenario, n, fired):
    kafka, out = run
    assert out[f"{scenario}.acked"] == str(n)
    assert hits(kafka, f"j-{scenario}") == fired
    assert stored(kafka, f"jf-{scenario}") == [f"v{i}" for i in range(n)]  # each record once, in order


def test_no_answer_waited_for_the_request_timeout(run):
    _, out = run
    assert int(out["drop.max_ms"]) >= 1500


def test_delayed_answer(run):
    kafka, out = run
    assert int(out["delay.max_ms"]) >= 1400 and hits(kafka, "j-delay") == 1


def test_throttle_time_seen_by_the_client(run):
    kafka, out = run
    assert float(out["throttle.throttle_max"]) >= 1000.0 and hits(kafka, "j-throttle") == 1


def test_transaction_abortable_aborts_then_commits(run):
    kafka, out = run
    aborted = out["txn.aborted"].strip("[]").split(", ")
    assert aborted[0] == "TransactionAbortableException" and hits(kafka, "j-txn") == 1
    assert out["txn.committed"] == f"[try{len(aborted)}]"  # only the committed attempt is read


def test_offset_out_of_range_resets_per_auto_offset_reset(run):
    kafka, out = run
    assert out["oor.earliest.first"] == "v0"  # from offset 5 back to the log start
    assert out["oor.latest.first"] == "new"  # to the end: v5..v9 skipped
    assert hits(kafka, "j-oor-earliest") == 1 and hits(kafka, "j-oor-latest") == 1


def test_rebalance_in_progress_rejoins(run):
    kafka, out = run
    assert out["rip.got"] == "[" + ", ".join(f"v{i}" for i in range(5)) + "]"
    assert int(out["rip.assigned"]) >= 2 and 1 <= hits(kafka, "j-rip") <= 5
    assert kafka.broker.group_coordinator.groups["jf-rip-g"].generation >= 2


def test_offline_partition_waits_until_cleared(run):
    kafka, out = run
    assert out["offline.done_before_clear"] == "0" and out["offline.acked"] == "5"
    assert kafka.faults.get("j-offline") is None  # the program cleared it over /faults
    assert stored(kafka, "jf-offline") == [f"v{i}" for i in range(5)]


def test_unavailable_coordinator_waits_until_cleared(run):
    kafka, out = run
    assert out["coord.before_clear"] == "0" and out["coord.got"] == "[a, b]"
    assert kafka.faults.get("j-coord") is None
