"""The delegation token APIs (38-41) and the share-group state APIs (83-87) byte for byte against
Apache Kafka 4.4's own generated message classes, at every version Kafka 4.4 serves: a Java
program builds each message and prints its bytes; pylog must encode the same body to the same
bytes and decode Kafka's bytes back to it (kafka-python ships none of these at 4.4's versions)."""
from __future__ import annotations

import uuid

import pytest

from support.kafka_peer import java_named_bytes
from support.protocol_support import assert_body_matches

SOURCE = r"""
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.*;
import org.apache.kafka.common.protocol.*;
import java.nio.ByteBuffer;
import java.util.*;

public class TokensStateGolden {
    static String hex(byte[] a) { StringBuilder sb = new StringBuilder(); for (byte x : a) sb.append(String.format("%02x", x)); return sb.toString(); }
    static void out(String name, Message m, int v) {
        ObjectSerializationCache c = new ObjectSerializationCache();
        ByteBuffer b = ByteBuffer.allocate(m.size(c, (short) v));
        m.write(new ByteBufferAccessor(b), c, (short) v);
        System.out.println(name + " " + v + " " + hex(b.array()));
    }
    public static void main(String[] args) {
        Uuid t = new Uuid(0x0102030405060708L, 0x090a0b0c0d0e0f10L);
        byte[] mac = new byte[] {1, 2, 3};
        for (int v = 1; v <= 3; v++) {
            CreateDelegationTokenRequestData c = new CreateDelegationTokenRequestData().setMaxLifetimeMs(-1)
                .setRenewers(List.of(new CreateDelegationTokenRequestData.CreatableRenewers().setPrincipalType("User").setPrincipalName("bob")));
            if (v >= 3) c.setOwnerPrincipalType("User").setOwnerPrincipalName("alice");
            out("cdt-req", c, v);
            CreateDelegationTokenResponseData r = new CreateDelegationTokenResponseData().setPrincipalType("User")
                .setPrincipalName("alice").setIssueTimestampMs(1000).setExpiryTimestampMs(2000).setMaxTimestampMs(3000)
                .setTokenId("tid").setHmac(mac).setThrottleTimeMs(0);
            if (v >= 3) r.setTokenRequesterPrincipalType("User").setTokenRequesterPrincipalName("admin");
            out("cdt-resp", r, v);
            DescribeDelegationTokenResponseData.DescribedDelegationToken d = new DescribeDelegationTokenResponseData.DescribedDelegationToken()
                .setPrincipalType("User").setPrincipalName("alice").setIssueTimestamp(1000).setExpiryTimestamp(2000)
                .setMaxTimestamp(3000).setTokenId("tid").setHmac(mac).setRenewers(List.of(
                    new DescribeDelegationTokenResponseData.DescribedDelegationTokenRenewer().setPrincipalType("User").setPrincipalName("bob")));
            if (v >= 3) d.setTokenRequesterPrincipalType("User").setTokenRequesterPrincipalName("admin");
            out("ddt-req", new DescribeDelegationTokenRequestData().setOwners(List.of(
                new DescribeDelegationTokenRequestData.DescribeDelegationTokenOwner().setPrincipalType("User").setPrincipalName("alice"))), v);
            out("ddt-req-all", new DescribeDelegationTokenRequestData().setOwners(null), v);
            out("ddt-resp", new DescribeDelegationTokenResponseData().setTokens(List.of(d)), v);
        }
        for (int v = 1; v <= 2; v++) {
            out("rdt-req", new RenewDelegationTokenRequestData().setHmac(mac).setRenewPeriodMs(5000), v);
            out("rdt-resp", new RenewDelegationTokenResponseData().setErrorCode((short) 62).setExpiryTimestampMs(9000), v);
            out("edt-req", new ExpireDelegationTokenRequestData().setHmac(mac).setExpiryTimePeriodMs(-1), v);
            out("edt-resp", new ExpireDelegationTokenResponseData().setExpiryTimestampMs(9000), v);
        }
        out("init-req", new InitializeShareGroupStateRequestData().setGroupId("g").setTopics(List.of(
            new InitializeShareGroupStateRequestData.InitializeStateData().setTopicId(t).setPartitions(List.of(
                new InitializeShareGroupStateRequestData.PartitionData().setPartition(2).setStateEpoch(1).setStartOffset(7))))), 0);
        out("init-resp", new InitializeShareGroupStateResponseData().setResults(List.of(
            new InitializeShareGroupStateResponseData.InitializeStateResult().setTopicId(t).setPartitions(List.of(
                new InitializeShareGroupStateResponseData.PartitionResult().setPartition(2).setErrorMessage("x"))))), 0);
        out("read-req", new ReadShareGroupStateRequestData().setGroupId("g").setTopics(List.of(
            new ReadShareGroupStateRequestData.ReadStateData().setTopicId(t).setPartitions(List.of(
                new ReadShareGroupStateRequestData.PartitionData().setPartition(2).setLeaderEpoch(4))))), 0);
        out("read-resp", new ReadShareGroupStateResponseData().setResults(List.of(
            new ReadShareGroupStateResponseData.ReadStateResult().setTopicId(t).setPartitions(List.of(
                new ReadShareGroupStateResponseData.PartitionResult().setPartition(2).setStateEpoch(1).setStartOffset(7)
                    .setStateBatches(List.of(new ReadShareGroupStateResponseData.StateBatch().setFirstOffset(7)
                        .setLastOffset(9).setDeliveryState((byte) 2).setDeliveryCount((short) 1))))))), 0);
        for (int v = 0; v <= 1; v++) {
            WriteShareGroupStateRequestData.PartitionData p = new WriteShareGroupStateRequestData.PartitionData().setPartition(2)
                .setStateEpoch(1).setLeaderEpoch(4).setStartOffset(7).setStateBatches(List.of(
                    new WriteShareGroupStateRequestData.StateBatch().setFirstOffset(7).setLastOffset(9)
                        .setDeliveryState((byte) 4).setDeliveryCount((short) 2)));
            if (v >= 1) p.setDeliveryCompleteCount(3);
            out("write-req", new WriteShareGroupStateRequestData().setGroupId("g").setTopics(List.of(
                new WriteShareGroupStateRequestData.WriteStateData().setTopicId(t).setPartitions(List.of(p)))), v);
            out("write-resp", new WriteShareGroupStateResponseData().setResults(List.of(
                new WriteShareGroupStateResponseData.WriteStateResult().setTopicId(t).setPartitions(List.of(
                    new WriteShareGroupStateResponseData.PartitionResult().setPartition(2).setErrorCode((short) 3))))), v);
            out("sum-req", new ReadShareGroupStateSummaryRequestData().setGroupId("g").setTopics(List.of(
                new ReadShareGroupStateSummaryRequestData.ReadStateSummaryData().setTopicId(t).setPartitions(List.of(
                    new ReadShareGroupStateSummaryRequestData.PartitionData().setPartition(2).setLeaderEpoch(4))))), v);
            ReadShareGroupStateSummaryResponseData.PartitionResult sp = new ReadShareGroupStateSummaryResponseData.PartitionResult()
                .setPartition(2).setStateEpoch(1).setLeaderEpoch(4).setStartOffset(7);
            if (v >= 1) sp.setDeliveryCompleteCount(3);
            out("sum-resp", new ReadShareGroupStateSummaryResponseData().setResults(List.of(
                new ReadShareGroupStateSummaryResponseData.ReadStateSummaryResult().setTopicId(t).setPartitions(List.of(sp)))), v);
        }
        out("del-req", new DeleteShareGroupStateRequestData().setGroupId("g").setTopics(List.of(
            new DeleteShareGroupStateRequestData.DeleteStateData().setTopicId(t).setPartitions(List.of(
                new DeleteShareGroupStateRequestData.PartitionData().setPartition(2))))), 0);
        out("del-resp", new DeleteShareGroupStateResponseData().setResults(List.of(
            new DeleteShareGroupStateResponseData.DeleteStateResult().setTopicId(t).setPartitions(List.of(
                new DeleteShareGroupStateResponseData.PartitionResult().setPartition(2))))), 0);
    }
}
"""

