"""What the fault tests with real clients share: one embedded broker per module, its rules
cleared after each test, and the produce-through-a-fault scenario each client runs."""
from __future__ import annotations

import time

import confluent_kafka
import pytest

from pylog.core import client as pylog_client
from pylog.testing import EmbeddedBroker

DEADLINE = 60


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    """One embedded broker for the module; each test its own topics. A group's first join is not
    held back group.initial.rebalance.delay.ms (3 s by default): each test's group is new."""
    with EmbeddedBroker(tmp_path_factory.mktemp("faults"), settings={"group.initial.rebalance.delay.ms": "0"}) as b:
        yield b


@pytest.fixture(autouse=True)
def no_rules_left(kafka):
    """No rule outlives its test."""
    yield
    kafka.faults.clear()


def stored(kafka, topic) -> list[str]:
    """The values the broker holds in the topic, in order."""
    return [r.value.decode() for r in kafka.consume(topic)]


def produce_confluent(kafka, topic, values, **conf):
    """Produce every value to partition 0 with librdkafka's idempotent producer; returns the
    delivery latencies (s). Fails on any error."""
    p = confluent_kafka.Producer(kafka.client_config(**{"enable.idempotence": True, "linger.ms": 0, **conf}))
    errors, took = [], []
    t0 = time.monotonic()

    def done(err, msg):
        if err is not None:
            errors.append(err)
        took.append(time.monotonic() - t0)

    for v in values:
        p.produce(topic, v.encode(), partition=0, on_delivery=done)
    assert p.flush(DEADLINE) == 0, "messages left undelivered"
    assert not errors, errors
    return took


def produce_pylog(kafka, topic, values, **conf):
    """Send every value to partition 0 with pylog's idempotent producer; the latency of each."""
    with pylog_client.Producer(kafka.client_config(**{"linger.ms": 0, **conf})) as p:
        t0 = time.monotonic()
        futures = [p.send(topic, v.encode(), partition=0) for v in values]
        p.flush(DEADLINE)
        out = []
        for f in futures:
            f.get(DEADLINE)
            out.append(time.monotonic() - t0)
        return out


def produce_through_fault(kafka, produce, topic, n, conf=None, **rule):
    """Create `topic`, add a Produce rule on it, send v0..v{n-1} with the client's `produce`
    and check each is stored exactly once; returns (the rule, the delivery latencies)."""
    kafka.create_topic(topic)
    r = kafka.faults.add(api="Produce", topic=topic, **rule)
    values = [f"v{i}" for i in range(n)]
    took = produce(kafka, topic, values, **(conf or {}))
    assert stored(kafka, topic) == values
    return r, took


def fault_on_filled_topic(kafka, topic, n, /, **rule):
    """Create `topic` holding v0..v{n-1}, then add `rule`; returns the rule."""
    kafka.create_topic(topic)
    kafka.produce(topic, [f"v{i}" for i in range(n)])
    return kafka.faults.add(**rule)


def commit_after_aborts(p, send, abortable, attempts=4):
    """The application's transaction loop: begin, `send(value)`, commit; on an `abortable`
    error abort and try again. Returns the errors that made it abort."""
    aborted = []
    for attempt in range(attempts):
        p.begin_transaction()
        send(f"try{attempt}".encode())
        try:
            p.commit_transaction(DEADLINE)
            return aborted
        except abortable as e:
            aborted.append(e)
            p.abort_transaction(DEADLINE)
    return aborted
