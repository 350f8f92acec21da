"""Share-group schemas (KIP-932) byte for byte against Apache Kafka 4.4's own generated message
classes: the seven share APIs at every version Kafka 4.4 serves, and the ShareSnapshot/ShareUpdate
records of `__share_group_state` (kafka-share-coordinator's classes).

A Java program builds each message and prints its bytes per version; pylog must encode the same
body to the same bytes and decode Kafka's bytes back to it."""
from __future__ import annotations

import uuid

import pytest

from support.kafka_peer import java_named_bytes
from pylog.core.protocol import SCHEMAS
from pylog.core.protocol import share_state_records as ssr
from support.protocol_support import assert_body_matches, decoded_subset

SOURCE = r"""
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.*;
import org.apache.kafka.common.protocol.*;
import org.apache.kafka.common.record.internal.*;
import org.apache.kafka.coordinator.share.generated.*;
import java.nio.ByteBuffer;
import java.util.*;

public class ShareGolden {
    static String hex(byte[] a) { StringBuilder sb = new StringBuilder(); for (byte x : a) sb.append(String.format("%02x", x)); return sb.toString(); }
    static byte[] bytes(Message m, short v) {
        ObjectSerializationCache c = new ObjectSerializationCache();
        ByteBuffer b = ByteBuffer.allocate(m.size(c, v));
        m.write(new ByteBufferAccessor(b), c, v);
        return b.array();
    }
    static void out(String name, Message m, int v) { System.out.println(name + " " + v + " " + hex(bytes(m, (short) v))); }
    static void rec(String name, short prefix, Message m) {
        byte[] body = bytes(m, (short) 0);
        ByteBuffer b = ByteBuffer.allocate(2 + body.length); b.putShort(prefix); b.put(body);
        System.out.println(name + " 0 " + hex(b.array()));
    }
    public static void main(String[] args) {
        Uuid t = new Uuid(0x0102030405060708L, 0x090a0b0c0d0e0f10L);
        out("hb-join", new ShareGroupHeartbeatRequestData().setGroupId("g").setMemberId("m").setMemberEpoch(0)
            .setRackId(null).setSubscribedTopicNames(List.of("a", "b")), 1);
        out("hb-steady", new ShareGroupHeartbeatRequestData().setGroupId("g").setMemberId("m").setMemberEpoch(3)
            .setSubscribedTopicNames(null), 1);
        out("hb-resp", new ShareGroupHeartbeatResponseData().setMemberId("m").setMemberEpoch(3).setHeartbeatIntervalMs(5000)
            .setAssignment(new ShareGroupHeartbeatResponseData.Assignment().setTopicPartitions(List.of(
                new ShareGroupHeartbeatResponseData.TopicPartitions().setTopicId(t).setPartitions(List.of(0, 2))))), 1);
        out("hb-resp-null", new ShareGroupHeartbeatResponseData().setMemberId("m").setMemberEpoch(3)
            .setHeartbeatIntervalMs(5000), 1);
        out("sgd-req", new ShareGroupDescribeRequestData().setGroupIds(List.of("g")).setIncludeAuthorizedOperations(true), 1);
        out("sgd-resp", new ShareGroupDescribeResponseData().setGroups(List.of(
            new ShareGroupDescribeResponseData.DescribedGroup().setGroupId("g").setGroupState("Stable").setGroupEpoch(3)
              .setAssignmentEpoch(3).setAssignorName("simple").setMembers(List.of(
                new ShareGroupDescribeResponseData.Member().setMemberId("m").setRackId(null).setMemberEpoch(3)
                  .setClientId("c").setClientHost("/127.0.0.1").setSubscribedTopicNames(List.of("a"))
                  .setAssignment(new ShareGroupDescribeResponseData.Assignment().setTopicPartitions(List.of(
                    new ShareGroupDescribeResponseData.TopicPartitions().setTopicId(t).setTopicName("a")
                      .setPartitions(List.of(0))))))))), 1);
        for (int v = 1; v <= 2; v++) {
            ShareFetchRequestData f = new ShareFetchRequestData().setGroupId("g").setMemberId("m").setShareSessionEpoch(2)
                .setMaxWaitMs(500).setMinBytes(1).setMaxBytes(1048576).setMaxRecords(500).setBatchSize(500);
            if (v >= 2) f.setShareAcquireMode((byte) 1).setIsRenewAck(false);
            ShareFetchRequestData.FetchTopicCollection ft = new ShareFetchRequestData.FetchTopicCollection();
            ShareFetchRequestData.FetchPartitionCollection fp = new ShareFetchRequestData.FetchPartitionCollection();
            fp.add(new ShareFetchRequestData.FetchPartition().setPartitionIndex(0).setAcknowledgementBatches(List.of(
                new ShareFetchRequestData.AcknowledgementBatch().setFirstOffset(10).setLastOffset(12)
                    .setAcknowledgeTypes(List.of((byte) 1, (byte) 2, (byte) 3)))));
            ft.add(new ShareFetchRequestData.FetchTopic().setTopicId(t).setPartitions(fp));
            f.setTopics(ft);
            f.setForgottenTopicsData(List.of(new ShareFetchRequestData.ForgottenTopic().setTopicId(t).setPartitions(List.of(1))));
            out("sf-req", f, v);
            ShareFetchResponseData.PartitionData pd = new ShareFetchResponseData.PartitionData().setPartitionIndex(0)
                .setCurrentLeader(new ShareFetchResponseData.LeaderIdAndEpoch().setLeaderId(1).setLeaderEpoch(0))
                .setRecords(MemoryRecords.readableRecords(ByteBuffer.wrap(new byte[] {1, 2, 3})))
                .setAcquiredRecords(List.of(new ShareFetchResponseData.AcquiredRecords().setFirstOffset(10)
                    .setLastOffset(12).setDeliveryCount((short) 2)));
            ShareFetchResponseData.ShareFetchableTopicResponseCollection rc = new ShareFetchResponseData.ShareFetchableTopicResponseCollection();
            rc.add(new ShareFetchResponseData.ShareFetchableTopicResponse().setTopicId(t).setPartitions(List.of(pd)));
            out("sf-resp", new ShareFetchResponseData().setAcquisitionLockTimeoutMs(30000).setResponses(rc), v);
            ShareAcknowledgeRequestData a = new ShareAcknowledgeRequestData().setGroupId("g").setMemberId("m")
                .setShareSessionEpoch(-1);
            if (v >= 2) a.setIsRenewAck(true);
            ShareAcknowledgeRequestData.AcknowledgeTopicCollection at = new ShareAcknowledgeRequestData.AcknowledgeTopicCollection();
            ShareAcknowledgeRequestData.AcknowledgePartitionCollection ap = new ShareAcknowledgeRequestData.AcknowledgePartitionCollection();
            ap.add(new ShareAcknowledgeRequestData.AcknowledgePartition().setPartitionIndex(0).setAcknowledgementBatches(List.of(
                new ShareAcknowledgeRequestData.AcknowledgementBatch().setFirstOffset(5).setLastOffset(9)
                    .setAcknowledgeTypes(List.of((byte) 4)))));
            at.add(new ShareAcknowledgeRequestData.AcknowledgeTopic().setTopicId(t).setPartitions(ap));
            out("sa-req", a.setTopics(at), v);
            ShareAcknowledgeResponseData.ShareAcknowledgeTopicResponseCollection arc = new ShareAcknowledgeResponseData.ShareAcknowledgeTopicResponseCollection();
            arc.add(new ShareAcknowledgeResponseData.ShareAcknowledgeTopicResponse().setTopicId(t).setPartitions(List.of(
                new ShareAcknowledgeResponseData.PartitionData().setPartitionIndex(0).setErrorCode((short) 121)
                    .setErrorMessage("bad").setCurrentLeader(new ShareAcknowledgeResponseData.LeaderIdAndEpoch()
                        .setLeaderId(1).setLeaderEpoch(0)))));
            ShareAcknowledgeResponseData ar = new ShareAcknowledgeResponseData().setResponses(arc);
            if (v >= 2) ar.setAcquisitionLockTimeoutMs(30000);
            out("sa-resp", ar, v);
        }
        for (int v = 0; v <= 1; v++) {
            out("dsgo-req", new DescribeShareGroupOffsetsRequestData().setGroups(List.of(
                new DescribeShareGroupOffsetsRequestData.DescribeShareGroupOffsetsRequestGroup().setGroupId("g").setTopics(null))), v);
            DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponsePartition pp =
                new DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponsePartition().setPartitionIndex(0)
                    .setStartOffset(7).setLeaderEpoch(0);
            if (v >= 1) pp.setLag(3);
            out("dsgo-resp", new DescribeShareGroupOffsetsResponseData().setGroups(List.of(
                new DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponseGroup().setGroupId("g").setTopics(List.of(
                    new DescribeShareGroupOffsetsResponseData.DescribeShareGroupOffsetsResponseTopic().setTopicName("a")
                        .setTopicId(t).setPartitions(List.of(pp)))))), v);
        }
        AlterShareGroupOffsetsRequestData.AlterShareGroupOffsetsRequestTopicCollection atc = new AlterShareGroupOffsetsRequestData.AlterShareGroupOffsetsRequestTopicCollection();
        atc.add(new AlterShareGroupOffsetsRequestData.AlterShareGroupOffsetsRequestTopic().setTopicName("a").setPartitions(List.of(
            new AlterShareGroupOffsetsRequestData.AlterShareGroupOffsetsRequestPartition().setPartitionIndex(0).setStartOffset(4))));
        out("asgo-req", new AlterShareGroupOffsetsRequestData().setGroupId("g").setTopics(atc), 0);
        AlterShareGroupOffsetsResponseData.AlterShareGroupOffsetsResponseTopicCollection artc = new AlterShareGroupOffsetsResponseData.AlterShareGroupOffsetsResponseTopicCollection();
        artc.add(new AlterShareGroupOffsetsResponseData.AlterShareGroupOffsetsResponseTopic().setTopicName("a").setTopicId(t)
            .setPartitions(List.of(new AlterShareGroupOffsetsResponseData.AlterShareGroupOffsetsResponsePartition().setPartitionIndex(0))));
        out("asgo-resp", new AlterShareGroupOffsetsResponseData().setResponses(artc), 0);
        out("dlsgo-req", new DeleteShareGroupOffsetsRequestData().setGroupId("g").setTopics(List.of(
            new DeleteShareGroupOffsetsRequestData.DeleteShareGroupOffsetsRequestTopic().setTopicName("a"))), 0);
        out("dlsgo-resp", new DeleteShareGroupOffsetsResponseData().setResponses(List.of(
            new DeleteShareGroupOffsetsResponseData.DeleteShareGroupOffsetsResponseTopic().setTopicName("a").setTopicId(t))), 0);
        rec("snap-key", (short) 0, new ShareSnapshotKey().setGroupId("g").setTopicId(t).setPartition(3));
        rec("snap-value", (short) 0, new ShareSnapshotValue().setSnapshotEpoch(2).setStateEpoch(1).setLeaderEpoch(0)
            .setStartOffset(10).setDeliveryCompleteCount(1).setCreateTimestamp(1000).setWriteTimestamp(2000)
            .setStateBatches(List.of(new ShareSnapshotValue.StateBatch().setFirstOffset(10).setLastOffset(11)
                .setDeliveryState((byte) 0).setDeliveryCount((short) 2))));
        rec("upd-key", (short) 1, new ShareUpdateKey().setGroupId("g").setTopicId(t).setPartition(3));
        rec("upd-value", (short) 0, new ShareUpdateValue().setSnapshotEpoch(2).setLeaderEpoch(0).setStartOffset(-1)
            .setStateBatches(List.of(new ShareUpdateValue.StateBatch().setFirstOffset(12).setLastOffset(12)
                .setDeliveryState((byte) 2).setDeliveryCount((short) 1))));
        rec("upd-value-delta", (short) 0, new ShareUpdateValue().setSnapshotEpoch(3).setLeaderEpoch(0).setStartOffset(12)
            .setDeliveryCompleteCount(2).setStateBatches(List.of(
                new ShareUpdateValue.StateBatch().setFirstOffset(12).setLastOffset(13).setDeliveryState((byte) 2).setDeliveryCount((short) 1),
                new ShareUpdateValue.StateBatch().setFirstOffset(15).setLastOffset(15).setDeliveryState((byte) 0).setDeliveryCount((short) 3))));
    }
}
"""

