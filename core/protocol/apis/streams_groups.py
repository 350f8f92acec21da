"""Streams-group APIs (KIP-1071): StreamsGroupHeartbeat, StreamsGroupDescribe and
StreamsGroupTopologyDescriptionUpdate, at Kafka 4.4's versions.

Heartbeat v1 and Describe v1 come with KIP-1331 (the topology description a member
uploads with TopologyDescriptionUpdate, asked for by TopologyDescriptionRequired); the
heartbeat's acceptable recovery lag is an int32 at v0 and an int64 from v1.
"""
from pylog.core.protocol.facts import Facts
from pylog.core.protocol.schema import Api, Field as F
from pylog.core.protocol.types import Array, BOOL, INT8, INT16, INT32, INT64, STRING, UINT16, Struct


def _kv():
    return [F("key", STRING), F("value", STRING)]


def _topic_info():
    # an internal topic: partitions 0 = derived by the broker, replication 0 = the broker's default
    return [F("name", STRING), F("partitions", INT32), F("replication_factor", INT16), F("topic_configs", _kv())]


def _endpoint():
    return Struct(F("host", STRING), F("port", UINT16))


def _task_ids():
    return [F("subtopology_id", STRING), F("partitions", Array(INT32))]


def _task_offsets():
    return [F("subtopology_id", STRING), F("partition", INT32), F("offset", INT64)]


def _description(v):
    """KIP-1331's topology description (nodes by name, global stores)."""
    node = [F("name", STRING, v), F("node_type", INT8, v), F("source_topics", Array(STRING), v),
            F("sink_topic", STRING, v, nullable=v, default=None), F("stores", Array(STRING), v),
            F("successors", Array(STRING), v)]
    return Struct(
        F("subtopologies", [F("subtopology_id", STRING, v), F("nodes", node, v)], v),
        F("global_stores", [F("source", Struct(*node), v), F("processor", Struct(*node), v)], v),
    )


STREAMS_GROUP_HEARTBEAT = Api(88, "StreamsGroupHeartbeat", "0-1", "0+",
    request=[
        F("group_id", STRING),
        F("member_id", STRING),
        # 0 joins, -1 leaves, -2 leaves a static member that will come back
        F("member_epoch", INT32),
        F("endpoint_information_epoch", INT32),
        F("instance_id", STRING, nullable="0+", default=None),
        F("rack_id", STRING, nullable="0+", default=None),
        F("rebalance_timeout_ms", INT32, default=-1),
        # sent with member epoch 0 only
        F("topology", Struct(
            F("epoch", INT32),
            F("subtopologies", [
                F("subtopology_id", STRING),
                F("source_topics", Array(STRING)),
                F("source_topic_regex", Array(STRING)),
                F("state_changelog_topics", _topic_info()),
                F("repartition_sink_topics", Array(STRING)),
                F("repartition_source_topics", _topic_info()),
                F("copartition_groups", [
                    F("source_topics", Array(INT16)),
                    F("source_topic_regex", Array(INT16)),
                    F("repartition_source_topics", Array(INT16)),
                ]),
            ]),
        ), nullable="0+", default=None),
        # the nullable fields below mean "unchanged since the last heartbeat" when null
        F("active_tasks", _task_ids(), nullable="0+", default=None),
        F("standby_tasks", _task_ids(), nullable="0+", default=None),
        F("warmup_tasks", _task_ids(), nullable="0+", default=None),
        F("process_id", STRING, nullable="0+", default=None),
        F("user_endpoint", _endpoint(), nullable="0+", default=None),
        F("client_tags", _kv(), nullable="0+", default=None),
        F("task_offsets", _task_offsets(), nullable="0+", default=None),
        F("task_end_offsets", _task_offsets(), nullable="0+", default=None),
        F("shutdown_application", BOOL, default=False),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+", default=None),
        F("member_id", STRING),
        F("member_epoch", INT32),
        F("heartbeat_interval_ms", INT32),
        F("acceptable_recovery_lag_legacy", INT32, "0", default=0),
        F("task_offset_interval_ms", INT32),
        F("acceptable_recovery_lag", INT64, "1+", default=-1),
        # 0 STALE_TOPOLOGY, 1 MISSING_SOURCE_TOPICS, 2 INCORRECTLY_PARTITIONED_TOPICS,
        # 3 MISSING_INTERNAL_TOPICS, 4 SHUTDOWN_APPLICATION, 5 ASSIGNMENT_DELAYED, 6 MISSING_CLIENT_TAGS (v1+)
        F("status", [F("status_code", INT8), F("status_detail", STRING)], nullable="0+", default=None),
        F("active_tasks", _task_ids(), nullable="0+", default=None),
        F("standby_tasks", _task_ids(), nullable="0+", default=None),
        F("warmup_tasks", _task_ids(), nullable="0+", default=None),
        F("topology_description_required", BOOL, "1+", default=False),
        F("endpoint_information_epoch", INT32),
        F("partitions_by_user_endpoint", [
            F("user_endpoint", _endpoint()),
            F("active_partitions", [F("topic", STRING), F("partitions", Array(INT32))]),
            F("standby_partitions", [F("topic", STRING), F("partitions", Array(INT32))]),
        ], nullable="0+", default=None),
    ],
)

