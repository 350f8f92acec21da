"""Streams-group schemas (StreamsGroupHeartbeat, StreamsGroupDescribe,
StreamsGroupTopologyDescriptionUpdate) byte for byte against Apache Kafka 4.4's own generated
message classes: a Java program builds each message with kafka-clients and prints its bytes per
version; pylog must encode the same body to the same bytes and decode Kafka's bytes to it."""
from __future__ import annotations

import pytest

from pylog.core.protocol import SCHEMAS
from support.kafka_peer import java_named_bytes
from support.protocol_support import assert_body_matches

SOURCE = r"""
import org.apache.kafka.common.message.*;
import org.apache.kafka.common.protocol.*;
import java.nio.ByteBuffer;
import java.util.*;

public class StreamsGolden {
    static void out(String name, Message m, short v) {
        ObjectSerializationCache c = new ObjectSerializationCache();
        ByteBuffer b = ByteBuffer.allocate(m.size(c, v));
        m.write(new ByteBufferAccessor(b), c, v);
        StringBuilder sb = new StringBuilder();
        for (byte x : b.array()) sb.append(String.format("%02x", x));
        System.out.println(name + " " + v + " " + sb);
    }
    public static void main(String[] args) {
        for (short v = 0; v <= 1; v++) {
            StreamsGroupHeartbeatRequestData.Subtopology sub = new StreamsGroupHeartbeatRequestData.Subtopology()
                .setSubtopologyId("1").setSourceTopics(List.of("app-rep")).setSourceTopicRegex(List.of())
                .setStateChangelogTopics(List.of(new StreamsGroupHeartbeatRequestData.TopicInfo().setName("app-ch")
                    .setPartitions(0).setReplicationFactor((short) 0).setTopicConfigs(List.of(
                        new StreamsGroupHeartbeatRequestData.KeyValue().setKey("cleanup.policy").setValue("compact")))))
                .setRepartitionSinkTopics(List.of())
                .setRepartitionSourceTopics(List.of(new StreamsGroupHeartbeatRequestData.TopicInfo().setName("app-rep")
                    .setPartitions(4).setReplicationFactor((short) 1).setTopicConfigs(List.of())))
                .setCopartitionGroups(List.of(new StreamsGroupHeartbeatRequestData.CopartitionGroup()
                    .setSourceTopics(List.of((short) 0)).setSourceTopicRegex(List.of())
                    .setRepartitionSourceTopics(List.of((short) 0))));
            out("hb-join", new StreamsGroupHeartbeatRequestData().setGroupId("app").setMemberId("m-1").setMemberEpoch(0)
                .setEndpointInformationEpoch(0).setInstanceId("i-1").setRebalanceTimeoutMs(300000)
                .setTopology(new StreamsGroupHeartbeatRequestData.Topology().setEpoch(2).setSubtopologies(List.of(sub)))
                .setActiveTasks(List.of()).setStandbyTasks(List.of()).setWarmupTasks(List.of()).setProcessId("p-1")
                .setUserEndpoint(new StreamsGroupHeartbeatRequestData.Endpoint().setHost("h").setPort(65000))
                .setClientTags(List.of(new StreamsGroupHeartbeatRequestData.KeyValue().setKey("zone").setValue("a"))), v);
            out("hb-steady", new StreamsGroupHeartbeatRequestData().setGroupId("app").setMemberId("m-1").setMemberEpoch(7)
                .setEndpointInformationEpoch(3).setActiveTasks(List.of(new StreamsGroupHeartbeatRequestData.TaskIds()
                    .setSubtopologyId("0").setPartitions(List.of(0, 2))))
                .setTaskOffsets(List.of(new StreamsGroupHeartbeatRequestData.TaskOffset().setSubtopologyId("1")
                    .setPartition(1).setOffset(99L))).setShutdownApplication(true), v);
            StreamsGroupHeartbeatResponseData r = new StreamsGroupHeartbeatResponseData().setMemberId("m-1")
                .setMemberEpoch(8).setHeartbeatIntervalMs(5000).setTaskOffsetIntervalMs(60000)
                .setStatus(List.of(new StreamsGroupHeartbeatResponseData.Status().setStatusCode((byte) 3)
                    .setStatusDetail("Internal topics are missing: [app-ch]")))
                .setActiveTasks(List.of(new StreamsGroupHeartbeatResponseData.TaskIds().setSubtopologyId("0")
                    .setPartitions(List.of(1, 3)))).setStandbyTasks(List.of()).setWarmupTasks(List.of())
                .setEndpointInformationEpoch(4).setPartitionsByUserEndpoint(List.of(
                    new StreamsGroupHeartbeatResponseData.EndpointToPartitions()
                        .setUserEndpoint(new StreamsGroupHeartbeatResponseData.Endpoint().setHost("h").setPort(1))
                        .setActivePartitions(List.of(new StreamsGroupHeartbeatResponseData.TopicPartition()
                            .setTopic("in").setPartitions(List.of(1, 3)))).setStandbyPartitions(List.of())));
            if (v == 0) r.setAcceptableRecoveryLagLegacy(10000); else r.setAcceptableRecoveryLag(10000L).setTopologyDescriptionRequired(true);
            out("hb-resp", r, v);
            StreamsGroupDescribeRequestData dr = new StreamsGroupDescribeRequestData().setGroupIds(List.of("app"))
                .setIncludeAuthorizedOperations(true);
            if (v == 1) dr.setIncludeTopologyDescription(true);
            out("sgd-req", dr, v);
            StreamsGroupDescribeResponseData.TaskIds t = new StreamsGroupDescribeResponseData.TaskIds()
                .setSubtopologyId("0").setPartitions(List.of(0, 1));
            StreamsGroupDescribeResponseData.Member m = new StreamsGroupDescribeResponseData.Member().setMemberId("m-1")
                .setMemberEpoch(8).setInstanceId(null).setRackId("r").setClientId("c").setClientHost("/127.0.0.1")
                .setTopologyEpoch(2).setProcessId("p-1")
                .setUserEndpoint(new StreamsGroupDescribeResponseData.Endpoint().setHost("h").setPort(7))
                .setClientTags(List.of()).setTaskOffsets(List.of(new StreamsGroupDescribeResponseData.TaskOffset()
                    .setSubtopologyId("0").setPartition(0).setOffset(5L))).setTaskEndOffsets(List.of())
                .setAssignment(new StreamsGroupDescribeResponseData.Assignment().setActiveTasks(List.of(t))
                    .setStandbyTasks(List.of()).setWarmupTasks(List.of()))
                .setTargetAssignment(new StreamsGroupDescribeResponseData.Assignment().setActiveTasks(List.of(t))
                    .setStandbyTasks(List.of()).setWarmupTasks(List.of())).setIsClassic(false);
            StreamsGroupDescribeResponseData.DescribedGroup g = new StreamsGroupDescribeResponseData.DescribedGroup()
                .setGroupId("app").setGroupState("Stable").setGroupEpoch(8).setAssignmentEpoch(8)
                .setTopology(new StreamsGroupDescribeResponseData.Topology().setEpoch(2).setSubtopologies(List.of(
                    new StreamsGroupDescribeResponseData.Subtopology().setSubtopologyId("0").setSourceTopics(List.of("in"))
                        .setRepartitionSinkTopics(List.of("app-rep")).setStateChangelogTopics(List.of())
                        .setRepartitionSourceTopics(List.of()))))
                .setMembers(List.of(m));
            if (v == 1) g.setAssignorName("sticky").setTopologyDescriptionStatus((byte) 1)
                .setTopologyDescription(new StreamsGroupDescribeResponseData.TopologyDescription()
                    .setSubtopologies(List.of(new StreamsGroupDescribeResponseData.TopologyDescriptionSubtopology()
                        .setSubtopologyId("0").setNodes(List.of(new StreamsGroupDescribeResponseData.TopologyDescriptionNode()
                            .setName("KSTREAM-SOURCE-0").setNodeType((byte) 0).setSourceTopics(List.of("in"))
                            .setSinkTopic(null).setStores(List.of()).setSuccessors(List.of("KSTREAM-MAP-1"))))))
                    .setGlobalStores(List.of()));
            out("sgd-resp", new StreamsGroupDescribeResponseData().setThrottleTimeMs(3).setGroups(List.of(g,
                new StreamsGroupDescribeResponseData.DescribedGroup().setGroupId("nope").setErrorCode((short) 69)
                    .setErrorMessage("Group nope not found.").setGroupState("").setGroupEpoch(-1).setAssignmentEpoch(-1)
                    .setMembers(List.of()))), v);
        }
        StreamsGroupTopologyDescriptionUpdateRequestData.TopologyDescriptionNode n =
            new StreamsGroupTopologyDescriptionUpdateRequestData.TopologyDescriptionNode().setName("KSTREAM-SINK-2")
                .setNodeType((byte) 2).setSourceTopics(List.of()).setSinkTopic("out").setStores(List.of("s"))
                .setSuccessors(List.of());
        out("tdu-req", new StreamsGroupTopologyDescriptionUpdateRequestData().setGroupId("app").setMemberId("m-1")
            .setTopologyEpoch(2).setTopologyDescription(
                new StreamsGroupTopologyDescriptionUpdateRequestData.TopologyDescription().setSubtopologies(List.of(
                    new StreamsGroupTopologyDescriptionUpdateRequestData.TopologyDescriptionSubtopology()
                        .setSubtopologyId("0").setNodes(List.of(n))))
                    .setGlobalStores(List.of(new StreamsGroupTopologyDescriptionUpdateRequestData.TopologyDescriptionGlobalStore()
                        .setSource(n).setProcessor(n)))), (short) 0);
        out("tdu-resp", new StreamsGroupTopologyDescriptionUpdateResponseData().setErrorCode((short) 16)
            .setErrorMessage("not the coordinator"), (short) 0);
    }
}
"""

