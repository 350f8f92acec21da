"""Produce and InitProducerId."""
from pylog.core.protocol.facts import Acl, Facts, Partitions
from pylog.core.protocol.schema import Api, Field as F
from pylog.core.protocol.types import INT16, INT32, INT64, RECORDS, STRING, UUID, ZERO_UUID, Struct

# Shared shape of the leader hints returned with NOT_LEADER errors (KIP-951).
NODE_ENDPOINT = [
    F("node_id", INT32),
    F("host", STRING),
    F("port", INT32),
    F("rack", STRING, nullable="0+", default=None),
]

PRODUCE = Api(0, "Produce", "3-13", "9+",
    request=[
        F("transactional_id", STRING, "3+", nullable="3+", default=None),
        F("acks", INT16),
        F("timeout_ms", INT32),
        F("topic_data", [
            F("name", STRING, "0-12", default=""),
            F("topic_id", UUID, "13+", default=ZERO_UUID),
            F("partition_data", [
                F("index", INT32),
                F("records", RECORDS, nullable="0+"),
            ]),
        ]),
    ],
    response=[
        F("responses", [
            F("name", STRING, "0-12", default=""),
            F("topic_id", UUID, "13+", default=ZERO_UUID),
            F("partition_responses", [
                F("index", INT32),
                F("error_code", INT16),
                F("base_offset", INT64),
                F("log_append_time_ms", INT64, "2+", default=-1),
                F("log_start_offset", INT64, "5+", default=-1),
                F("record_errors", [
                    F("batch_index", INT32),
                    F("batch_index_error_message", STRING, nullable="8+", default=None),
                ], "8+"),
                F("error_message", STRING, "8+", nullable="8+", default=None),
                F("current_leader", Struct(
                    F("leader_id", INT32, default=-1),
                    F("leader_epoch", INT32, default=-1),
                ), "10+", tag=0),
            ]),
        ]),
        F("throttle_time_ms", INT32, "1+", default=0),
        F("node_endpoints", NODE_ENDPOINT, "10+", tag=0),
    ],
)

INIT_PRODUCER_ID = Api(22, "InitProducerId", "0-5", "2+",
    request=[
        F("transactional_id", STRING, nullable="0+"),
        F("transaction_timeout_ms", INT32),
        F("producer_id", INT64, "3+", default=-1),
        F("producer_epoch", INT16, "3+", default=-1),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("producer_id", INT64, default=-1),
        F("producer_epoch", INT16),
    ],
)

APIS = [PRODUCE, INIT_PRODUCER_ID]


# ---- request facts (facts.py): what the broker reads of these requests besides the values
PRODUCE.facts = Facts(
    acl=Acl("WRITE", "TOPIC"),  # and WRITE on the transactional id of transactional records
    partitions=Partitions(
        "topic_data", "name", "partition_data", "index", "responses", "name", "partition_responses", "index",
        lambda i, c: {"index": i, "error_code": c, "base_offset": -1, "log_append_time_ms": -1,
                      "log_start_offset": -1, "record_errors": [], "error_message": None},
        lambda: {"responses": [], "throttle_time_ms": 0}, ids_from=13),
    transactional_fields=("transactional_id",), partition_data=True)
INIT_PRODUCER_ID.facts = Facts(transactional_fields=("transactional_id",), coordinator=True)