T = uuid.UUID("01020304-0506-0708-090a-0b0c0d0e0f10")
LEADER = {"leader_id": 1, "leader_epoch": 0}


def bodies(v):
    """(name, version) -> (api key, direction, body) for every message the Java program prints."""
    out = {}

    def add(name, ver, key, direction, body):
        out[(name, ver)] = (key, direction, body)

    add("hb-join", 1, 76, "request", {"group_id": "g", "member_id": "m", "member_epoch": 0, "rack_id": None,
                                      "subscribed_topic_names": ["a", "b"]})
    add("hb-steady", 1, 76, "request", {"group_id": "g", "member_id": "m", "member_epoch": 3})
    add("hb-resp", 1, 76, "response", {"throttle_time_ms": 0, "error_code": 0, "member_id": "m", "member_epoch": 3,
                                       "heartbeat_interval_ms": 5000,
                                       "assignment": {"topic_partitions": [{"topic_id": T, "partitions": [0, 2]}]}})
    add("hb-resp-null", 1, 76, "response", {"throttle_time_ms": 0, "error_code": 0, "member_id": "m",
                                            "member_epoch": 3, "heartbeat_interval_ms": 5000, "assignment": None})
    add("sgd-req", 1, 77, "request", {"group_ids": ["g"], "include_authorized_operations": True})
    add("sgd-resp", 1, 77, "response", {"throttle_time_ms": 0, "groups": [{
        "error_code": 0, "group_id": "g", "group_state": "Stable", "group_epoch": 3, "assignment_epoch": 3,
        "assignor_name": "simple", "members": [{
            "member_id": "m", "rack_id": None, "member_epoch": 3, "client_id": "c", "client_host": "/127.0.0.1",
            "subscribed_topic_names": ["a"],
            "assignment": {"topic_partitions": [{"topic_id": T, "topic_name": "a", "partitions": [0]}]}}]}]})
    for ver in (1, 2):
        req = {"group_id": "g", "member_id": "m", "share_session_epoch": 2, "max_wait_ms": 500, "min_bytes": 1,
               "max_bytes": 1048576, "max_records": 500, "batch_size": 500,
               "topics": [{"topic_id": T, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                   {"first_offset": 10, "last_offset": 12, "acknowledge_types": [1, 2, 3]}]}]}],
               "forgotten_topics_data": [{"topic_id": T, "partitions": [1]}]}
        if ver >= 2:
            req["share_acquire_mode"] = 1
        add("sf-req", ver, 78, "request", req)
        add("sf-resp", ver, 78, "response", {
            "throttle_time_ms": 0, "error_code": 0, "acquisition_lock_timeout_ms": 30000, "node_endpoints": [],
            "responses": [{"topic_id": T, "partitions": [{
                "partition_index": 0, "error_code": 0, "acknowledge_error_code": 0, "current_leader": LEADER,
                "records": b"\x01\x02\x03",
                "acquired_records": [{"first_offset": 10, "last_offset": 12, "delivery_count": 2}]}]}]})
        add("sa-req", ver, 79, "request", {
            "group_id": "g", "member_id": "m", "share_session_epoch": -1, "is_renew_ack": ver >= 2,
            "topics": [{"topic_id": T, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                {"first_offset": 5, "last_offset": 9, "acknowledge_types": [4]}]}]}]})
        add("sa-resp", ver, 79, "response", {
            "throttle_time_ms": 0, "error_code": 0, "acquisition_lock_timeout_ms": 30000 if ver >= 2 else 0,
            "node_endpoints": [], "responses": [{"topic_id": T, "partitions": [{
                "partition_index": 0, "error_code": 121, "error_message": "bad", "current_leader": LEADER}]}]})
    for ver in (0, 1):
        add("dsgo-req", ver, 90, "request", {"groups": [{"group_id": "g", "topics": None}]})
        part = {"partition_index": 0, "start_offset": 7, "leader_epoch": 0, "error_code": 0}
        if ver >= 1:
            part["lag"] = 3
        add("dsgo-resp", ver, 90, "response", {"throttle_time_ms": 0, "groups": [{
            "group_id": "g", "error_code": 0,
            "topics": [{"topic_name": "a", "topic_id": T, "partitions": [part]}]}]})
    add("asgo-req", 0, 91, "request", {"group_id": "g", "topics": [
        {"topic_name": "a", "partitions": [{"partition_index": 0, "start_offset": 4}]}]})
    add("asgo-resp", 0, 91, "response", {"throttle_time_ms": 0, "error_code": 0, "responses": [
        {"topic_name": "a", "topic_id": T, "partitions": [{"partition_index": 0, "error_code": 0}]}]})
    add("dlsgo-req", 0, 92, "request", {"group_id": "g", "topics": [{"topic_name": "a"}]})
    add("dlsgo-resp", 0, 92, "response", {"throttle_time_ms": 0, "error_code": 0, "responses": [
        {"topic_name": "a", "topic_id": T, "error_code": 0}]})
    return out


