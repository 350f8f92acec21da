"""Consumer-group APIs: coordinator lookup, membership, offsets, admin."""
from pylog.core.protocol.facts import Acl, Facts, Partitions
from pylog.core.protocol.schema import Api, Field as F
from pylog.core.protocol.types import Array, BOOL, BYTES, INT8, INT16, INT32, INT64, STRING, UUID, ZERO_UUID

FIND_COORDINATOR = Api(10, "FindCoordinator", "0-6", "3+",
    request=[
        F("key", STRING, "0-3"),
        F("key_type", INT8, "1+", default=0),  # 0 group, 1 transaction, 2 share
        F("coordinator_keys", Array(STRING), "4+"),
    ],
    response=[
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16, "0-3"),
        F("error_message", STRING, "1-3", nullable="1-3"),
        F("node_id", INT32, "0-3"),
        F("host", STRING, "0-3"),
        F("port", INT32, "0-3"),
        F("coordinators", [
            F("key", STRING),
            F("node_id", INT32),
            F("host", STRING),
            F("port", INT32),
            F("error_code", INT16),
            F("error_message", STRING, nullable="4+"),
        ], "4+"),
    ],
)

JOIN_GROUP = Api(11, "JoinGroup", "0-9", "6+",
    request=[
        F("group_id", STRING),
        F("session_timeout_ms", INT32),
        F("rebalance_timeout_ms", INT32, "1+", default=-1),
        F("member_id", STRING),
        F("group_instance_id", STRING, "5+", nullable="5+", default=None),
        F("protocol_type", STRING),
        F("protocols", [
            F("name", STRING),
            F("metadata", BYTES),
        ]),
        F("reason", STRING, "8+", nullable="8+", default=None),
    ],
    response=[
        F("throttle_time_ms", INT32, "2+"),
        F("error_code", INT16),
        F("generation_id", INT32, default=-1),
        F("protocol_type", STRING, "7+", nullable="7+", default=None),
        F("protocol_name", STRING, nullable="7+"),
        F("leader", STRING),
        F("skip_assignment", BOOL, "9+", default=False),
        F("member_id", STRING),
        F("members", [
            F("member_id", STRING),
            F("group_instance_id", STRING, "5+", nullable="5+", default=None),
            F("metadata", BYTES),
        ]),
    ],
)

HEARTBEAT = Api(12, "Heartbeat", "0-4", "4+",
    request=[
        F("group_id", STRING),
        F("generation_id", INT32),
        F("member_id", STRING),
        F("group_instance_id", STRING, "3+", nullable="3+", default=None),
    ],
    response=[
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16),
    ],
)

LEAVE_GROUP = Api(13, "LeaveGroup", "0-5", "4+",
    request=[
        F("group_id", STRING),
        F("member_id", STRING, "0-2"),
        F("members", [
            F("member_id", STRING),
            F("group_instance_id", STRING, nullable="3+", default=None),
            F("reason", STRING, "5+", nullable="5+", default=None),
        ], "3+"),
    ],
    response=[
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16),
        F("members", [
            F("member_id", STRING),
            F("group_instance_id", STRING, nullable="3+"),
            F("error_code", INT16),
        ], "3+"),
    ],
)

SYNC_GROUP = Api(14, "SyncGroup", "0-5", "4+",
    request=[
        F("group_id", STRING),
        F("generation_id", INT32),
        F("member_id", STRING),
        F("group_instance_id", STRING, "3+", nullable="3+", default=None),
        F("protocol_type", STRING, "5+", nullable="5+", default=None),
        F("protocol_name", STRING, "5+", nullable="5+", default=None),
        F("assignments", [
            F("member_id", STRING),
            F("assignment", BYTES),
        ]),
    ],
    response=[
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16),
        F("protocol_type", STRING, "5+", nullable="5+", default=None),
        F("protocol_name", STRING, "5+", nullable="5+", default=None),
        F("assignment", BYTES),
    ],
)

DESCRIBE_GROUPS = Api(15, "DescribeGroups", "0-6", "5+",
    request=[
        F("groups", Array(STRING)),
        F("include_authorized_operations", BOOL, "3+"),
    ],
    response=[
        F("throttle_time_ms", INT32, "1+"),
        F("groups", [
            F("error_code", INT16),
            F("error_message", STRING, "6+", nullable="6+", default=None),
            F("group_id", STRING),
            F("group_state", STRING),
            F("protocol_type", STRING),
            F("protocol_data", STRING),
            F("members", [
                F("member_id", STRING),
                F("group_instance_id", STRING, "4+", nullable="4+", default=None),
                F("client_id", STRING),
                F("client_host", STRING),
                F("member_metadata", BYTES),
                F("member_assignment", BYTES),
            ]),
            F("authorized_operations", INT32, "3+", default=-2147483648),
        ]),
    ],
)

LIST_GROUPS = Api(16, "ListGroups", "0-5", "3+",
    request=[
        F("states_filter", Array(STRING), "4+"),
        F("types_filter", Array(STRING), "5+"),
    ],
    response=[
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16),
        F("groups", [
            F("group_id", STRING),
            F("protocol_type", STRING),
            F("group_state", STRING, "4+"),
            F("group_type", STRING, "5+"),
        ]),
    ],
)

