"""Pure parts of consumer groups: consumer protocol bytes, assignors, __consumer_offsets
records, the group state machine."""
from __future__ import annotations

import struct

import pytest

from pylog.broker.groups import offsets_topic as ot
from pylog.broker.groups.state import (
    COMPLETING, DEAD, EMPTY, PREPARING, STABLE, Group, IllegalStateTransition, Member,
)
from pylog.core.client.assignors import (
    ASSIGNORS, CooperativeStickyAssignor, MemberSubscription, RangeAssignor, RoundRobinAssignor, assignors_for,
)
from pylog.core.client.subscription import (
    Assignment, Subscription, decode_assignment, decode_subscription, encode_assignment, encode_subscription,
)
from pylog.core.errors import ErrorCode
from pylog.core.records.offsets_records import format_offsets_record


# ---------------------------------------------------------------- consumer protocol
def test_subscription_matches_kafka_python_encoding():
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as KS

    theirs = KS(topics=["b", "a"], user_data=b"xy", owned_partitions=[KS.TopicPartition(topic="a", partitions=[0, 1])],
                generation_id=7, rack_id="r1", version=3).encode()
    ours = encode_subscription(Subscription(["b", "a"], b"xy", [("a", 0), ("a", 1)], 7, "r1"))
    assert ours == theirs
    sub = decode_subscription(theirs)
    assert (sub.topics, sub.user_data, sub.owned_partitions, sub.generation_id, sub.rack_id) == \
        (["b", "a"], b"xy", [("a", 0), ("a", 1)], 7, "r1")


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_versions_roundtrip(version):
    sub = Subscription(["t"], None, [("t", 3)], 5, None, version=version)
    back = decode_subscription(encode_subscription(sub))
    assert back.topics == ["t"] and back.version == version
    assert back.owned_partitions == ([("t", 3)] if version >= 1 else [])
    assert back.generation_id == (5 if version >= 2 else -1)


def test_newer_subscription_version_reads_known_fields():
    data = bytearray(encode_subscription(Subscription(["t"], b"u", [], 2, "rack")))
    struct.pack_into(">h", data, 0, 9)
    data += b"\x00\x00\x00\x2a"  # a field from the future
    sub = decode_subscription(bytes(data))
    assert sub.topics == ["t"] and sub.rack_id == "rack" and sub.generation_id == 2


def test_assignment_roundtrip_and_kafka_python():
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as KA

    a = Assignment([("x", 2), ("x", 0), ("y", 1)], None, 0)
    data = encode_assignment(a)
    assert sorted(decode_assignment(data).partitions) == [("x", 0), ("x", 2), ("y", 1)]
    theirs = KA.decode(data, version=0)
    assert sorted((t.topic, p) for t in theirs.assigned_partitions for p in t.partitions) == \
        [("x", 0), ("x", 2), ("y", 1)]
    assert decode_assignment(b"").partitions == []


# ---------------------------------------------------------------- assignors
def _members(n, topics=("t",), static=None):
    out = {}
    for i in range(n):
        mid = f"m{i}"
        out[mid] = MemberSubscription(mid, Subscription(list(topics)), (static or {}).get(mid))
    return out


def test_range_assignor_like_kafka():
    m = _members(2, ("t0", "t1"))
    got = RangeAssignor().assign(m, {"t0": 3, "t1": 3})
    assert got == {"m0": [("t0", 0), ("t0", 1), ("t1", 0), ("t1", 1)], "m1": [("t0", 2), ("t1", 2)]}


def test_range_orders_static_members_first():
    m = _members(2, static={"m1": "a-instance"})
    got = RangeAssignor().assign(m, {"t": 3})
    assert got["m1"] == [("t", 0), ("t", 1)] and got["m0"] == [("t", 2)]


def test_roundrobin_skips_unsubscribed():
    m = {"a": MemberSubscription("a", Subscription(["t0"])), "b": MemberSubscription("b", Subscription(["t0", "t1"]))}
    got = RoundRobinAssignor().assign(m, {"t0": 3, "t1": 2})
    assert got["a"] == [("t0", 0), ("t0", 2)]
    assert got["b"] == [("t0", 1), ("t1", 0), ("t1", 1)]