T = uuid.UUID("01020304-0506-0708-090a-0b0c0d0e0f10")
MAC = b"\x01\x02\x03"
USER = {"principal_type": "User"}


def _token_bodies(v):
    requester = {"token_requester_principal_type": "User", "token_requester_principal_name": "admin"} if v >= 3 else {}
    owner = {"owner_principal_type": "User", "owner_principal_name": "alice"} if v >= 3 else {}
    yield "cdt-req", 38, "request", {**owner, "renewers": [dict(USER, principal_name="bob")], "max_lifetime_ms": -1}
    yield "cdt-resp", 38, "response", {"error_code": 0, **USER, "principal_name": "alice", **requester,
                                       "issue_timestamp_ms": 1000, "expiry_timestamp_ms": 2000,
                                       "max_timestamp_ms": 3000, "token_id": "tid", "hmac": MAC, "throttle_time_ms": 0}
    yield "ddt-req", 41, "request", {"owners": [dict(USER, principal_name="alice")]}
    yield "ddt-req-all", 41, "request", {"owners": None}
    yield "ddt-resp", 41, "response", {"error_code": 0, "throttle_time_ms": 0, "tokens": [
        {**USER, "principal_name": "alice", **requester, "issue_timestamp": 1000, "expiry_timestamp": 2000,
         "max_timestamp": 3000, "token_id": "tid", "hmac": MAC, "renewers": [dict(USER, principal_name="bob")]}]}
    if v <= 2:
        yield "rdt-req", 39, "request", {"hmac": MAC, "renew_period_ms": 5000}
        yield "rdt-resp", 39, "response", {"error_code": 62, "expiry_timestamp_ms": 9000, "throttle_time_ms": 0}
        yield "edt-req", 40, "request", {"hmac": MAC, "expiry_time_period_ms": -1}
        yield "edt-resp", 40, "response", {"error_code": 0, "expiry_timestamp_ms": 9000, "throttle_time_ms": 0}


