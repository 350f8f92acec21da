"""pylog's consumer with `group.protocol=consumer` (KIP-848) against Apache Kafka 4.3.1.

Kafka serves the new protocol by default: the broker assigns, pylog's consumer
heartbeats and reconciles. Every member here commits after each poll (as an
application with auto-commit off does), so a clean handover delivers nothing twice.
"""
from __future__ import annotations

import itertools
import time

import pytest

from kafka_fixtures import kafka_node  # noqa: F401
from waiting import wait_until

_ids = itertools.count()


def name(prefix):
    return f"{prefix}-{next(_ids)}-{int(time.time() * 1000) % 100000}"


def create_topic(bootstrap, topic, partitions):
    from pylog.core.client import Admin

    with Admin({"bootstrap.servers": bootstrap}) as a:
        a.create_topic(topic, partitions)


def produce(bootstrap, topic, partitions, per_partition, tag="v"):
    from pylog.core.client import Producer

    with Producer({"bootstrap.servers": bootstrap, "linger.ms": "5"}) as p:
        futs = [p.send(topic, f"{tag}-{part}-{i}".encode(), partition=part)
                for part in range(partitions) for i in range(per_partition)]
        p.flush()
        for f in futs:
            f.get(30)


class Member:
    """One pylog consumer in the group, polled by the test's thread."""

    def __init__(self, bootstrap, group, topics, instance_id=None, **props):
        from pylog.core.client import Consumer
        from pylog.core.client.group import attach_group

        conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                "auto.offset.reset": "earliest", "enable.auto.commit": "false", "client.id": f"cgc-{group}"}
        if instance_id is not None:
            conf["group.instance.id"] = instance_id
        conf.update(props)
        self.consumer = Consumer(conf)
        self.events: list = []
        self.records: list = []
        self.membership = attach_group(self.consumer, on_assign=lambda tps: self.events.append(("assign", tps)),
                                       on_revoke=lambda tps: self.events.append(("revoke", tps)),
                                       on_lost=lambda tps: self.events.append(("lost", tps)))
        self.consumer.subscribe(topics)
        self.closed = False

    def poll(self):
        recs = self.consumer.poll(100)
        for tp, rs in recs.items():
            self.records += [(tp.topic, tp.partition, r.offset) for r in rs]
        if recs:
            self.consumer.commit()
        return recs

    def assignment(self):
        return sorted((tp.topic, tp.partition) for tp in self.consumer.assignment())

    def close(self):
        if not self.closed:
            self.closed = True
            self.consumer.close()


def poll_until(members, cond, timeout=90, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for m in members:
            if not m.closed:
                m.poll()
        if cond():
            return
    raise AssertionError(f"timed out waiting for {what}: " +
                         "; ".join(f"{m.membership.member_id}={m.assignment()}" for m in members if not m.closed))


def balanced(members, total):
    live = [m for m in members if not m.closed]
    parts = [p for m in live for p in m.assignment()]
    return (len(parts) == total and len(set(parts)) == total
            and max(len(m.assignment()) for m in live) - min(len(m.assignment()) for m in live) <= 1)


@pytest.fixture
def members():
    made: list = []
    yield made
    for m in made:
        m.close()


def test_three_members_share_six_partitions(kafka_node, members):  # noqa: F811
    b = kafka_node.bootstrap
    topic, group = name("cgc-six"), name("cgc-g")
    create_topic(b, topic, 6)
    produce(b, topic, 6, 20)
    members += [Member(b, group, [topic]) for _ in range(3)]
    poll_until(members, lambda: balanced(members, 6) and len({r for m in members for r in m.records}) == 120,
               what="three members with two partitions each and every record read")
    assert [len(m.assignment()) for m in members] == [2, 2, 2]
    seen = [r for m in members for r in m.records]
    assert len(seen) == len(set(seen)) == 120
    for m in members:
        assert m.membership.member_epoch > 0
        # the callbacks tell the same story as the assignment: added minus revoked
        owned = set()
        for kind, tps in m.events:
            assert kind in ("assign", "revoke"), m.events
            tps = {(tp.topic, tp.partition) for tp in tps}
            if kind == "assign":
                assert not owned & tps
                owned |= tps
            else:
                assert tps <= owned
                owned -= tps
        assert sorted(owned) == m.assignment()
