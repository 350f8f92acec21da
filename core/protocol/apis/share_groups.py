"""Share-group APIs (KIP-932, queues for Kafka).

ShareGroupHeartbeat and ShareGroupDescribe (the group coordinator), ShareFetch
and ShareAcknowledge (the partition leader), and the share-group offsets APIs
of the admin client. Versions as Apache Kafka 4.4 serves them: the share APIs
start at v1 there (v0 was the 4.0 early-access form); ShareFetch v2 and
ShareAcknowledge v2 add the acquire mode and RENEW acknowledgements (KIP-1222);
DescribeShareGroupOffsets v1 adds the lag.
"""
from pylog.core.protocol.apis.produce import NODE_ENDPOINT
from pylog.core.protocol.schema import Api, Field as F
from pylog.core.protocol.types import Array, BOOL, INT8, INT16, INT32, INT64, RECORDS, STRING, UUID, Struct

SHARE_GROUP_HEARTBEAT = Api(76, "ShareGroupHeartbeat", "1", "0+",
    request=[
        F("group_id", STRING),
        F("member_id", STRING),
        # 0 joins, -1 leaves
        F("member_epoch", INT32),
        F("rack_id", STRING, nullable="0+", default=None),
        # null: unchanged since the last heartbeat
        F("subscribed_topic_names", Array(STRING), nullable="0+", default=None),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+", default=None),
        F("member_id", STRING, nullable="0+", default=None),
        F("member_epoch", INT32),
        F("heartbeat_interval_ms", INT32),
        # null: unchanged since the last answer
        F("assignment", Struct(
            F("topic_partitions", [
                F("topic_id", UUID),
                F("partitions", Array(INT32)),
            ]),
        ), nullable="0+", default=None),
    ],
)

_DESCRIBED_ASSIGNMENT = Struct(
    F("topic_partitions", [
        F("topic_id", UUID),
        F("topic_name", STRING),
        F("partitions", Array(INT32)),
    ]),
)

SHARE_GROUP_DESCRIBE = Api(77, "ShareGroupDescribe", "1", "0+",
    request=[
        F("group_ids", Array(STRING)),
        F("include_authorized_operations", BOOL),
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
            F("assignor_name", STRING),
            F("members", [
                F("member_id", STRING),
                F("rack_id", STRING, nullable="0+", default=None),
                F("member_epoch", INT32),
                F("client_id", STRING),
                F("client_host", STRING),
                F("subscribed_topic_names", Array(STRING)),
                F("assignment", _DESCRIBED_ASSIGNMENT),
            ]),
            F("authorized_operations", INT32, default=-2147483648),
        ]),
    ],
)

# first offset, last offset and the acknowledge type(s): one type for the whole range, or one per offset
# (0 gap, 1 accept, 2 release, 3 reject, 4 renew)
_ACK_BATCHES = [
    F("first_offset", INT64),
    F("last_offset", INT64),
    F("acknowledge_types", Array(INT8)),
]
_LEADER = Struct(F("leader_id", INT32), F("leader_epoch", INT32))

SHARE_FETCH = Api(78, "ShareFetch", "1-2", "0+",
    request=[
        F("group_id", STRING, nullable="0+", default=None),
        F("member_id", STRING, nullable="0+", default=None),
        # 0 opens a session, -1 closes it, anything else is the next epoch of the session
        F("share_session_epoch", INT32),
        F("max_wait_ms", INT32),
        F("min_bytes", INT32),
        F("max_bytes", INT32, default=0x7FFFFFFF),
        F("max_records", INT32),
        F("batch_size", INT32),
        F("share_acquire_mode", INT8, "2+", default=0),  # 0 batch_optimized, 1 record_limit
        F("is_renew_ack", BOOL, "2+", default=False),
        F("topics", [
            F("topic_id", UUID),
            F("partitions", [
                F("partition_index", INT32),
                F("acknowledgement_batches", _ACK_BATCHES),
            ]),
        ]),
        F("forgotten_topics_data", [
            F("topic_id", UUID),
            F("partitions", Array(INT32)),
        ]),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+", default=None),
        F("acquisition_lock_timeout_ms", INT32, default=0),
        F("responses", [
            F("topic_id", UUID),
            F("partitions", [
                F("partition_index", INT32),
                F("error_code", INT16),
                F("error_message", STRING, nullable="0+", default=None),
                F("acknowledge_error_code", INT16, default=0),
                F("acknowledge_error_message", STRING, nullable="0+", default=None),
                F("current_leader", _LEADER),
                F("records", RECORDS),
                F("acquired_records", [
                    F("first_offset", INT64),
                    F("last_offset", INT64),
                    F("delivery_count", INT16),
                ]),
            ]),
        ]),
        F("node_endpoints", NODE_ENDPOINT),
    ],
)

