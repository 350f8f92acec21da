"""Consumer protocol (subscription/assignment) and __consumer_offsets records."""
from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from support.examples import examples
from support.protocol_support import from_kp, normalize, struct_strategy, to_kp
from pylog.core.protocol.consumer_protocol import (
    ASSIGNMENT,
    SUBSCRIPTION,
    MalformedDataError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from pylog.core.protocol import internal_records as ir

import kafka.protocol.consumer.metadata as kp_meta  # noqa: E402 - kafka-python 3.x, pinned in constraints.txt
PEERS = {"subscription": (SUBSCRIPTION, kp_meta.ConsumerProtocolSubscription, encode_subscription, decode_subscription),
         "assignment": (ASSIGNMENT, kp_meta.ConsumerProtocolAssignment, encode_assignment, decode_assignment)}


@pytest.mark.parametrize("kind", sorted(PEERS))
@pytest.mark.parametrize("version", [0, 1, 2, 3])
@settings(max_examples=examples(15), deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_consumer_protocol_round_trip_and_peer(kind, version, data):
    schema, kp_cls, encode, decode = PEERS[kind]
    body = data.draw(struct_strategy(schema.fields, version, False))
    ours = encode(body, version)
    assert ours[:2] == struct.pack(">h", version)
    expected = normalize(schema.fields, version, False, body)
    got = decode(ours)
    assert got.pop("version") == version
    assert got == expected
    theirs = bytes(to_kp(kp_cls, schema.fields, version, False, body).encode(version=version))
    assert ours == theirs
    back = kp_cls.decode(ours)
    assert from_kp(back, schema.fields, version, False) == {
        k: v for k, v in expected.items() if any(f.name == k and f.present(version) for f in schema.fields)}


def test_subscription_golden_v0():
    data = encode_subscription({"topics": ["t1"], "user_data": b"\x01"}, 0)
    assert data == b"\x00\x00" b"\x00\x00\x00\x01\x00\x02t1" b"\x00\x00\x00\x01\x01"


def test_newer_versions_read_as_newest_known():
    v3 = encode_subscription({"topics": ["a"], "rack_id": "r1", "generation_id": 7}, 3)
    future = struct.pack(">h", 9) + v3[2:] + b"\x00\x00\x00\x05extra"
    got = decode_subscription(future)
    assert got["version"] == 9 and got["topics"] == ["a"] and got["rack_id"] == "r1"


def test_empty_assignment_bytes():
    assert decode_assignment(b"")["assigned_partitions"] == []


@pytest.mark.parametrize("bad", [b"", b"\x00", b"\x00\x00\x00\x00\x00\x05a", b"\xff\xff", b"\x00\x00\x7f\xff\xff\xff"])
def test_malformed_subscription(bad):
    with pytest.raises(MalformedDataError):
        decode_subscription(bad)


# --- __consumer_offsets --------------------------------------------------------

def test_offset_commit_key_golden():
    key = ir.encode_offset_commit_key("g", "t", 3)
    assert key == b"\x00\x01" b"\x00\x01g" b"\x00\x01t" b"\x00\x00\x00\x03"
    assert ir.decode_key(key) == ("offset_commit", 1, {"group": "g", "topic": "t", "partition": 3})
    assert ir.decode_key(b"\x00\x00" + key[2:])[1] == 0


def test_group_metadata_key_golden():
    key = ir.encode_group_metadata_key("grp")
    assert key == b"\x00\x02\x00\x03grp"
    assert ir.decode_key(key) == ("group_metadata", 2, {"group": "grp"})


def test_offset_commit_value_versions():
    base = {"offset": 42, "leader_epoch": 5, "metadata": "m", "commit_timestamp": 1000, "expire_timestamp": 2000}
    v1 = ir.encode_offset_commit_value(base, 1)
    assert v1 == (b"\x00\x01" + struct.pack(">q", 42) + b"\x00\x01m" + struct.pack(">qq", 1000, 2000))
    v3 = ir.encode_offset_commit_value(base, 3)
    assert v3 == (b"\x00\x03" + struct.pack(">qi", 42, 5) + b"\x00\x01m" + struct.pack(">q", 1000))
    v4 = ir.encode_offset_commit_value(base, 4)
    assert v4 == (b"\x00\x04" + struct.pack(">qi", 42, 5) + b"\x02m" + struct.pack(">q", 1000) + b"\x00")
    for version, data in ((1, v1), (3, v3), (4, v4)):
        got_version, got = ir.decode_value("offset_commit", data)
        assert got_version == version and got["offset"] == 42 and got["metadata"] == "m"
    assert ir.decode_value("offset_commit", v1)[1]["leader_epoch"] == -1
    assert ir.decode_value("offset_commit", v3)[1]["expire_timestamp"] == -1


@pytest.mark.parametrize("version", [0, 1, 2, 3, 4])
def test_group_metadata_value_round_trip(version):
    value = {"protocol_type": "consumer", "generation": 3, "protocol": "range", "leader": "m1",
             "current_state_timestamp": 123, "members": [
                 {"member_id": "m1", "group_instance_id": "i1", "client_id": "c", "client_host": "/127.0.0.1",
                  "rebalance_timeout": 300000, "session_timeout": 45000, "subscription": b"sub", "assignment": b"as"}]}
    data = ir.encode_group_metadata_value(value, version)
    got_version, got = ir.decode_value("group_metadata", data)
    assert got_version == version
    assert got == normalize(ir.GROUP_METADATA_VALUE.fields, version, version >= 4, value)
    rec = ir.decode_record(ir.encode_group_metadata_key("g"), data)
    assert rec["kind"] == "group_metadata" and rec["value"]["members"][0]["subscription"] == b"sub"


def test_group_metadata_value_v0_golden():
    value = {"protocol_type": "consumer", "generation": 1, "protocol": None, "leader": None, "members": []}
    assert ir.encode_group_metadata_value(value, 0) == (
        b"\x00\x00" b"\x00\x08consumer" b"\x00\x00\x00\x01" b"\xff\xff" b"\xff\xff" b"\x00\x00\x00\x00")


def test_tombstones_and_bad_keys():
    assert ir.decode_record(ir.encode_offset_commit_key("g", "t", 0), None)["value"] is None
    with pytest.raises(ir.MalformedDataError):
        ir.decode_key(b"\x00\x07\x00\x00")
    with pytest.raises(ir.MalformedDataError):
        ir.decode_key(b"\x00")
    with pytest.raises(ir.MalformedDataError):
        ir.decode_value("offset_commit", b"\x00\x03\x00")


def test_decode_record_reads_every_coordinator_record_family():
    """Kafka 4.4's coordinator writes share (10-15) and streams (17, 19-23) group records to
    `__consumer_offsets` beside the consumer (3-8, 16) and classic ones: all decode; 9 and 18
    (types Kafka no longer writes) stay unknown."""
    from pylog.core.protocol import share_group_records as shr
    from pylog.core.protocol import streams_group_records as stg

    key = shr.encode_key(shr.MEMBER_METADATA, {"group_id": "g", "member_id": "m"})
    value = shr.encode_value(shr.MEMBER_METADATA, {"rack_id": None, "client_id": "c", "client_host": "/127.0.0.1",
                                                   "subscribed_topic_names": ["t"]})
    rec = ir.decode_record(key, value)
    assert (rec["kind"], rec["key_version"], rec["key"]["member_id"]) == ("share_group", 10, "m")
    assert rec["value_version"] == 0 and rec["value"]["subscribed_topic_names"] == ["t"]
    skey = stg.encode_key(stg.GROUP_METADATA, {"group_id": "s"})
    assert ir.decode_record(skey, None) == {"kind": "streams_group", "key_version": 17, "key": {"group_id": "s"},
                                            "value_version": None, "value": None}
    for unknown in (9, 18):
        with pytest.raises(ir.MalformedDataError):
            ir.decode_record(unknown.to_bytes(2, "big") + b"\x00\x01g", None)
