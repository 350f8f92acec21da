"""The share-group records pylog writes to `__consumer_offsets` (ShareGroupMemberMetadata,
ShareGroupMetadata, ShareGroupTargetAssignmentMetadata/Member, ShareGroupCurrentMemberAssignment,
ShareGroupStatePartitionMetadata) byte for byte against Apache Kafka 4.4's generated classes
(kafka-group-coordinator): a Java program prints each key and value, pylog encodes the same
fields to the same bytes and decodes Kafka's back."""
from __future__ import annotations

import uuid

import pytest

from support.kafka_peer import java_program
from pylog.core.protocol import share_group_records as sr

SOURCE = r"""
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.*;
import org.apache.kafka.coordinator.group.generated.*;
import java.nio.ByteBuffer;
import java.util.*;

public class ShareGroupRecordsGolden {
    static String hex(byte[] a) { StringBuilder sb = new StringBuilder(); for (byte x : a) sb.append(String.format("%02x", x)); return sb.toString(); }
    static void rec(String name, short prefix, Message m) {
        ObjectSerializationCache c = new ObjectSerializationCache();
        int size = m.size(c, (short) 0);
        ByteBuffer b = ByteBuffer.allocate(2 + size); b.putShort(prefix);
        m.write(new ByteBufferAccessor(b), c, (short) 0);
        System.out.println(name + " " + hex(b.array()));
    }
    public static void main(String[] args) {
        Uuid t = new Uuid(0x0102030405060708L, 0x090a0b0c0d0e0f10L);
        rec("member-key", (short) 10, new ShareGroupMemberMetadataKey().setGroupId("g").setMemberId("m"));
        rec("member-value", (short) 0, new ShareGroupMemberMetadataValue().setRackId(null).setClientId("c")
            .setClientHost("/127.0.0.1").setSubscribedTopicNames(List.of("a", "b")));
        rec("group-key", (short) 11, new ShareGroupMetadataKey().setGroupId("g"));
        rec("group-value", (short) 0, new ShareGroupMetadataValue().setEpoch(7).setMetadataHash(123456789L));
        rec("tmeta-key", (short) 12, new ShareGroupTargetAssignmentMetadataKey().setGroupId("g"));
        rec("tmeta-value", (short) 0, new ShareGroupTargetAssignmentMetadataValue().setAssignmentEpoch(7));
        rec("tmember-key", (short) 13, new ShareGroupTargetAssignmentMemberKey().setGroupId("g").setMemberId("m"));
        rec("tmember-value", (short) 0, new ShareGroupTargetAssignmentMemberValue().setTopicPartitions(List.of(
            new ShareGroupTargetAssignmentMemberValue.TopicPartition().setTopicId(t).setPartitions(List.of(0, 2)))));
        rec("current-key", (short) 14, new ShareGroupCurrentMemberAssignmentKey().setGroupId("g").setMemberId("m"));
        rec("current-value", (short) 0, new ShareGroupCurrentMemberAssignmentValue().setMemberEpoch(7)
            .setPreviousMemberEpoch(6).setState((byte) 0).setAssignedPartitions(List.of(
                new ShareGroupCurrentMemberAssignmentValue.TopicPartitions().setTopicId(t).setPartitions(List.of(1)))));
        rec("parts-key", (short) 15, new ShareGroupStatePartitionMetadataKey().setGroupId("g"));
        rec("parts-value", (short) 0, new ShareGroupStatePartitionMetadataValue()
            .setInitializedTopics(List.of(new ShareGroupStatePartitionMetadataValue.TopicPartitionsInfo()
                .setTopicId(t).setTopicName("a").setPartitions(List.of(0, 1)))));
    }
}
"""

T = uuid.UUID("01020304-0506-0708-090a-0b0c0d0e0f10")
G, M = {"group_id": "g"}, {"group_id": "g", "member_id": "m"}
CASES = [
    ("member", sr.MEMBER_METADATA, M, {"rack_id": None, "client_id": "c", "client_host": "/127.0.0.1",
                                       "subscribed_topic_names": ["a", "b"]}),
    ("group", sr.GROUP_METADATA, G, {"epoch": 7, "metadata_hash": 123456789}),
    ("tmeta", sr.TARGET_METADATA, G, {"assignment_epoch": 7, "assignment_timestamp": 0}),
    ("tmember", sr.TARGET_MEMBER, M, {"topic_partitions": [{"topic_id": T, "partitions": [0, 2]}]}),
    ("current", sr.CURRENT_ASSIGNMENT, M, {"member_epoch": 7, "previous_member_epoch": 6, "state": 0,
                                           "assigned_partitions": [{"topic_id": T, "partitions": [1]}]}),
    ("parts", sr.STATE_PARTITION_METADATA, G, {"initializing_topics": [], "deleting_topics": [], "initialized_topics": [
        {"topic_id": T, "topic_name": "a", "partitions": [0, 1]}]}),
]


@pytest.fixture(scope="module")
def kafka_bytes():
    out = java_program(SOURCE).stdout
    return {line.split()[0]: bytes.fromhex(line.split()[1]) for line in out.splitlines() if line.strip()}


@pytest.mark.parametrize("name,rtype,key,value", CASES, ids=[c[0] for c in CASES])
def test_share_group_records_same_bytes_as_kafka(kafka_bytes, name, rtype, key, value):
    assert sr.encode_key(rtype, key) == kafka_bytes[f"{name}-key"]
    assert sr.encode_value(rtype, value) == kafka_bytes[f"{name}-value"]
    got_type, got_key, got_value = sr.decode(kafka_bytes[f"{name}-key"], kafka_bytes[f"{name}-value"])
    assert (got_type, got_key, got_value) == (rtype, key, value)
