"""The target assignment records a share group writes to `__consumer_offsets`, on pylog and Apache
Kafka 4.4 in the same test: each new target assignment writes a ShareGroupTargetAssignmentMember
record only for the members whose part is new or changed (Kafka's TargetAssignmentBuilder), then
its ShareGroupTargetAssignmentMetadata record. Read back with a consumer of the group's partition.
The replay after a restart takes the latest record per member (tests/test_share_groups_membership_restart.py)."""
from __future__ import annotations

import time

from confluent_kafka import Consumer, TopicPartition

from pylog.broker.groups import offsets_topic as ot
from pylog.core.protocol import share_group_records as sr
from support import share_scenarios as sc
from support.share_members import Member, connect, two_sharing


def _target_records(bs: str, group: str, labels: dict) -> list:
    """[(sorted labels of the members written, assignment epoch)] per target assignment, in order."""
    c = Consumer({"bootstrap.servers": bs, "group.id": sc.name("tr-reader"), "enable.partition.eof": True,
                  "enable.auto.commit": False})
    tp = TopicPartition(ot.TOPIC, ot.partition_for(group, 50), 0)
    c.assign([tp])
    out, pending, deadline = [], [], time.monotonic() + 60
    _lo, hi = c.get_watermark_offsets(tp, timeout=30)
    pos = 0
    while pos < hi and time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is None or m.error():
            continue
        pos = m.offset() + 1
        if m.key() is None or not sr.is_share_record(m.key()):
            continue
        rtype, k, v = sr.decode(m.key(), m.value())
        if k["group_id"] != group or v is None:
            continue
        if rtype == sr.TARGET_MEMBER:
            pending.append(labels[k["member_id"]])
        elif rtype == sr.TARGET_METADATA:
            out.append((sorted(pending), v["assignment_epoch"]))
            pending = []
    c.close()
    return out


def test_only_the_changed_members_targets_are_written_as_on_kafka(share_brokers):
    def scenario(bs):
        t1, t2, group = sc.name("tr-a"), sc.name("tr-b"), sc.name("tr-g")
        sc.create_topic(bs, t1, 2)
        sc.create_topic(bs, t2, 1)
        s = connect(bs)
        a, b, _ = two_sharing(s, group, [t1])
        c = Member(s, group, [t2])  # a and b keep their parts: only c's target is new
        c.heartbeat()
        c.until(1)
        a.until(1)
        b.until(1)
        s.close()
        return _target_records(bs, group, {a.id: "a", b.id: "b", c.id: "c"})

    out = sc.on_both(share_brokers, scenario)
    # b's join changes a's part and adds b's; c's join (another topic) changes neither a's nor b's.
    # Earlier ones differ: Kafka computes a first target before the share-partitions are initialized
    # (a's empty part, then a's part again one epoch later), pylog initializes and assigns at once.
    written = {which: [labels for labels, _ in records] for which, records in out.items()}
    assert written["pylog"][-2:] == written["kafka"][-2:] == [["a", "b"], ["c"]], out