SHARE_ACKNOWLEDGE = Api(79, "ShareAcknowledge", "1-2", "0+",
    request=[
        F("group_id", STRING, nullable="0+", default=None),
        F("member_id", STRING, nullable="0+", default=None),
        F("share_session_epoch", INT32),
        F("is_renew_ack", BOOL, "2+", default=False),
        F("topics", [
            F("topic_id", UUID),
            F("partitions", [
                F("partition_index", INT32),
                F("acknowledgement_batches", _ACK_BATCHES),
            ]),
        ]),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+", default=None),
        F("acquisition_lock_timeout_ms", INT32, "2+", default=0),
        F("responses", [
            F("topic_id", UUID),
            F("partitions", [
                F("partition_index", INT32),
                F("error_code", INT16),
                F("error_message", STRING, nullable="0+", default=None),
                F("current_leader", _LEADER),
            ]),
        ]),
        F("node_endpoints", NODE_ENDPOINT),
    ],
)

DESCRIBE_SHARE_GROUP_OFFSETS = Api(90, "DescribeShareGroupOffsets", "0-1", "0+",
    request=[
        F("groups", [
            F("group_id", STRING),
            # null: every topic-partition the group has state for
            F("topics", [
                F("topic_name", STRING),
                F("partitions", Array(INT32)),
            ], nullable="0+", default=None),
        ]),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("groups", [
            F("group_id", STRING),
            F("topics", [
                F("topic_name", STRING),
                F("topic_id", UUID),
                F("partitions", [
                    F("partition_index", INT32),
                    F("start_offset", INT64),
                    F("leader_epoch", INT32),
                    F("lag", INT64, "1+", default=-1),
                    F("error_code", INT16),
                    F("error_message", STRING, nullable="0+", default=None),
                ]),
            ]),
            F("error_code", INT16),
            F("error_message", STRING, nullable="0+", default=None),
        ]),
    ],
)

ALTER_SHARE_GROUP_OFFSETS = Api(91, "AlterShareGroupOffsets", "0", "0+",
    request=[
        F("group_id", STRING),
        F("topics", [
            F("topic_name", STRING),
            F("partitions", [
                F("partition_index", INT32),
                F("start_offset", INT64),
            ]),
        ]),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+", default=None),
        F("responses", [
            F("topic_name", STRING),
            F("topic_id", UUID),
            F("partitions", [
                F("partition_index", INT32),
                F("error_code", INT16),
                F("error_message", STRING, nullable="0+", default=None),
            ]),
        ]),
    ],
)

DELETE_SHARE_GROUP_OFFSETS = Api(92, "DeleteShareGroupOffsets", "0", "0+",
    request=[
        F("group_id", STRING),
        F("topics", [F("topic_name", STRING)]),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+", default=None),
        F("responses", [
            F("topic_name", STRING),
            F("topic_id", UUID),
            F("error_code", INT16),
            F("error_message", STRING, nullable="0+", default=None),
        ]),
    ],
)

APIS = [SHARE_GROUP_HEARTBEAT, SHARE_GROUP_DESCRIBE, SHARE_FETCH, SHARE_ACKNOWLEDGE,
        DESCRIBE_SHARE_GROUP_OFFSETS, ALTER_SHARE_GROUP_OFFSETS, DELETE_SHARE_GROUP_OFFSETS]