_ASSIGNMENT = Struct(
    F("active_tasks", _task_ids()),
    F("standby_tasks", _task_ids()),
    F("warmup_tasks", _task_ids()),
)

STREAMS_GROUP_DESCRIBE = Api(89, "StreamsGroupDescribe", "0-1", "0+",
    request=[
        F("group_ids", Array(STRING)),
        F("include_authorized_operations", BOOL),
        F("include_topology_description", BOOL, "1+", default=False),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("groups", [
            F("error_code", INT16),
            F("error_message", STRING, nullable="0+", default=None),
            F("group_id", STRING),
            F("group_state", STRING),
            F("group_epoch", INT32),
            F("assignment_epoch", INT32),
            F("topology", Struct(
                F("epoch", INT32),
                F("subtopologies", [
                    F("subtopology_id", STRING),
                    F("source_topics", Array(STRING)),
                    F("repartition_sink_topics", Array(STRING)),
                    F("state_changelog_topics", _topic_info()),
                    F("repartition_source_topics", _topic_info()),
                ], nullable="0+", default=None),
            ), nullable="0+", default=None),
            F("members", [
                F("member_id", STRING),
                F("member_epoch", INT32),
                F("instance_id", STRING, nullable="0+", default=None),
                F("rack_id", STRING, nullable="0+", default=None),
                F("client_id", STRING),
                F("client_host", STRING),
                F("topology_epoch", INT32),
                F("process_id", STRING),
                F("user_endpoint", _endpoint(), nullable="0+", default=None),
                F("client_tags", _kv()),
                F("task_offsets", _task_offsets()),
                F("task_end_offsets", _task_offsets()),
                F("assignment", _ASSIGNMENT),
                F("target_assignment", _ASSIGNMENT),
                F("is_classic", BOOL),
            ]),
            F("authorized_operations", INT32, default=-2147483648),
            F("topology_description", _description("1+"), "1+", nullable="1+", default=None),
            # 0 none stored, 1 stored, 2 the upload failed (KIP-1331)
            F("topology_description_status", INT8, "1+", default=0),
            F("assignor_name", STRING, "1+", nullable="1+", default=None),
        ]),
    ],
)

STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE = Api(93, "StreamsGroupTopologyDescriptionUpdate", "0", "0+",
    request=[
        F("group_id", STRING),
        F("member_id", STRING),
        F("topology_epoch", INT32),
        F("topology_description", _description("0+")),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+", default=None),
    ],
)

# ---- request facts (facts.py): what the broker reads of these requests besides the values
STREAMS_GROUP_HEARTBEAT.facts = STREAMS_GROUP_DESCRIBE.facts = STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE.facts = \
    Facts(coordinator=True)

APIS = [STREAMS_GROUP_HEARTBEAT, STREAMS_GROUP_DESCRIBE, STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE]
__all__ = ["APIS", "STREAMS_GROUP_HEARTBEAT", "STREAMS_GROUP_DESCRIBE", "STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE"]
