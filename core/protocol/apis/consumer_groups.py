"""KIP-848 consumer-group APIs: ConsumerGroupHeartbeat and ConsumerGroupDescribe.

Versions as Apache Kafka 4.3 serves them: Heartbeat v1 adds SubscribedTopicRegex
and has the member generate its own member id (KIP-1082); Describe v1 adds the
member type (KIP-1099).
"""
from pylog.core.protocol.facts import Facts
from pylog.core.protocol.schema import Api, Field as F
from pylog.core.protocol.types import Array, BOOL, INT8, INT16, INT32, STRING, UUID, Struct

CONSUMER_GROUP_HEARTBEAT = Api(68, "ConsumerGroupHeartbeat", "0-1", "0+",
    request=[
        F("group_id", STRING),
        F("member_id", STRING),
        # 0 joins, -1 leaves, -2 leaves a static member that will come back
        F("member_epoch", INT32),
        F("instance_id", STRING, nullable="0+", default=None),
        F("rack_id", STRING, nullable="0+", default=None),
        F("rebalance_timeout_ms", INT32, default=-1),
        # The nullable fields below mean "unchanged since the last heartbeat" when null.
        F("subscribed_topic_names", Array(STRING), nullable="0+", default=None),
        F("subscribed_topic_regex", STRING, "1+", nullable="1+", default=None),
        F("server_assignor", STRING, nullable="0+", default=None),
        F("topic_partitions", [
            F("topic_id", UUID),
            F("partitions", Array(INT32)),
        ], nullable="0+", default=None),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("error_message", STRING, nullable="0+", default=None),
        F("member_id", STRING, nullable="0+", default=None),
        F("member_epoch", INT32),
        F("heartbeat_interval_ms", INT32),
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

CONSUMER_GROUP_DESCRIBE = Api(69, "ConsumerGroupDescribe", "0-1", "0+",
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
                F("instance_id", STRING, nullable="0+", default=None),
                F("rack_id", STRING, nullable="0+", default=None),
                F("member_epoch", INT32),
                F("client_id", STRING),
                F("client_host", STRING),
                F("subscribed_topic_names", Array(STRING)),
                F("subscribed_topic_regex", STRING, nullable="0+", default=None),
                F("assignment", _DESCRIBED_ASSIGNMENT),
                F("target_assignment", _DESCRIBED_ASSIGNMENT),
                # KIP-1099: 0 classic, 1 consumer; -1 unknown (v0)
                F("member_type", INT8, "1+", default=-1),
            ]),
            F("authorized_operations", INT32, default=-2147483648),
        ]),
    ],
)

APIS = [CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE]


# ---- request facts (facts.py): what the broker reads of these requests besides the values
CONSUMER_GROUP_HEARTBEAT.facts = CONSUMER_GROUP_DESCRIBE.facts = Facts(coordinator=True)
