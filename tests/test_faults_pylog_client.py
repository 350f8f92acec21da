"""Faults on demand, with pylog's own clients (pylog.core.client): the same faults as
test_faults_confluent.py and the recovery pylog's producer and consumer perform."""
from __future__ import annotations

import time

import pytest

from pylog.core.client import Consumer, Producer, TopicPartition
from pylog.core.client.membership import attach_group
from support.fault_clients import (  # noqa: F401
    DEADLINE, commit_after_aborts, fault_on_filled_topic, kafka, no_rules_left, stored,
)
from support.fault_clients import produce_pylog as produce


def values_of(batches: dict) -> list[str]:
    return [r.value.decode() for recs in batches.values() for r in recs]


def poll_values(c, n, timeout=DEADLINE):
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        got += values_of(c.poll(200))
    return got


def test_throttled_client_waits_before_its_next_request(kafka):
    kafka.create_topic("py-throttle")
    rule = kafka.faults.add(api="Produce", topic="py-throttle", throttle_ms=1500, count=1)
    took = produce(kafka, "py-throttle", ["a"])
    took2 = produce(kafka, "py-throttle", ["b"])  # a new connection: not muted
    assert rule.hits == 1 and took[0] < 1.4 and took2[0] < 1.4
    with Producer(kafka.client_config(**{"linger.ms": 0})) as p:
        kafka.faults.add(api="Produce", topic="py-throttle", throttle_ms=1500, count=1)
        p.send("py-throttle", b"c", partition=0).get(DEADLINE)
        t0 = time.monotonic()
        p.send("py-throttle", b"d", partition=0).get(DEADLINE)  # held back for throttle_time_ms (KIP-219)
        assert time.monotonic() - t0 >= 1.2
        assert max(c.throttle_ms_max for c in p.client._conns.values()) == 1500  # the client read it
    assert stored(kafka, "py-throttle") == ["a", "b", "c", "d"]


def test_transaction_abortable_aborts_and_the_next_commits(kafka):
    from pylog.core.client.transactions import AbortableTransactionError

    kafka.create_topic("py-txn")
    rule = kafka.faults.add(api="Produce", transactional_id="py-txn-id", error="TRANSACTION_ABORTABLE", count=1)
    with Producer(kafka.client_config(**{"transactional.id": "py-txn-id", "linger.ms": 0})) as p:
        p.init_transactions(DEADLINE)
        aborted = commit_after_aborts(p, lambda v: p.send("py-txn", v, partition=0), AbortableTransactionError)
    assert rule.hits == 1 and len(aborted) == 1 and "TRANSACTION_ABORTABLE" in str(aborted[0])
    with Consumer(kafka.client_config(**{"isolation.level": "read_committed", "auto.offset.reset": "earliest"})) as c:
        c.assign([TopicPartition("py-txn", 0)])
        assert poll_values(c, 1) == ["try1"]


@pytest.mark.parametrize("reset", ["earliest", "latest"])
def test_offset_out_of_range_resets_per_auto_offset_reset(kafka, reset):
    topic = f"py-oor-{reset}"
    rule = fault_on_filled_topic(kafka, topic, 10, api="Fetch", topic=topic, error="OFFSET_OUT_OF_RANGE", count=1)
    with Consumer(kafka.client_config(**{"auto.offset.reset": reset})) as c:
        tp = TopicPartition(topic, 0)
        c.assign([tp])
        c.seek(tp, 5)
        if reset == "earliest":
            assert poll_values(c, 1)[0] == "v0"
        else:
            assert poll_values(c, 1, timeout=3) == []
            kafka.produce(topic, ["new"])
            assert poll_values(c, 1) == ["new"]
    assert rule.hits == 1


def test_rebalance_in_progress_makes_the_member_rejoin(kafka):
    rule = fault_on_filled_topic(kafka, "py-rip", 5, api="Heartbeat", group="py-rip-g",
                                 error="REBALANCE_IN_PROGRESS", count=1)
    with Consumer(kafka.client_config(**{"group.id": "py-rip-g", "auto.offset.reset": "earliest",
                                         "heartbeat.interval.ms": 300})) as c:
        assigned = []
        attach_group(c, on_assign=lambda tps: assigned.append(list(tps)))
        c.subscribe(["py-rip"])
        got = poll_values(c, 5)
        deadline = time.monotonic() + DEADLINE
        while len(assigned) < 2 and time.monotonic() < deadline:
            c.poll(200)
        assert len(assigned) >= 2  # assigned again after rejoining
        assert kafka.broker.group_coordinator.groups["py-rip-g"].generation >= 2
    assert rule.hits == 1
    assert sorted(got) == [f"v{i}" for i in range(5)]


def test_offline_partition_holds_records_until_cleared(kafka):
    kafka.create_topic("py-offline")
    rule = kafka.faults.offline("py-offline", partition=0)
    with Producer(kafka.client_config(**{"linger.ms": 0})) as p:
        futures = [p.send("py-offline", f"v{i}".encode(), partition=0) for i in range(5)]
        deadline = time.monotonic() + DEADLINE
        while rule.hits < 3 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert rule.hits >= 3 and not any(f.done() for f in futures)
        rule.clear()
        p.flush(DEADLINE)
        for f in futures:
            f.get(DEADLINE)
    assert stored(kafka, "py-offline") == [f"v{i}" for i in range(5)]


def test_unavailable_coordinator_delays_the_join_until_cleared(kafka):
    kafka.create_topic("py-coord")
    kafka.produce("py-coord", ["a", "b"])
    rule = kafka.faults.coordinator_unavailable(group="py-coord-g")
    with Consumer(kafka.client_config(**{"group.id": "py-coord-g", "auto.offset.reset": "earliest"})) as c:
        attach_group(c)
        c.subscribe(["py-coord"])
        got = []
        deadline = time.monotonic() + DEADLINE
        while rule.hits < 3 and time.monotonic() < deadline:
            got += values_of(c.poll(200))
        assert rule.hits >= 3 and got == []
        rule.clear()
        got += poll_values(c, 2)
    assert got == ["a", "b"]
