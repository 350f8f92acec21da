"""KIP-848 group bookkeeping without a broker: assignors, reconciliation, record codec."""
from __future__ import annotations

import uuid

import pytest

from pylog.broker.groups.consumer.group import (
    M_STABLE,
    M_UNRELEASED,
    M_UNREVOKED,
    ConsumerGroup,
    ConsumerMember,
    reconcile,
)
from pylog.broker.groups.consumer.assignors import MemberSpec, range_, uniform
from pylog.core.protocol import consumer_group_records as cr

T1, T2 = uuid.UUID(int=1), uuid.UUID(int=2)


def counts(a):
    return sorted(len(v) for v in a.values())


def everything(a):
    return sorted(tp for v in a.values() for tp in v)


def test_uniform_balances_and_covers():
    members = {m: MemberSpec({T1, T2}) for m in "abc"}
    a = uniform(members, {T1: 6, T2: 1})
    assert counts(a) == [2, 2, 3]
    assert everything(a) == sorted([(T1, p) for p in range(6)] + [(T2, 0)])


def test_uniform_is_sticky():
    first = uniform({"a": MemberSpec({T1}), "b": MemberSpec({T1})}, {T1: 6})
    # a third member joins: the first two give up one partition each and keep the rest
    second = uniform({"a": MemberSpec({T1}, first["a"]), "b": MemberSpec({T1}, first["b"]),
                      "c": MemberSpec({T1})}, {T1: 6})
    assert counts(second) == [2, 2, 2]
    assert second["a"] <= first["a"] and second["b"] <= first["b"]


def test_uniform_heterogeneous_subscriptions():
    a = uniform({"a": MemberSpec({T1}), "b": MemberSpec({T1, T2})}, {T1: 2, T2: 2})
    assert all(t == T1 for t, _ in a["a"]) and {(T2, 0), (T2, 1)} <= a["b"]
    assert everything(a) == sorted([(T1, 0), (T1, 1), (T2, 0), (T2, 1)])


def test_range_lines_up_co_partitioned_topics():
    a = range_({"b": MemberSpec({T1, T2}), "a": MemberSpec({T1, T2})}, {T1: 3, T2: 3})
    assert a["a"] == {(T1, 0), (T1, 1), (T2, 0), (T2, 1)} and a["b"] == {(T1, 2), (T2, 2)}


def test_partitions_are_revoked_before_they_move():
    g = ConsumerGroup("g", epoch=1, assignment_epoch=1)
    a, b = ConsumerMember("a"), ConsumerMember("b")
    g.members = {"a": a, "b": b}
    g.target = {"a": {(T1, 0), (T1, 1)}}
    assert reconcile(g, a, set()) and a.assigned == {(T1, 0), (T1, 1)} and a.state == M_STABLE
    # a second member: the target moves partition 1
    g.epoch = g.assignment_epoch = 2
    g.target = {"a": {(T1, 0)}, "b": {(T1, 1)}}
    assert reconcile(g, b, set())
    assert b.assigned == set() and b.state == M_UNRELEASED and b.epoch == 2  # 1 is still a's
    owned = {(T1, 0), (T1, 1)}
    assert reconcile(g, a, owned)
    assert a.state == M_UNREVOKED and a.pending_revocation == {(T1, 1)} and a.epoch == 1  # epoch held
    assert not reconcile(g, a, None)  # it did not say: it still owns it
    assert not reconcile(g, b, set()) and b.assigned == set()
    assert reconcile(g, a, {(T1, 0)})  # revoked
    assert a.state == M_STABLE and a.epoch == 2 and a.previous_epoch == 1 and not a.pending_revocation
    assert reconcile(g, b, set()) and b.assigned == {(T1, 1)} and b.state == M_STABLE
    assert g.state == "Stable"


@pytest.mark.parametrize("rtype,key,value", [
    (cr.GROUP_METADATA, {"group_id": "g"}, {"epoch": 7, "metadata_hash": 3, "creation_time_ms": -1}),
    (cr.TARGET_METADATA, {"group_id": "g"}, {"assignment_epoch": 7, "assignment_timestamp": 0}),
    (cr.TARGET_MEMBER, {"group_id": "g", "member_id": "m"},
     {"topic_partitions": [{"topic_id": T1, "partitions": [0, 2]}]}),
    (cr.CURRENT_ASSIGNMENT, {"group_id": "g", "member_id": "m"},
     {"member_epoch": 7, "previous_member_epoch": 6, "state": 1,
      "assigned_partitions": [{"topic_id": T1, "partitions": [0], "assignment_epochs": None}],
      "partitions_pending_revocation": [{"topic_id": T2, "partitions": [1], "assignment_epochs": None}]}),
])
def test_records_round_trip(rtype, key, value):
    k, v = cr.encode_key(rtype, key), cr.encode_value(rtype, value)
    assert int.from_bytes(k[:2], "big") == rtype
    assert cr.decode(k, v) == (rtype, key, value)
    assert cr.decode(k, None) == (rtype, key, None)


def test_kafka_member_metadata_value_decodes():
    """Bytes Apache Kafka 4.3.1 wrote for a librdkafka static member (tests/test_consumer_groups_848.py
    decodes a live node's records; this is one of them): the tagged ClassicMemberMetadata is an
    explicit null (an unsigned-varint 0 marker)."""
    key = bytes.fromhex("00050002676700165a56502b4e6c6b7651324f5146724e4a326d79686741")
    value = bytes.fromhex("000005696e7374000a72646b3834382d67670b2f3132372e302e302e310203673401000493e00001000100")
    rtype, k, v = cr.decode(key, value)
    assert rtype == cr.MEMBER_METADATA and k == {"group_id": "gg", "member_id": "ZVP+NlkvQ2OQFrNJ2myhgA"}
    assert v["instance_id"] == "inst" and v["subscribed_topic_names"] == ["g4"]
    assert v["rebalance_timeout_ms"] == 300000 and v["classic_member_metadata"] is None


def test_malformed_records_raise():
    with pytest.raises(cr.MalformedDataError):
        cr.decode(b"\x00\x05\x00", b"\x00\x00")
    with pytest.raises(cr.MalformedDataError):
        cr.decode(b"\x00\x02\x00\x01g", None)  # a classic type