NODE_SINK = {"name": "KSTREAM-SINK-2", "node_type": 2, "source_topics": [], "sink_topic": "out", "stores": ["s"],
             "successors": []}


def bodies(v):
    sub = {"subtopology_id": "1", "source_topics": ["app-rep"], "source_topic_regex": [],
           "state_changelog_topics": [{"name": "app-ch", "partitions": 0, "replication_factor": 0,
                                       "topic_configs": [{"key": "cleanup.policy", "value": "compact"}]}],
           "repartition_sink_topics": [],
           "repartition_source_topics": [{"name": "app-rep", "partitions": 4, "replication_factor": 1,
                                          "topic_configs": []}],
           "copartition_groups": [{"source_topics": [0], "source_topic_regex": [], "repartition_source_topics": [0]}]}
    resp = {"throttle_time_ms": 0, "error_code": 0, "member_id": "m-1", "member_epoch": 8,
            "heartbeat_interval_ms": 5000, "task_offset_interval_ms": 60000,
            "status": [{"status_code": 3, "status_detail": "Internal topics are missing: [app-ch]"}],
            "active_tasks": [{"subtopology_id": "0", "partitions": [1, 3]}], "standby_tasks": [], "warmup_tasks": [],
            "endpoint_information_epoch": 4, "partitions_by_user_endpoint": [{
                "user_endpoint": {"host": "h", "port": 1},
                "active_partitions": [{"topic": "in", "partitions": [1, 3]}], "standby_partitions": []}]}
    resp.update({"acceptable_recovery_lag_legacy": 10000} if v == 0 else
                {"acceptable_recovery_lag": 10000, "topology_description_required": True})
    task = {"subtopology_id": "0", "partitions": [0, 1]}
    assignment = {"active_tasks": [task], "standby_tasks": [], "warmup_tasks": []}
    group = {"error_code": 0, "group_id": "app", "group_state": "Stable", "group_epoch": 8, "assignment_epoch": 8,
             "topology": {"epoch": 2, "subtopologies": [{"subtopology_id": "0", "source_topics": ["in"],
                                                         "repartition_sink_topics": ["app-rep"],
                                                         "state_changelog_topics": [],
                                                         "repartition_source_topics": []}]},
             "members": [{"member_id": "m-1", "member_epoch": 8, "instance_id": None, "rack_id": "r", "client_id": "c",
                          "client_host": "/127.0.0.1", "topology_epoch": 2, "process_id": "p-1",
                          "user_endpoint": {"host": "h", "port": 7}, "client_tags": [],
                          "task_offsets": [{"subtopology_id": "0", "partition": 0, "offset": 5}],
                          "task_end_offsets": [], "assignment": assignment, "target_assignment": assignment,
                          "is_classic": False}]}
    if v == 1:
        group.update(assignor_name="sticky", topology_description_status=1, topology_description={
            "subtopologies": [{"subtopology_id": "0", "nodes": [
                {"name": "KSTREAM-SOURCE-0", "node_type": 0, "source_topics": ["in"], "sink_topic": None,
                 "stores": [], "successors": ["KSTREAM-MAP-1"]}]}], "global_stores": []})
    out = {
        "hb-join": (88, "request", {
            "group_id": "app", "member_id": "m-1", "member_epoch": 0, "endpoint_information_epoch": 0,
            "instance_id": "i-1", "rebalance_timeout_ms": 300000, "topology": {"epoch": 2, "subtopologies": [sub]},
            "active_tasks": [], "standby_tasks": [], "warmup_tasks": [], "process_id": "p-1",
            "user_endpoint": {"host": "h", "port": 65000}, "client_tags": [{"key": "zone", "value": "a"}]}),
        "hb-steady": (88, "request", {
            "group_id": "app", "member_id": "m-1", "member_epoch": 7, "endpoint_information_epoch": 3,
            "active_tasks": [{"subtopology_id": "0", "partitions": [0, 2]}],
            "task_offsets": [{"subtopology_id": "1", "partition": 1, "offset": 99}], "shutdown_application": True}),
        "hb-resp": (88, "response", resp),
        "sgd-req": (89, "request", {"group_ids": ["app"], "include_authorized_operations": True,
                                    **({"include_topology_description": True} if v == 1 else {})}),
        "sgd-resp": (89, "response", {"throttle_time_ms": 3, "groups": [group, {
            "error_code": 69, "error_message": "Group nope not found.", "group_id": "nope", "group_state": "",
            "group_epoch": -1, "assignment_epoch": -1, "topology": None, "members": []}]}),
    }
    return out