DELETE_GROUPS = Api(42, "DeleteGroups", "0-3", "2+",
    request=[F("groups_names", Array(STRING))],
    response=[
        F("throttle_time_ms", INT32),
        F("results", [
            F("group_id", STRING),
            F("error_code", INT16),
            F("error_message", STRING, "3+", nullable="3+", default=None),
        ]),
    ],
)

OFFSET_COMMIT = Api(8, "OffsetCommit", "2-10", "8+",
    request=[
        F("group_id", STRING),
        F("generation_id_or_member_epoch", INT32, "1+", default=-1),
        F("member_id", STRING, "1+"),
        F("group_instance_id", STRING, "7+", nullable="7+", default=None),
        F("retention_time_ms", INT64, "2-4", default=-1),
        F("topics", [
            F("name", STRING, "0-9", default=""),
            F("topic_id", UUID, "10+", default=ZERO_UUID),
            F("partitions", [
                F("partition_index", INT32),
                F("committed_offset", INT64),
                F("committed_leader_epoch", INT32, "6+", default=-1),
                F("commit_timestamp", INT64, "1", default=-1),
                F("committed_metadata", STRING, nullable="0+"),
            ]),
        ]),
    ],
    response=[
        F("throttle_time_ms", INT32, "3+"),
        F("topics", [
            F("name", STRING, "0-9", default=""),
            F("topic_id", UUID, "10+", default=ZERO_UUID),
            F("partitions", [
                F("partition_index", INT32),
                F("error_code", INT16),
            ]),
        ]),
    ],
)

OFFSET_FETCH = Api(9, "OffsetFetch", "1-10", "6+",
    request=[
        F("group_id", STRING, "0-7"),
        # v2-7: null means every partition the group committed
        F("topics", [
            F("name", STRING),
            F("partition_indexes", Array(INT32)),
        ], "0-7", nullable="2-7"),
        F("groups", [
            F("group_id", STRING),
            F("member_id", STRING, "9+", nullable="9+", default=None),
            F("member_epoch", INT32, "9+", default=-1),
            F("topics", [
                F("name", STRING, "8-9", default=""),
                F("topic_id", UUID, "10+", default=ZERO_UUID),
                F("partition_indexes", Array(INT32)),
            ], nullable="8+"),
        ], "8+"),
        F("require_stable", BOOL, "7+", default=False),
    ],
    response=[
        F("throttle_time_ms", INT32, "3+"),
        F("topics", [
            F("name", STRING),
            F("partitions", [
                F("partition_index", INT32),
                F("committed_offset", INT64),
                F("committed_leader_epoch", INT32, "5-7", default=-1),
                F("metadata", STRING, nullable="0-7"),
                F("error_code", INT16),
            ]),
        ], "0-7"),
        F("error_code", INT16, "2-7", default=0),
        F("groups", [
            F("group_id", STRING),
            F("topics", [
                F("name", STRING, "8-9", default=""),
                F("topic_id", UUID, "10+", default=ZERO_UUID),
                F("partitions", [
                    F("partition_index", INT32),
                    F("committed_offset", INT64),
                    F("committed_leader_epoch", INT32, default=-1),
                    F("metadata", STRING, nullable="8+"),
                    F("error_code", INT16),
                ]),
            ]),
            F("error_code", INT16, default=0),
        ], "8+"),
    ],
)

OFFSET_DELETE = Api(47, "OffsetDelete", "0", "none",
    request=[
        F("group_id", STRING),
        F("topics", [
            F("name", STRING),
            F("partitions", [F("partition_index", INT32)]),
        ]),
    ],
    response=[
        F("error_code", INT16),
        F("throttle_time_ms", INT32),
        F("topics", [
            F("name", STRING),
            F("partitions", [
                F("partition_index", INT32),
                F("error_code", INT16),
            ]),
        ]),
    ],
)

APIS = [FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, DESCRIBE_GROUPS,
        LIST_GROUPS, DELETE_GROUPS, OFFSET_COMMIT, OFFSET_FETCH, OFFSET_DELETE]


# ---- request facts (facts.py): what the broker reads of these requests besides the values
FIND_COORDINATOR.facts = Facts(group_fields=("key", "coordinator_keys"), transactional_fields=("key", "coordinator_keys"),
                               coordinator=True)
JOIN_GROUP.facts = HEARTBEAT.facts = LEAVE_GROUP.facts = SYNC_GROUP.facts = Facts(
    acl=Acl("READ", "GROUP", name_field="group_id"), group_fields=("group_id",), coordinator=True)
DESCRIBE_GROUPS.facts = Facts(group_fields=("groups",), coordinator=True)
DELETE_GROUPS.facts = Facts(group_fields=("groups_names",), coordinator=True)
OFFSET_DELETE.facts = Facts(group_fields=("group_id",), coordinator=True)
OFFSET_COMMIT.facts = Facts(partitions=Partitions(
    "topics", "name", "partitions", "partition_index", "topics", "name", "partitions", "partition_index",
    lambda i, c: {"partition_index": i, "error_code": c},
    lambda: {"throttle_time_ms": 0, "topics": []}, ids_from=10), group_fields=("group_id",), coordinator=True)
OFFSET_FETCH.facts = Facts(partitions=Partitions(
    "topics", "name", "partition_indexes", "partition_index", "topics", "name", "partitions", "partition_index",
    lambda i, c: {"partition_index": i, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
                  "error_code": c},
    lambda: {"throttle_time_ms": 0, "groups": []}, ids_from=10, within="groups"),
    group_fields=("group_id", "groups"), coordinator=True)
