"""Share group epochs (ShareGroupHeartbeat, ShareGroupDescribe) step as on Apache Kafka 4.4, driven
with raw heartbeats on both brokers in the same test: a new group's first join, the bump when new
share-partitions are initialized, a join, a leave whose new assignment waits for the next
heartbeat, added partitions, the last member leaving. Kafka computes assignments in the background,
so each step heartbeats until the member's assignment settles and then compares the group epoch,
assignment epoch and member epochs (which partitions a member gets is the assignor's business and
not compared here)."""
from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, NewPartitions

from support import share_scenarios as sc
from support.share_members import Member, connect, describe


@pytest.fixture(scope="module")
def brokers(share_brokers):
    return share_brokers


def _scenario(bs):
    s = connect(bs)
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
