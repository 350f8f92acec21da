"""DescribeConfigs, AlterConfigs, IncrementalAlterConfigs, DescribeLogDirs."""
from pylog.core.protocol.facts import Acl, Facts
from pylog.core.protocol.schema import Api, Field as F
from pylog.core.protocol.types import Array, BOOL, INT8, INT16, INT32, INT64, STRING

DESCRIBE_CONFIGS = Api(32, "DescribeConfigs", "1-4", "4+",
    request=[
        F("resources", [
            F("resource_type", INT8),
            F("resource_name", STRING),
            F("configuration_keys", Array(STRING), nullable="0+"),
        ]),
        F("include_synonyms", BOOL, "1+", default=False),
        F("include_documentation", BOOL, "3+", default=False),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("results", [
            F("error_code", INT16),
            F("error_message", STRING, nullable="0+"),
            F("resource_type", INT8),
            F("resource_name", STRING),
            F("configs", [
                F("name", STRING),
                F("value", STRING, nullable="0+"),
                F("read_only", BOOL),
                F("config_source", INT8, "1+", default=-1),
                F("is_default", BOOL, "0"),
                F("is_sensitive", BOOL),
                F("synonyms", [
                    F("name", STRING),
                    F("value", STRING, nullable="0+"),
                    F("source", INT8),
                ], "1+"),
                F("config_type", INT8, "3+", default=0),
                F("documentation", STRING, "3+", nullable="0+"),
            ]),
        ]),
    ],
)

_ALTER_RESULT = [
    F("error_code", INT16),
    F("error_message", STRING, nullable="0+"),
    F("resource_type", INT8),
    F("resource_name", STRING),
]

ALTER_CONFIGS = Api(33, "AlterConfigs", "0-2", "2+",
    request=[
        F("resources", [
            F("resource_type", INT8),
            F("resource_name", STRING),
            F("configs", [
                F("name", STRING),
                F("value", STRING, nullable="0+"),
            ]),
        ]),
        F("validate_only", BOOL),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("responses", _ALTER_RESULT),
    ],
)

INCREMENTAL_ALTER_CONFIGS = Api(44, "IncrementalAlterConfigs", "0-1", "1+",
    request=[
        F("resources", [
            F("resource_type", INT8),
            F("resource_name", STRING),
            F("configs", [
                F("name", STRING),
                # 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT
                F("config_operation", INT8),
                F("value", STRING, nullable="0+"),
            ]),
        ]),
        F("validate_only", BOOL),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("responses", _ALTER_RESULT),
    ],
)

DESCRIBE_LOG_DIRS = Api(35, "DescribeLogDirs", "1-5", "2+",
    request=[
        # null: every topic
        F("topics", [
            F("topic", STRING),
            F("partitions", Array(INT32)),
        ], nullable="0+"),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16, "3+"),
        F("results", [
            F("error_code", INT16),
            F("log_dir", STRING),
            F("topics", [
                F("name", STRING),
                F("partitions", [
                    F("partition_index", INT32),
                    F("partition_size", INT64),
                    F("offset_lag", INT64),
                    F("is_future_key", BOOL),
                ]),
            ]),
            F("total_bytes", INT64, "4+", default=-1),
            F("usable_bytes", INT64, "4+", default=-1),
            F("is_cordoned", BOOL, "5+", default=False),
        ]),
    ],
)

APIS = [DESCRIBE_CONFIGS, ALTER_CONFIGS, INCREMENTAL_ALTER_CONFIGS, DESCRIBE_LOG_DIRS]


# ---- request facts (facts.py): what the broker reads of these requests besides the values
DESCRIBE_LOG_DIRS.facts = Facts(acl=Acl("DESCRIBE", "CLUSTER"))
