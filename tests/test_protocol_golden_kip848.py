"""KIP-848 schemas (ConsumerGroupHeartbeat, ConsumerGroupDescribe) byte for byte against
Apache Kafka's own generated message classes (kafka-python 3.x does not ship them).

A Java program builds each message with kafka-clients and prints its bytes per version;
pylog must encode the same body to the same bytes and decode Kafka's bytes to it."""
from __future__ import annotations

import uuid

import pytest

from support.kafka_peer import java_named_bytes
from pylog.core.protocol import SCHEMAS
from support.protocol_support import assert_body_matches
from support.kip848_classes import KEYS  # noqa: F401


SOURCE = r"""
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.*;
import org.apache.kafka.common.protocol.*;
import java.nio.ByteBuffer;
import java.util.*;

public class Kip848Golden {
    static void out(String name, Message m, short v) {
        ObjectSerializationCache c = new ObjectSerializationCache();
        ByteBuffer b = ByteBuffer.allocate(m.size(c, v));
        m.write(new ByteBufferAccessor(b), c, v);
        StringBuilder sb = new StringBuilder();
        for (byte x : b.array()) sb.append(String.format("%02x", x));
        System.out.println(name + " " + v + " " + sb);
    }
    public static void main(String[] args) {
        Uuid t = new Uuid(0x0102030405060708L, 0x090a0b0c0d0e0f10L);
        for (short v = 0; v <= 1; v++) {
            ConsumerGroupHeartbeatRequestData join = new ConsumerGroupHeartbeatRequestData()
                .setGroupId("g1").setMemberId("m-1").setMemberEpoch(0).setInstanceId("i-1")
                .setRebalanceTimeoutMs(300000).setSubscribedTopicNames(List.of("a", "b"))
                .setServerAssignor("uniform").setTopicPartitions(List.of());
            if (v >= 1) join.setSubscribedTopicRegex("t.*");
            out("hb-join", join, v);
            out("hb-steady", new ConsumerGroupHeartbeatRequestData().setGroupId("g1").setMemberId("m-1")
                .setMemberEpoch(7).setTopicPartitions(List.of(new ConsumerGroupHeartbeatRequestData.TopicPartitions()
                    .setTopicId(t).setPartitions(List.of(0, 2)))), v);
            out("hb-leave", new ConsumerGroupHeartbeatRequestData().setGroupId("g1").setMemberId("m-1")
                .setMemberEpoch(-1), v);
            out("hb-resp", new ConsumerGroupHeartbeatResponseData().setMemberId("m-1").setMemberEpoch(8)
                .setHeartbeatIntervalMs(5000).setAssignment(new ConsumerGroupHeartbeatResponseData.Assignment()
                    .setTopicPartitions(List.of(new ConsumerGroupHeartbeatResponseData.TopicPartitions()
                        .setTopicId(t).setPartitions(List.of(1, 3))))), v);
            out("hb-resp-err", new ConsumerGroupHeartbeatResponseData().setErrorCode((short) 110)
                .setErrorMessage("fenced").setMemberEpoch(-1).setHeartbeatIntervalMs(0), v);
            out("cgd-req", new ConsumerGroupDescribeRequestData().setGroupIds(List.of("g1", "g2"))
                .setIncludeAuthorizedOperations(true), v);
            ConsumerGroupDescribeResponseData.Assignment a = new ConsumerGroupDescribeResponseData.Assignment()
                .setTopicPartitions(List.of(new ConsumerGroupDescribeResponseData.TopicPartitions()
                    .setTopicId(t).setTopicName("a").setPartitions(List.of(0, 1))));
            ConsumerGroupDescribeResponseData.Member m = new ConsumerGroupDescribeResponseData.Member()
                .setMemberId("m-1").setInstanceId(null).setRackId("r1").setMemberEpoch(8).setClientId("c")
                .setClientHost("/127.0.0.1").setSubscribedTopicNames(List.of("a")).setSubscribedTopicRegex(null)
                .setAssignment(a).setTargetAssignment(new ConsumerGroupDescribeResponseData.Assignment());
            if (v >= 1) m.setMemberType((byte) 1);
            out("cgd-resp", new ConsumerGroupDescribeResponseData().setThrottleTimeMs(3).setGroups(List.of(
                new ConsumerGroupDescribeResponseData.DescribedGroup().setGroupId("g1").setGroupState("Stable")
                    .setGroupEpoch(8).setAssignmentEpoch(8).setAssignorName("uniform").setMembers(List.of(m)),
                new ConsumerGroupDescribeResponseData.DescribedGroup().setGroupId("g2").setErrorCode((short) 69)
                    .setErrorMessage("no group"))), v);
        }
    }
}
"""

T = uuid.UUID("01020304-0506-0708-090a-0b0c0d0e0f10")


def bodies(v):
    join = {"group_id": "g1", "member_id": "m-1", "member_epoch": 0, "instance_id": "i-1",
            "rebalance_timeout_ms": 300000, "subscribed_topic_names": ["a", "b"],
            "server_assignor": "uniform", "topic_partitions": []}
    if v >= 1:
        join["subscribed_topic_regex"] = "t.*"
    member = {"member_id": "m-1", "rack_id": "r1", "member_epoch": 8, "client_id": "c",
              "client_host": "/127.0.0.1", "subscribed_topic_names": ["a"],
              "assignment": {"topic_partitions": [{"topic_id": T, "topic_name": "a", "partitions": [0, 1]}]},
              "target_assignment": {"topic_partitions": []}, "member_type": 1 if v >= 1 else -1}
    return {
        "hb-join": (68, "request", join),
        "hb-steady": (68, "request", {"group_id": "g1", "member_id": "m-1", "member_epoch": 7,
                                      "topic_partitions": [{"topic_id": T, "partitions": [0, 2]}]}),
        "hb-leave": (68, "request", {"group_id": "g1", "member_id": "m-1", "member_epoch": -1}),
        "hb-resp": (68, "response", {"throttle_time_ms": 0, "error_code": 0, "member_id": "m-1", "member_epoch": 8,
                                     "heartbeat_interval_ms": 5000,
                                     "assignment": {"topic_partitions": [{"topic_id": T, "partitions": [1, 3]}]}}),
        "hb-resp-err": (68, "response", {"throttle_time_ms": 0, "error_code": 110, "error_message": "fenced",
                                         "member_epoch": -1, "heartbeat_interval_ms": 0}),
        "cgd-req": (69, "request", {"group_ids": ["g1", "g2"], "include_authorized_operations": True}),
        "cgd-resp": (69, "response", {"throttle_time_ms": 3, "groups": [
            {"error_code": 0, "group_id": "g1", "group_state": "Stable", "group_epoch": 8, "assignment_epoch": 8,
             "assignor_name": "uniform", "members": [member]},
            {"error_code": 69, "error_message": "no group", "group_id": "g2", "group_state": "", "group_epoch": 0,
             "assignment_epoch": 0, "assignor_name": "", "members": []}]}),
    }


@pytest.fixture(scope="module")
def kafka_bytes():
    return java_named_bytes(SOURCE)


@pytest.mark.parametrize("v", [0, 1])
def test_same_bytes_as_kafka(kafka_bytes, v):
    for name, (key, direction, body) in bodies(v).items():
        theirs = kafka_bytes[(name, v)]
        assert_body_matches(f"{name} v{v}", key, v, direction, body, theirs)


def test_versions_are_kafka_4_3s():
    assert [(SCHEMAS[k].min_version, SCHEMAS[k].max_version) for k in KEYS] == [(0, 1), (0, 1)]
