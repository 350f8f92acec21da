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


def test_leave_and_join_hand_over_with_no_duplicates(kafka_node, members):  # noqa: F811
    b = kafka_node.bootstrap
    topic, group = name("cgc-hand"), name("cgc-g")
    create_topic(b, topic, 4)
    produce(b, topic, 4, 30, tag="a")
    first, second = Member(b, group, [topic]), Member(b, group, [topic])
    members += [first, second]
    poll_until(members, lambda: balanced(members, 4) and len({r for m in members for r in m.records}) == 120,
               what="two members sharing four partitions, every record read")
    owned_by_first = first.assignment()
    first.close()  # revokes and leaves with epoch -1: its partitions move to the others
    third = Member(b, group, [topic])
    members.append(third)
    produce(b, topic, 4, 30, tag="b")
    total = 4 * 60
    poll_until(members, lambda: balanced(members, 4) and len({r for m in members for r in m.records}) == total,
               what="the handover done and every record read")
    seen = [r for m in members for r in m.records]
    assert len(seen) == len(set(seen)) == total, "a record was delivered twice across the handover"
    assert third.assignment() and second.assignment()
    # closing revoked what the first member owned (after its last commit)
    assert first.events[-1][0] == "revoke"
    assert sorted((tp.topic, tp.partition) for tp in first.events[-1][1]) == owned_by_first


def test_static_member_restart_keeps_its_partitions(kafka_node, members):  # noqa: F811
    b = kafka_node.bootstrap
    topic, group = name("cgc-static"), name("cgc-g")
    create_topic(b, topic, 4)
    produce(b, topic, 4, 10)
    s1, s2 = Member(b, group, [topic], instance_id="s1"), Member(b, group, [topic], instance_id="s2")
    members += [s1, s2]
    poll_until(members, lambda: balanced(members, 4), what="two static members with two partitions each")
    before, s2_events = s1.assignment(), list(s2.events)
    s1.close()  # leaves with epoch -2: the broker keeps s1's assignment for its session
    again = Member(b, group, [topic], instance_id="s1")
    members.append(again)
    poll_until(members, lambda: again.assignment() == before, what="the restarted static member's partitions")
    assert again.membership.member_id != s1.membership.member_id
    # the other member never noticed: no revocation, no new assignment
    assert s2.events == s2_events
    seen = [r for m in members for r in m.records]
    assert len(seen) == len(set(seen))


def test_regex_subscription_picks_up_a_new_topic(kafka_node, members):  # noqa: F811
    b = kafka_node.bootstrap
    prefix = name("cgcre").replace("-", "_")
    create_topic(b, f"{prefix}-a", 2)
    m = Member(b, name("cgc-g"), [f"^{prefix}-.*"])
    members.append(m)
    poll_until(members, lambda: m.assignment() == [(f"{prefix}-a", 0), (f"{prefix}-a", 1)],
               what="the regex's first topic assigned")
    create_topic(b, f"{prefix}-b", 2)
    produce(b, f"{prefix}-b", 2, 5)
    poll_until(members, lambda: len(m.assignment()) == 4 and len(m.records) == 10, timeout=120,
               what="the topic created later assigned through the broker-side regex")
    assert {t for t, _ in m.assignment()} == {f"{prefix}-a", f"{prefix}-b"}
    assert m.membership._heartbeat_body(1)["subscribed_topic_regex"] == f"^{prefix}-.*"