@pytest.fixture(scope="module")
def kafka_bytes():
    return java_named_bytes(SOURCE)


@pytest.mark.parametrize("v", [0, 1])
def test_same_bytes_as_kafka(kafka_bytes, v):
    for name, (key, direction, body) in bodies(v).items():
        assert_body_matches(f"{name} v{v}", key, v, direction, body, kafka_bytes[(name, v)])


def test_topology_description_update_as_kafka(kafka_bytes):
    req = {"group_id": "app", "member_id": "m-1", "topology_epoch": 2, "topology_description": {
        "subtopologies": [{"subtopology_id": "0", "nodes": [NODE_SINK]}],
        "global_stores": [{"source": NODE_SINK, "processor": NODE_SINK}]}}
    assert_body_matches("tdu-req", 93, 0, "request", req, kafka_bytes[("tdu-req", 0)])
    assert_body_matches("tdu-resp", 93, 0, "response", {"throttle_time_ms": 0, "error_code": 16,
                                                        "error_message": "not the coordinator"},
                        kafka_bytes[("tdu-resp", 0)])


def test_versions_are_kafka_4_4s():
    assert [(SCHEMAS[k].min_version, SCHEMAS[k].max_version) for k in (88, 89, 93)] == [(0, 1), (0, 1), (0, 0)]
