"""Faults on demand, with pylog's own clients (pylog.core.client): the same faults as
test_faults_confluent.py and the recovery pylog's producer and consumer perform."""
from __future__ import annotations

import time

import pytest

from pylog.core.client import Consumer, Producer, TopicPartition
from pylog.core.client.group import attach_group
from pylog.testing import EmbeddedBroker

DEADLINE = 60


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    with EmbeddedBroker(tmp_path_factory.mktemp("faults-pylog")) as b:
        yield b


@pytest.fixture(autouse=True)
def no_rules_left(kafka):
    yield
    kafka.faults.clear()


def produce(kafka, topic, values, **conf):
    """Send every value to partition 0 with the idempotent producer; the latency of each."""
    with Producer(kafka.client_config(**{"linger.ms": 0, **conf})) as p:
        t0 = time.monotonic()
        futures = [p.send(topic, v.encode(), partition=0) for v in values]
        p.flush(DEADLINE)
        out = []
        for f in futures:
            f.get(DEADLINE)
            out.append(time.monotonic() - t0)
        return out


def stored(kafka, topic):
    return [r.value.decode() for r in kafka.consume(topic)]


def values_of(batches: dict) -> list[str]:
    return [r.value.decode() for recs in batches.values() for r in recs]


def poll_values(c, n, timeout=DEADLINE):
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n and time.monotonic() < deadline:
        got += values_of(c.poll(200))
    return got


def test_not_leader_is_retried_without_duplicates(kafka):
    kafka.create_topic("py-nl")
    rule = kafka.faults.add(api="Produce", topic="py-nl", error="NOT_LEADER_OR_FOLLOWER", count=3)
    values = [f"v{i}" for i in range(20)]
    produce(kafka, "py-nl", values)
    assert rule.hits == 3
    assert stored(kafka, "py-nl") == values


def test_written_but_timed_out_is_retried_without_duplicates(kafka):
    kafka.create_topic("py-rto")
    rule = kafka.faults.add(api="Produce", topic="py-rto", error="REQUEST_TIMED_OUT", after_handling=True, count=1)
    values = [f"v{i}" for i in range(10)]
    produce(kafka, "py-rto", values)
    assert rule.hits == 1
    assert stored(kafka, "py-rto") == values


@pytest.mark.parametrize("after", [False, True], ids=["before", "after-handling"])
def test_closed_connection_is_retried_without_duplicates(kafka, after):
    topic = f"py-close-{int(after)}"
    kafka.create_topic(topic)
    rule = kafka.faults.add(api="Produce", topic=topic, close=True, after_handling=after, count=1)
    values = [f"v{i}" for i in range(10)]
    produce(kafka, topic, values)
    assert rule.hits == 1
    assert stored(kafka, topic) == values


def test_no_answer_times_out_and_is_retried_without_duplicates(kafka):
    kafka.create_topic("py-drop")
    rule = kafka.faults.add(api="Produce", topic="py-drop", no_answer=True, after_handling=True, count=1)
    values = [f"v{i}" for i in range(5)]
    took = produce(kafka, "py-drop", values, **{"request.timeout.ms": 2000})
    assert rule.hits == 1
    assert max(took) >= 1.5  # waited for request.timeout.ms
    assert stored(kafka, "py-drop") == values


def test_delayed_answer_arrives_late(kafka):
    kafka.create_topic("py-delay")
    rule = kafka.faults.add(api="Produce", topic="py-delay", delay_ms=1500, count=1)
    took = produce(kafka, "py-delay", ["late"])
    assert rule.hits == 1 and took[0] >= 1.4
    assert stored(kafka, "py-delay") == ["late"]


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
    aborted = []
    with Producer(kafka.client_config(**{"transactional.id": "py-txn-id", "linger.ms": 0})) as p:
        p.init_transactions(DEADLINE)
        for attempt in range(4):
            p.begin_transaction()
            p.send("py-txn", f"try{attempt}".encode(), partition=0)
            try:
                p.commit_transaction(DEADLINE)
                break
            except AbortableTransactionError as e:
                aborted.append(str(e))
                p.abort_transaction(DEADLINE)
    assert rule.hits == 1 and len(aborted) == 1 and "TRANSACTION_ABORTABLE" in aborted[0]
    with Consumer(kafka.client_config(**{"isolation.level": "read_committed", "auto.offset.reset": "earliest"})) as c:
        c.assign([TopicPartition("py-txn", 0)])
        assert poll_values(c, 1) == ["try1"]


@pytest.mark.parametrize("reset", ["earliest", "latest"])
def test_offset_out_of_range_resets_per_auto_offset_reset(kafka, reset):
    topic = f"py-oor-{reset}"
    kafka.create_topic(topic)
    kafka.produce(topic, [f"v{i}" for i in range(10)])
    rule = kafka.faults.add(api="Fetch", topic=topic, error="OFFSET_OUT_OF_RANGE", count=1)
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
    kafka.create_topic("py-rip")
    kafka.produce("py-rip", [f"v{i}" for i in range(5)])
    rule = kafka.faults.add(api="Heartbeat", group="py-rip-g", error="REBALANCE_IN_PROGRESS", count=1)
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