@pytest.mark.parametrize("name", ["range", "roundrobin", "cooperative-sticky"])
@pytest.mark.parametrize("members,parts", [(1, 6), (3, 6), (4, 6), (10, 6), (3, 7)])
def test_every_partition_exactly_once(name, members, parts):
    got = ASSIGNORS[name].assign(_members(members), {"t": parts})
    flat = [tp for tps in got.values() for tp in tps]
    assert sorted(flat) == [("t", p) for p in range(parts)]
    sizes = sorted(len(v) for v in got.values())
    assert sizes[-1] - sizes[0] <= 1


def test_cooperative_sticky_keeps_owned_and_defers_moves():
    a = CooperativeStickyAssignor()
    first = a.assign(_members(2), {"t": 6})
    # a third member arrives; the old members report what they own
    m = {mid: MemberSubscription(mid, Subscription(["t"], None, first[mid], 1)) for mid in first}
    m["m2"] = MemberSubscription("m2", Subscription(["t"], None, [], -1))
    second = a.assign(m, {"t": 6})
    for mid in ("m0", "m1"):
        assert set(second[mid]) <= set(first[mid])  # sticky: nothing new, only revocations
        assert len(second[mid]) == 2
    assert second["m2"] == []  # the moving partitions are revoked first (KIP-429)
    # follow-up round: the revoked partitions are now free
    m = {mid: MemberSubscription(mid, Subscription(["t"], None, second[mid], 2)) for mid in second}
    third = a.assign(m, {"t": 6})
    assert len(third["m2"]) == 2 and third["m0"] == second["m0"] and third["m1"] == second["m1"]


def test_assignors_for_accepts_java_class_names():
    got = assignors_for(["org.apache.kafka.clients.consumer.CooperativeStickyAssignor", "range"])
    assert [a.name for a in got] == ["cooperative-sticky", "range"]
    with pytest.raises(ValueError):
        assignors_for(["nope"])


# ---------------------------------------------------------------- __consumer_offsets
@pytest.mark.parametrize("group,expected", [
    ("my-group", 12), ("console-consumer-12345", 6), ("grüppe", 12), ("polygenelubricants", 0), ("g", 3)])
def test_partition_for_matches_java(group, expected):
    # expected values computed with Java 17: abs(s.hashCode()) % 50, Utils.abs(MIN_VALUE) = 0
    assert ot.partition_for(group, 50) == expected


def test_offsets_records_roundtrip_and_dump_text():
    k = ot.offset_key("g", "t", 3)
    v = ot.offset_value(99, 5, "md", 1700000000000)
    key_text, value_text = format_offsets_record(k, v, 0)
    assert key_text == '{"type":"1","data":{"group":"g","topic":"t","partition":3}}'
    assert value_text == '{"version":"3","data":{"offset":99,"leaderEpoch":5,"metadata":"md",' \
                         '"commitTimestamp":1700000000000}}'
    rec = ot.parse_record(k, v)
    assert (rec.group, rec.topic, rec.partition, rec.value) == ("g", "t", 3, (99, 5, "md", 1700000000000))
    assert ot.parse_record(k, None).value is None

    sg = ot.StoredGroup("consumer", 4, "range", "m1", 1700000000001, [
        ot.StoredMember("m1", None, "c", "/127.0.0.1", 300000, 45000, b"\x00\x01", b"\x02")])
    gk, gv = ot.group_key("g"), ot.group_value(sg)
    key_text, value_text = format_offsets_record(gk, gv, 1)
    assert key_text == '{"type":"2","data":{"group":"g"}}'
    assert '"protocolType":"consumer","generation":4,"protocol":"range","leader":"m1"' in value_text
    back = ot.parse_record(gk, gv).value
    assert back == sg


