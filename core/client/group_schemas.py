"""PROVISIONAL wire schemas of the group APIs, until `core/protocol/apis/groups.py` lands.

The protocol codec owns these declarations (its author has them on their list).
Until they exist, `ensure_registered()` adds the group APIs to the codec's
registry, and only those the registry does not already have: as soon as the
real module is there, this one does nothing. Field names are Kafka's, in
snake_case, as the codec contract says; version ranges follow Kafka's message
specs. Delete this file once `core/protocol/apis/groups.py` exists.
"""
from __future__ import annotations

from pylog.core.protocol.schema import Api, Field as F
from pylog.core.protocol.types import BOOL, BYTES, INT8, INT16, INT32, INT64, STRING, Array

_MIN_INT = -(2**31)

FIND_COORDINATOR = Api(10, "FindCoordinator", "0-6", "3+",
    request=[
        F("key", STRING, "0-3"),
        F("key_type", INT8, "1+", default=0),
        F("coordinator_keys", Array(STRING), "4+"),
    ],
    response=[
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16, "0-3"),
        F("error_message", STRING, "1-3", nullable="1-3", default=None),
        F("node_id", INT32, "0-3"),
        F("host", STRING, "0-3"),
        F("port", INT32, "0-3"),
        F("coordinators", [
            F("key", STRING),
            F("node_id", INT32),
            F("host", STRING),
            F("port", INT32),
            F("error_code", INT16),
            F("error_message", STRING, nullable="0+", default=None),
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
            F("group_instance_id", STRING, nullable="0+", default=None),
            F("reason", STRING, "5+", nullable="5+", default=None),
        ], "3+"),
    ],
    response=[
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16),
        F("members", [
            F("member_id", STRING),
            F("group_instance_id", STRING, nullable="0+", default=None),
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

DESCRIBE_GROUPS = Api(15, "DescribeGroups", "0-5", "5+",
    request=[
        F("groups", Array(STRING)),
        F("include_authorized_operations", BOOL, "3+", default=False),
    ],
    response=[
        F("throttle_time_ms", INT32, "1+"),
        F("groups", [
            F("error_code", INT16),
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
            F("authorized_operations", INT32, "3+", default=_MIN_INT),
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

OFFSET_COMMIT = Api(8, "OffsetCommit", "2-9", "8+",
    request=[
        F("group_id", STRING),
        F("generation_id_or_member_epoch", INT32, "1+", default=-1),
        F("member_id", STRING, "1+"),
        F("group_instance_id", STRING, "7+", nullable="7+", default=None),
        F("retention_time_ms", INT64, "2-4", default=-1),
        F("topics", [
            F("name", STRING),
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
            F("name", STRING),
            F("partitions", [
                F("partition_index", INT32),
                F("error_code", INT16),
            ]),
        ]),
    ],
)

_FETCH_PARTITIONS = [
    F("partition_index", INT32),
    F("committed_offset", INT64),
    F("committed_leader_epoch", INT32, "5+", default=-1),
    F("metadata", STRING, nullable="0+"),
    F("error_code", INT16),
]

OFFSET_FETCH = Api(9, "OffsetFetch", "1-9", "6+",
    request=[
        F("group_id", STRING, "0-7"),
        F("topics", [
            F("name", STRING),
            F("partition_indexes", Array(INT32)),
        ], "0-7", nullable="2-7"),
        F("groups", [
            F("group_id", STRING),
            F("member_id", STRING, "9+", nullable="9+", default=None),
            F("member_epoch", INT32, "9+", default=-1),
            F("topics", [
                F("name", STRING),
                F("partition_indexes", Array(INT32)),
            ], nullable="8+"),
        ], "8+"),
        F("require_stable", BOOL, "7+", default=False),
    ],
    response=[
        F("throttle_time_ms", INT32, "3+"),
        F("topics", [
            F("name", STRING),
            F("partitions", _FETCH_PARTITIONS),
        ], "0-7"),
        F("error_code", INT16, "2-7"),
        F("groups", [
            F("group_id", STRING),
            F("topics", [
                F("name", STRING),
                F("partitions", _FETCH_PARTITIONS),
            ]),
            F("error_code", INT16),
        ], "8+"),
    ],
)

DELETE_GROUPS = Api(42, "DeleteGroups", "0-2", "2+",
    request=[F("groups_names", Array(STRING))],
    response=[
        F("throttle_time_ms", INT32),
        F("results", [
            F("group_id", STRING),
            F("error_code", INT16),
        ]),
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

APIS = [FIND_COORDINATOR, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, DESCRIBE_GROUPS, LIST_GROUPS,
        OFFSET_COMMIT, OFFSET_FETCH, DELETE_GROUPS, OFFSET_DELETE]


def ensure_registered() -> list[str]:
    """Add the group APIs the codec does not know yet; returns the names added."""
    from pylog.core.protocol import apis as registry

    added = []
    for api in APIS:
        if api.key not in registry.SCHEMAS:
            registry.SCHEMAS[api.key] = api
            registry.API_KEYS[api.name] = api.key
            registry.API_NAMES[api.key] = api.name
            added.append(api.name)
    return added


ensure_registered()