@pytest.fixture(scope="module")
def kafka_bytes():
    return java_named_bytes(SOURCE)


def test_share_apis_same_bytes_as_kafka(kafka_bytes):
    for (name, v), (key, direction, body) in bodies(0).items():
        theirs = kafka_bytes[(name, v)]
        assert_body_matches(f"{name} v{v}", key, v, direction, body, theirs)


def test_share_group_state_records_same_bytes_as_kafka(kafka_bytes):
    snap = {"snapshot_epoch": 2, "state_epoch": 1, "leader_epoch": 0, "start_offset": 10,
            "delivery_complete_count": 1, "create_timestamp": 1000, "write_timestamp": 2000,
            "state_batches": [{"first_offset": 10, "last_offset": 11, "delivery_state": 0, "delivery_count": 2}]}
    upd = {"snapshot_epoch": 2, "leader_epoch": 0, "start_offset": -1,
           "state_batches": [{"first_offset": 12, "last_offset": 12, "delivery_state": 2, "delivery_count": 1}]}
    assert ssr.encode_key(ssr.SNAPSHOT, "g", T, 3) == kafka_bytes[("snap-key", 0)]
    assert ssr.encode_value(ssr.SNAPSHOT, snap) == kafka_bytes[("snap-value", 0)]
    assert ssr.encode_key(ssr.UPDATE, "g", T, 3) == kafka_bytes[("upd-key", 0)]
    assert ssr.encode_value(ssr.UPDATE, {**upd, "delivery_complete_count": -1}) == kafka_bytes[("upd-value", 0)]
    rtype, k, v = ssr.decode(kafka_bytes[("upd-key", 0)], kafka_bytes[("upd-value", 0)])
    assert (rtype, k) == (ssr.UPDATE, {"group_id": "g", "topic_id": T, "partition": 3})
    assert decoded_subset(upd, v)
    # an update as pylog's store writes one: the snapshot's epoch, the start offset, only the changed batches
    from pylog.broker.groups.share.store import coalesce
    delta = coalesce({12: (2, 1), 13: (2, 1), 15: (0, 3)})
    assert ssr.encode_value(ssr.UPDATE, {"snapshot_epoch": 3, "leader_epoch": 0, "start_offset": 12,
                                         "delivery_complete_count": 2, "state_batches": delta}) \
        == kafka_bytes[("upd-value-delta", 0)]


def test_versions_are_kafka_4_4s():
    assert {k: (SCHEMAS[k].min_version, SCHEMAS[k].max_version) for k in (76, 77, 78, 79, 90, 91, 92)} == {
        76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2), 90: (0, 1), 91: (0, 0), 92: (0, 0)}
