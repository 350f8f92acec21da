"""DescribeQuorum, UpdateFeatures, ListConfigResources and DescribeTopicPartitions (Kafka's message specs).

What a one-node cluster is asked about itself: its metadata quorum, its finalized feature
levels, the config resources it keeps, and its topics' partitions page by page.
"""
from pylog.core.protocol.facts import Acl, Facts
from pylog.core.protocol.schema import Api, Field as F
from pylog.core.protocol.types import Array, BOOL, INT8, INT16, INT32, INT64, STRING, Struct, UINT16, UUID

_NULL = dict(nullable="0+", default=None)

_REPLICA_STATE = [
    F("replica_id", INT32),
    F("replica_directory_id", UUID, "2+"),
    F("log_end_offset", INT64),
    F("last_fetch_timestamp", INT64, "1+", default=-1),
    F("last_caught_up_timestamp", INT64, "1+", default=-1),
]

DESCRIBE_QUORUM = Api(55, "DescribeQuorum", "0-2", "0+",
    request=[
        F("topics", [
            F("topic_name", STRING),
            F("partitions", [F("partition_index", INT32)]),
        ]),
    ],
    response=[
        F("error_code", INT16),
        F("error_message", STRING, "2+", nullable="2+", default=None),
        F("topics", [
            F("topic_name", STRING),
            F("partitions", [
                F("partition_index", INT32),
                F("error_code", INT16),
                F("error_message", STRING, "2+", nullable="2+", default=None),
                F("leader_id", INT32),
                F("leader_epoch", INT32),
                F("high_watermark", INT64),
                F("current_voters", _REPLICA_STATE),
                F("observers", _REPLICA_STATE),
            ]),
        ]),
        F("nodes", [
            F("node_id", INT32),
            F("listeners", [
                F("name", STRING),
                F("host", STRING),
                F("port", UINT16),
            ]),
        ], "2+"),
    ],
)

UPDATE_FEATURES = Api(57, "UpdateFeatures", "0-2", "0+",
    request=[
        F("timeout_ms", INT32, default=60000),
        F("feature_updates", [
            F("feature", STRING),
            F("max_version_level", INT16),
            F("allow_downgrade", BOOL, "0", default=False),
            F("upgrade_type", INT8, "1+", default=1),
        ]),
        F("validate_only", BOOL, "1+", default=False),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, **_NULL),
        F("results", [
            F("feature", STRING),
            F("error_code", INT16),
            F("error_message", STRING, **_NULL),
        ], "0-1", default=[]),
    ],
)

LIST_CONFIG_RESOURCES = Api(74, "ListConfigResources", "0-1", "0+",
    request=[F("resource_types", Array(INT8), "1+", default=[])],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("config_resources", [
            F("resource_name", STRING),
            F("resource_type", INT8, "1+", default=16),
        ]),
    ],
)

_CURSOR = [F("topic_name", STRING), F("partition_index", INT32)]

DESCRIBE_TOPIC_PARTITIONS = Api(75, "DescribeTopicPartitions", "0", "0+",
    request=[
        F("topics", [F("name", STRING)]),
        F("response_partition_limit", INT32, default=2000),
        F("cursor", Struct(*_CURSOR), **_NULL),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("topics", [
            F("error_code", INT16),
            F("name", STRING, **_NULL),
            F("topic_id", UUID),
            F("is_internal", BOOL, default=False),
            F("partitions", [
                F("error_code", INT16),
                F("partition_index", INT32),
                F("leader_id", INT32),
                F("leader_epoch", INT32, default=-1),
                F("replica_nodes", Array(INT32)),
                F("isr_nodes", Array(INT32)),
                F("eligible_leader_replicas", Array(INT32), **_NULL),
                F("last_known_elr", Array(INT32), **_NULL),
                F("offline_replicas", Array(INT32)),
            ]),
            F("topic_authorized_operations", INT32, default=-2147483648),
        ]),
        F("next_cursor", Struct(*_CURSOR), **_NULL),
    ],
)

# ---- request facts (facts.py): the ACL each needs
DESCRIBE_QUORUM.facts = Facts(acl=Acl("DESCRIBE", "CLUSTER"))
UPDATE_FEATURES.facts = Facts(acl=Acl("ALTER", "CLUSTER"))
LIST_CONFIG_RESOURCES.facts = Facts(acl=Acl("DESCRIBE_CONFIGS", "CLUSTER"))

APIS = [DESCRIBE_QUORUM, UPDATE_FEATURES, LIST_CONFIG_RESOURCES, DESCRIBE_TOPIC_PARTITIONS]