def _result(key_fields):
    return {"results": [{"topic_id": T, "partitions": [dict(partition=2, **key_fields)]}]}


def _state_bodies(v):
    batch = {"first_offset": 7, "last_offset": 9}
    if v == 0:
        yield "init-req", 83, "request", {"group_id": "g", "topics": [
            {"topic_id": T, "partitions": [{"partition": 2, "state_epoch": 1, "start_offset": 7}]}]}
        yield "init-resp", 83, "response", _result({"error_code": 0, "error_message": "x"})
        yield "read-req", 84, "request", {"group_id": "g", "topics": [
            {"topic_id": T, "partitions": [{"partition": 2, "leader_epoch": 4}]}]}
        yield "read-resp", 84, "response", _result({"error_code": 0, "error_message": None, "state_epoch": 1,
                                                    "start_offset": 7, "state_batches": [
                                                        dict(batch, delivery_state=2, delivery_count=1)]})
        yield "del-req", 86, "request", {"group_id": "g", "topics": [{"topic_id": T, "partitions": [{"partition": 2}]}]}
        yield "del-resp", 86, "response", _result({"error_code": 0, "error_message": None})
    complete = {"delivery_complete_count": 3} if v >= 1 else {}
    yield "write-req", 85, "request", {"group_id": "g", "topics": [{"topic_id": T, "partitions": [
        {"partition": 2, "state_epoch": 1, "leader_epoch": 4, "start_offset": 7, **complete,
         "state_batches": [dict(batch, delivery_state=4, delivery_count=2)]}]}]}
    yield "write-resp", 85, "response", _result({"error_code": 3, "error_message": None})
    yield "sum-req", 87, "request", {"group_id": "g", "topics": [
        {"topic_id": T, "partitions": [{"partition": 2, "leader_epoch": 4}]}]}
    yield "sum-resp", 87, "response", _result({"error_code": 0, "error_message": None, "state_epoch": 1,
                                               "leader_epoch": 4, "start_offset": 7, **complete})


@pytest.fixture(scope="module")
def kafka_bytes():
    return java_named_bytes(SOURCE)


CASES = [(name, key, d, v, body) for v in (1, 2, 3) for name, key, d, body in _token_bodies(v)] + \
        [(name, key, d, v, body) for v in (0, 1) for name, key, d, body in _state_bodies(v)]


@pytest.mark.parametrize("name,key,direction,version,body", CASES, ids=[f"{c[0]}-v{c[3]}" for c in CASES])
def test_same_bytes_as_kafka(kafka_bytes, name, key, direction, version, body):
    assert_body_matches(name, key, version, direction, body, kafka_bytes[(name, version)])
