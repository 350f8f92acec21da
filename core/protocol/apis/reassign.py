"""ElectLeaders, AlterPartitionReassignments, ListPartitionReassignments: the partition
placement APIs (kafka-leader-election.sh, kafka-reassign-partitions.sh)."""
from pylog.core.protocol.facts import Acl, Facts
from pylog.core.protocol.schema import Api, Field as F
from pylog.core.protocol.types import Array, BOOL, INT8, INT16, INT32, STRING

ELECT_LEADERS = Api(43, "ElectLeaders", "0-2", "2+",
    request=[
        F("election_type", INT8, "1+", default=0),
        F("topic_partitions", [
            F("topic", STRING),
            F("partitions", Array(INT32)),
        ], nullable="0+"),
        F("timeout_ms", INT32, default=60000),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16, "1+", default=0),
        F("replica_election_results", [
            F("topic", STRING),
            F("partition_result", [
                F("partition_id", INT32),
                F("error_code", INT16),
                F("error_message", STRING, nullable="0+"),
            ]),
        ]),
    ],
)

ALTER_PARTITION_REASSIGNMENTS = Api(45, "AlterPartitionReassignments", "0-1", "0+",
    request=[
        F("timeout_ms", INT32, default=60000),
        F("allow_replication_factor_change", BOOL, "1+", default=True),
        F("topics", [
            F("name", STRING),
            F("partitions", [
                F("partition_index", INT32),
                F("replicas", Array(INT32), nullable="0+", default=None),
            ]),
        ]),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("allow_replication_factor_change", BOOL, "1+", default=True),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+"),
        F("responses", [
            F("name", STRING),
            F("partitions", [
                F("partition_index", INT32),
                F("error_code", INT16),
                F("error_message", STRING, nullable="0+"),
            ]),
        ]),
    ],
)

LIST_PARTITION_REASSIGNMENTS = Api(46, "ListPartitionReassignments", "0", "0+",
    request=[
        F("timeout_ms", INT32, default=60000),
        F("topics", [
            F("name", STRING),
            F("partition_indexes", Array(INT32)),
        ], nullable="0+", default=None),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+"),
        F("topics", [
            F("name", STRING),
            F("partitions", [
                F("partition_index", INT32),
                F("replicas", Array(INT32)),
                F("adding_replicas", Array(INT32)),
                F("removing_replicas", Array(INT32)),
            ]),
        ]),
    ],
)

APIS = [ELECT_LEADERS, ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS]


# ---- request facts (facts.py): what the broker reads of these requests besides the values
ELECT_LEADERS.facts = ALTER_PARTITION_REASSIGNMENTS.facts = Facts(acl=Acl("ALTER", "CLUSTER"))
LIST_PARTITION_REASSIGNMENTS.facts = Facts(acl=Acl("DESCRIBE", "CLUSTER"))