# ---------------------------------------------------------------- state machine
def _member(mid, protocols=(("range", b"r"), ("roundrobin", b"rr"))):
    return Member(mid, None, "c", "h", 1000, 6000, "consumer", list(protocols))


def test_state_transitions():
    g = Group("g")
    assert g.state == EMPTY
    with pytest.raises(IllegalStateTransition):
        g.transition(STABLE)
    for s in (PREPARING, COMPLETING, STABLE, PREPARING, EMPTY, DEAD):
        g.transition(s)
    assert g.state == DEAD


def test_protocol_selection_votes():
    g = Group("g")
    g.add_member(_member("a", [("roundrobin", b""), ("range", b"")]))
    assert g.supports("consumer", [("range", b"")])
    assert not g.supports("consumer", [("sticky", b"")])
    assert not g.supports("connect", [("range", b"")])
    g.add_member(_member("b", [("range", b""), ("roundrobin", b"")]))
    g.add_member(_member("c", [("range", b"")]))
    assert g.candidate_protocols() == {"range"}
    assert g.select_protocol() == "range"
    assert g.leader_id == "a"
    g.remove_member("a")
    assert g.leader_id == "b"


# ---------------------------------------------------------------- coordinator on real storage
def _coordinator(tmp_path, **overrides):
    import types

    from pylog.broker.groups.coordinator import GroupCoordinator
    from pylog.core.config import BROKER_CONFIGS
    from pylog.storage import LogManager

    cfg = BROKER_CONFIGS.resolve({"offsets.topic.num.partitions": "3", **overrides})
    logs = LogManager([str(tmp_path / "data")], cfg)
    logs.startup()
    broker = types.SimpleNamespace(config=cfg, logs=logs, node_id=1, stopping=False,
                                   settings=types.SimpleNamespace(advertised_host="127.0.0.1", advertised_port=9),
                                   leader_epoch=lambda log_: 0, wake=lambda t, p: None)
    gc = GroupCoordinator(broker)
    gc.load()
    return gc, logs


def _commit(gc, group, offsets):
    """A simple (admin) commit: generation -1, no member; an error code per partition."""
    return gc.commit_offsets(group, -1, "", None, [(tp, o, -1, "") for tp, o in offsets.items()])


def test_offsets_replay_and_retention(tmp_path):
    import time as _t

    gc, logs = _coordinator(tmp_path, **{"offsets.retention.minutes": "1"})
    assert _commit(gc, "keep", {("t", 0): 5, ("t", 1): 6}) == [0, 0]
    assert _commit(gc, "old", {("t", 0): 1}) == [0]
    assert _commit(gc, "keep", {("t", 0): 9}) == [0]
    logs.shutdown()
    gc, logs = _coordinator(tmp_path, **{"offsets.retention.minutes": "1"})  # replay
    assert {tp: e.offset for tp, e in gc.groups["keep"].offsets.items()} == {("t", 0): 9, ("t", 1): 6}
    assert gc.groups["old"].offsets[("t", 0)].offset == 1
    now = int(_t.time() * 1000)
    assert gc.expire_offsets(now) == 0  # nothing is a minute old yet
    gc.groups["old"].offsets[("t", 0)].commit_ts -= 61_000
    assert gc.expire_offsets(now) == 1
    assert "old" not in gc.groups and "keep" in gc.groups
    logs.shutdown()
    gc, logs = _coordinator(tmp_path)  # the tombstones replay too
    assert "old" not in gc.groups and gc.groups["keep"].offsets[("t", 1)].offset == 6
    logs.shutdown()


def test_metadata_too_large_is_refused_per_partition(tmp_path):
    gc, logs = _coordinator(tmp_path, **{"offset.metadata.max.bytes": "4"})
    codes = gc.commit_offsets("g", -1, "", None, [(("t", 0), 1, -1, "ok"), (("t", 1), 1, -1, "toolong")])
    assert codes == [ErrorCode.NONE, ErrorCode.OFFSET_METADATA_TOO_LARGE]
    assert list(gc.groups["g"].offsets) == [("t", 0)]
    logs.shutdown()
