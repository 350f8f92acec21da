"""ApiVersions, Metadata, DescribeCluster, SaslHandshake."""
from pylog.core.protocol.facts import Facts, TopicIds
from pylog.core.protocol.schema import API_VERSIONS_KEY, Api, Field as F
from pylog.core.protocol.types import Array, BOOL, INT8, INT16, INT32, INT64, STRING, UUID

API_VERSIONS = Api(API_VERSIONS_KEY, "ApiVersions", "0-5", "3+",
    request=[
        F("client_software_name", STRING, "3+"),
        F("client_software_version", STRING, "3+"),
        # v5 (KIP-1242): the cluster and node the client means to reach, checked by the broker
        F("cluster_id", STRING, "5+", nullable="5+", default=None),
        F("node_id", INT32, "5+", default=-1),
    ],
    response=[
        F("error_code", INT16),
        F("api_keys", [
            F("api_key", INT16),
            F("min_version", INT16),
            F("max_version", INT16),
        ]),
        F("throttle_time_ms", INT32, "1+"),
        F("supported_features", [
            F("name", STRING),
            F("min_version", INT16),
            F("max_version", INT16),
        ], "3+", tag=0),
        F("finalized_features_epoch", INT64, "3+", tag=1, default=-1),
        F("finalized_features", [
            F("name", STRING),
            F("max_version_level", INT16),
            F("min_version_level", INT16),
        ], "3+", tag=2),
        F("zk_migration_ready", BOOL, "3+", tag=3, default=False),
    ],
)

METADATA = Api(3, "Metadata", "0-13", "9+",
    request=[
        # v0: an empty array means "all topics"; v1+: null means all, [] none.
        F("topics", [
            F("topic_id", UUID, "10+"),
            F("name", STRING, nullable="10+"),
        ], nullable="1+"),
        F("allow_auto_topic_creation", BOOL, "4+", default=True),
        F("include_cluster_authorized_operations", BOOL, "8-10"),
        F("include_topic_authorized_operations", BOOL, "8+"),
    ],
    response=[
        F("throttle_time_ms", INT32, "3+"),
        F("brokers", [
            F("node_id", INT32),
            F("host", STRING),
            F("port", INT32),
            F("rack", STRING, "1+", nullable="1+", default=None),
        ]),
        F("cluster_id", STRING, "2+", nullable="2+", default=None),
        F("controller_id", INT32, "1+", default=-1),
        F("topics", [
            F("error_code", INT16),
            F("name", STRING, nullable="12+"),
            F("topic_id", UUID, "10+"),
            F("is_internal", BOOL, "1+", default=False),
            F("partitions", [
                F("error_code", INT16),
                F("partition_index", INT32),
                F("leader_id", INT32),
                F("leader_epoch", INT32, "7+", default=-1),
                F("replica_nodes", Array(INT32)),
                F("isr_nodes", Array(INT32)),
                F("offline_replicas", Array(INT32), "5+"),
            ]),
            F("topic_authorized_operations", INT32, "8+", default=-2147483648),
        ]),
        F("cluster_authorized_operations", INT32, "8-10", default=-2147483648),
        F("error_code", INT16, "13+", default=0),
    ],
)

DESCRIBE_CLUSTER = Api(60, "DescribeCluster", "0-2", "0+",
    request=[
        F("include_cluster_authorized_operations", BOOL),
        F("endpoint_type", INT8, "1+", default=1),
        F("include_fenced_brokers", BOOL, "2+", default=False),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+", default=None),
        F("endpoint_type", INT8, "1+", default=1),
        F("cluster_id", STRING),
        F("controller_id", INT32, default=-1),
        F("brokers", [
            F("broker_id", INT32),
            F("host", STRING),
            F("port", INT32),
            F("rack", STRING, nullable="0+", default=None),
            F("is_fenced", BOOL, "2+", default=False),
        ]),
        F("cluster_authorized_operations", INT32, default=-2147483648),
    ],
)

SASL_HANDSHAKE = Api(17, "SaslHandshake", "0-1", "none",
    request=[F("mechanism", STRING)],
    response=[
        F("error_code", INT16),
        F("mechanisms", Array(STRING)),
    ],
)

APIS = [API_VERSIONS, METADATA, DESCRIBE_CLUSTER, SASL_HANDSHAKE]


# ---- request facts (facts.py): what the broker reads of these requests besides the values
API_VERSIONS.facts = SASL_HANDSHAKE.facts = DESCRIBE_CLUSTER.facts = Facts(open=True)
METADATA.facts = Facts(partition_data=True, topic_ids=TopicIds("topics", "name", 10))
