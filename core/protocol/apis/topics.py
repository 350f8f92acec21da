"""CreateTopics, DeleteTopics, CreatePartitions, DeleteRecords."""
from pylog.core.protocol.facts import Acl, Facts, TopicIds
from pylog.core.protocol.schema import Api, Field as F
from pylog.core.protocol.types import Array, BOOL, INT8, INT16, INT32, INT64, STRING, UUID

CREATE_TOPICS = Api(19, "CreateTopics", "2-7", "5+",
    request=[
        F("topics", [
            F("name", STRING),
            F("num_partitions", INT32),
            F("replication_factor", INT16),
            F("assignments", [
                F("partition_index", INT32),
                F("broker_ids", Array(INT32)),
            ]),
            F("configs", [
                F("name", STRING),
                F("value", STRING, nullable="0+"),
            ]),
        ]),
        F("timeout_ms", INT32, default=60000),
        F("validate_only", BOOL, "1+", default=False),
    ],
    response=[
        F("throttle_time_ms", INT32, "2+"),
        F("topics", [
            F("name", STRING),
            F("topic_id", UUID, "7+"),
            F("error_code", INT16),
            F("error_message", STRING, "1+", nullable="0+"),
            F("topic_config_error_code", INT16, "5+", tag=0),
            F("num_partitions", INT32, "5+", default=-1),
            F("replication_factor", INT16, "5+", default=-1),
            F("configs", [
                F("name", STRING),
                F("value", STRING, nullable="0+"),
                F("read_only", BOOL),
                F("config_source", INT8, default=-1),
                F("is_sensitive", BOOL),
            ], "5+", nullable="5+"),
        ]),
    ],
)

DELETE_TOPICS = Api(20, "DeleteTopics", "1-6", "4+",
    request=[
        F("topics", [
            F("name", STRING, nullable="6+", default=None),
            F("topic_id", UUID),
        ], "6+"),
        F("topic_names", Array(STRING), "0-5"),
        F("timeout_ms", INT32),
    ],
    response=[
        F("throttle_time_ms", INT32, "1+"),
        F("responses", [
            F("name", STRING, nullable="6+"),
            F("topic_id", UUID, "6+"),
            F("error_code", INT16),
            F("error_message", STRING, "5+", nullable="5+", default=None),
        ]),
    ],
)

CREATE_PARTITIONS = Api(37, "CreatePartitions", "0-3", "2+",
    request=[
        F("topics", [
            F("name", STRING),
            F("count", INT32),
            F("assignments", [
                F("broker_ids", Array(INT32)),
            ], nullable="0+"),
        ]),
        F("timeout_ms", INT32),
        F("validate_only", BOOL),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("results", [
            F("name", STRING),
            F("error_code", INT16),
            F("error_message", STRING, nullable="0+", default=None),
        ]),
    ],
)

DELETE_RECORDS = Api(21, "DeleteRecords", "0-2", "2+",
    request=[
        F("topics", [
            F("name", STRING),
            F("partitions", [
                F("partition_index", INT32),
                F("offset", INT64),
            ]),
        ]),
        F("timeout_ms", INT32),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("topics", [
            F("name", STRING),
            F("partitions", [
                F("partition_index", INT32),
                F("low_watermark", INT64),
                F("error_code", INT16),
            ]),
        ]),
    ],
)

APIS = [CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS, DELETE_RECORDS]


# ---- request facts (facts.py): what the broker reads of these requests besides the values
DELETE_TOPICS.facts = Facts(topic_ids=TopicIds("topics", "name", 6))
DELETE_RECORDS.facts = Facts(acl=Acl("DELETE", "TOPIC", topics_field="topics", name_field="name"))
CREATE_PARTITIONS.facts = Facts(acl=Acl("ALTER", "TOPIC", topics_field="topics", name_field="name"))
