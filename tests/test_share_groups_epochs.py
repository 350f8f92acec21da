"""Share group epochs (ShareGroupHeartbeat, ShareGroupDescribe) step as on Apache Kafka 4.4, driven
with raw heartbeats on both brokers in the same test: a new group's first join, the bump when new
share-partitions are initialized, a join, a leave whose new assignment waits for the next
heartbeat, added partitions, the last member leaving. Kafka computes assignments in the background,
so each step heartbeats until the member's assignment settles and then compares the group epoch,
assignment epoch and member epochs (which partitions a member gets is the assignor's business and
not compared here)."""
from __future__ import annotations

import socket
import time
import uuid

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions

from support import share_scenarios as sc
from support.broker_fixtures import call

NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS = 16, 14


@pytest.fixture(scope="module")
def brokers(share_brokers):
    return share_brokers


class Member:
    def __init__(self, s, group, topics):
        self.s, self.group, self.topics = s, group, topics
        self.id, self.epoch, self.parts = uuid.uuid4().hex, 0, None

    def heartbeat(self, leave=False):
        body = {"group_id": self.group, "member_id": self.id, "member_epoch": -1 if leave else self.epoch,
                "rack_id": None, "subscribed_topic_names": self.topics if self.epoch == 0 else None}
        deadline = time.monotonic() + 60
        while True:
            r = call(self.s, 76, 1, body)
            if r["error_code"] not in (NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS) or time.monotonic() > deadline:
                break
            # Kafka creates __consumer_offsets on the first FindCoordinator
            call(self.s, 10, 4, {"key_type": 0, "coordinator_keys": [self.group]})
            time.sleep(0.5)
        assert r["error_code"] == 0, r
        self.epoch = r["member_epoch"]
        if r["assignment"] is not None:
            self.parts = sum(len(t["partitions"]) for t in r["assignment"]["topic_partitions"])
        return r

    def until(self, parts, wait=60.0):
        """Heartbeat until the member holds `parts` partitions and its epoch is the group's target."""
        deadline = time.monotonic() + wait
        while True:
            self.heartbeat()
            d = describe(self.s, self.group)
            if self.parts == parts and d[1] == self.epoch or time.monotonic() > deadline:
                return d
            time.sleep(0.3)


def describe(s, group):
    g = call(s, 77, 1, {"group_ids": [group], "include_authorized_operations": False})["groups"][0]
    return g["group_state"], g["group_epoch"], g["assignment_epoch"], sorted(m["member_epoch"] for m in g["members"])


def _scenario(bs):
    host, port = bs.rsplit(":", 1)
    s = socket.create_connection((host, int(port)), timeout=30)
    topic, group = sc.name("ep"), sc.name("ep-g")
    sc.create_topic(bs, topic, 2)
    steps = []
    a = Member(s, group, [topic])
    a.heartbeat()
    steps.append(("a joined", a.until(2)))
    b = Member(s, group, [topic])
    b.heartbeat()
    b.until(1)
    steps.append(("b joined", a.until(1)))
    b.heartbeat(leave=True)
    steps.append(("b left", describe(s, group)))
    steps.append(("a took over", a.until(2)))
    admin = AdminClient({"bootstrap.servers": bs})
    admin.create_partitions([NewPartitions(topic, 3)])[topic].result(60)
    steps.append(("a got the new partition", a.until(3)))
    a.heartbeat(leave=True)
    steps.append(("a left", describe(s, group)))
    c = Member(s, sc.name("ep-g"), [sc.name("no-such-topic")])
    c.heartbeat()
    steps.append(("c joined a new group on a missing topic", (c.epoch, describe(s, c.group))))
    s.close()
    return steps


def _shift(step, by):
    what, (state, epoch, assignment_epoch, members) = step
    return what, (state, epoch + by, assignment_epoch + by, [m + by for m in members])


def test_share_group_epochs_step_as_on_kafka(brokers):
    out = sc.on_both(brokers, _scenario)
    pylog, kafka = out["pylog"], out["kafka"]
    assert pylog[:4] == kafka[:4] and pylog[6] == kafka[6], out
    # a partition added: Kafka bumps for the new metadata and again when the new share-partition is
    # initialized, unless its metadata listener initialized it before the member's next heartbeat
    # (one bump then); pylog initializes at that heartbeat, as Kafka mostly does
    assert pylog[4:6] in (kafka[4:6], [_shift(s, 1) for s in kafka[4:6]]), out
    assert out["kafka"][0] == ("a joined", ("Stable", 3, 3, [3])), out["kafka"]
    assert out["kafka"][2] == ("b left", ("Stable", 5, 4, [4])), out["kafka"]
