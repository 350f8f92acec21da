"""Fetch, ListOffsets, OffsetForLeaderEpoch."""
from pylog.core.protocol.apis.produce import NODE_ENDPOINT
from pylog.core.protocol.facts import Acl, Facts, Partitions, TopicIds
from pylog.core.protocol.schema import Api, Field as F
from pylog.core.protocol.types import Array, INT8, INT16, INT32, INT64, RECORDS, STRING, UUID, ZERO_UUID, Struct

FETCH = Api(1, "Fetch", "4-18", "12+",
    request=[
        F("cluster_id", STRING, "12+", nullable="12+", tag=0, default=None),
        F("replica_id", INT32, "0-14", default=-1),
        F("replica_state", Struct(
            F("replica_id", INT32, default=-1),
            F("replica_epoch", INT64, default=-1),
        ), "15+", tag=1),
        F("max_wait_ms", INT32),
        F("min_bytes", INT32),
        F("max_bytes", INT32, "3+", default=0x7FFFFFFF),
        F("isolation_level", INT8, "4+", default=0),
        F("session_id", INT32, "7+", default=0),
        F("session_epoch", INT32, "7+", default=-1),
        F("topics", [
            F("topic", STRING, "0-12"),
            F("topic_id", UUID, "13+"),
            F("partitions", [
                F("partition", INT32),
                F("current_leader_epoch", INT32, "9+", default=-1),
                F("fetch_offset", INT64),
                F("last_fetched_epoch", INT32, "12+", default=-1),
                F("log_start_offset", INT64, "5+", default=-1),
                F("partition_max_bytes", INT32),
                F("replica_directory_id", UUID, "17+", tag=0, default=ZERO_UUID),
                F("high_watermark", INT64, "18+", tag=1, default=0x7FFFFFFFFFFFFFFF),
            ]),
        ]),
        F("forgotten_topics_data", [
            F("topic", STRING, "7-12"),
            F("topic_id", UUID, "13+"),
            F("partitions", Array(INT32)),
        ], "7+"),
        F("rack_id", STRING, "11+", default=""),
    ],
    response=[
        F("throttle_time_ms", INT32, "1+"),
        F("error_code", INT16, "7+"),
        F("session_id", INT32, "7+", default=0),
        F("responses", [
            F("topic", STRING, "0-12"),
            F("topic_id", UUID, "13+"),
            F("partitions", [
                F("partition_index", INT32),
                F("error_code", INT16),
                F("high_watermark", INT64),
                F("last_stable_offset", INT64, "4+", default=-1),
                F("log_start_offset", INT64, "5+", default=-1),
                F("diverging_epoch", Struct(
                    F("epoch", INT32, default=-1),
                    F("end_offset", INT64, default=-1),
                ), "12+", tag=0),
                F("current_leader", Struct(
                    F("leader_id", INT32, default=-1),
                    F("leader_epoch", INT32, default=-1),
                ), "12+", tag=1),
                F("snapshot_id", Struct(
                    F("end_offset", INT64, default=-1),
                    F("epoch", INT32, default=-1),
                ), "12+", tag=2),
                F("aborted_transactions", [
                    F("producer_id", INT64),
                    F("first_offset", INT64),
                ], "4+", nullable="4+"),
                F("preferred_read_replica", INT32, "11+", default=-1),
                F("records", RECORDS, nullable="0+"),
            ]),
        ]),
        F("node_endpoints", NODE_ENDPOINT, "16+", tag=0),
    ],
)

LIST_OFFSETS = Api(2, "ListOffsets", "1-11", "6+",
    request=[
        F("replica_id", INT32),
        F("isolation_level", INT8, "2+"),
        F("topics", [
            F("name", STRING),
            F("partitions", [
                F("partition_index", INT32),
                F("current_leader_epoch", INT32, "4+", default=-1),
                F("timestamp", INT64),
                F("max_num_offsets", INT32, "0", default=1),
            ]),
        ]),
        F("timeout_ms", INT32, "10+", default=0),
    ],
    response=[
        F("throttle_time_ms", INT32, "2+"),
        F("topics", [
            F("name", STRING),
            F("partitions", [
                F("partition_index", INT32),
                F("error_code", INT16),
                F("old_style_offsets", Array(INT64), "0"),
                F("timestamp", INT64, "1+", default=-1),
                F("offset", INT64, "1+", default=-1),
                F("leader_epoch", INT32, "4+", default=-1),
            ]),
        ]),
    ],
)

OFFSET_FOR_LEADER_EPOCH = Api(23, "OffsetForLeaderEpoch", "2-4", "4+",
    request=[
        F("replica_id", INT32, "3+", default=-2),
        F("topics", [
            F("topic", STRING),
            F("partitions", [
                F("partition", INT32),
                F("current_leader_epoch", INT32, "2+", default=-1),
                F("leader_epoch", INT32),
            ]),
        ]),
    ],
    response=[
        F("throttle_time_ms", INT32, "2+"),
        F("topics", [
            F("topic", STRING),
            F("partitions", [
                F("error_code", INT16),
                F("partition", INT32),
                F("leader_epoch", INT32, "1+", default=-1),
                F("end_offset", INT64, default=-1),
            ]),
        ]),
    ],
)

APIS = [FETCH, LIST_OFFSETS, OFFSET_FOR_LEADER_EPOCH]


# ---- request facts (facts.py): what the broker reads of these requests besides the values
FETCH.facts = Facts(partitions=Partitions(
    "topics", "topic", "partitions", "partition", "responses", "topic", "partitions", "partition_index",
    lambda i, c: {"partition_index": i, "error_code": c, "high_watermark": -1, "last_stable_offset": -1,
                  "log_start_offset": -1, "aborted_transactions": None, "preferred_read_replica": -1,
                  "records": b""},
    lambda: {"throttle_time_ms": 0, "error_code": 0, "session_id": 0, "responses": []}),
    topic_ids=TopicIds("topics", "topic", 13), partition_data=True)
LIST_OFFSETS.facts = Facts(partitions=Partitions(
    "topics", "name", "partitions", "partition_index", "topics", "name", "partitions", "partition_index",
    lambda i, c: {"partition_index": i, "error_code": c, "old_style_offsets": [], "timestamp": -1,
                  "offset": -1, "leader_epoch": -1},
    lambda: {"throttle_time_ms": 0, "topics": []}), acl=Acl("DESCRIBE", "TOPIC"), partition_data=True)
OFFSET_FOR_LEADER_EPOCH.facts = Facts(partitions=Partitions(
    "topics", "topic", "partitions", "partition", "topics", "topic", "partitions", "partition",
    lambda i, c: {"error_code": c, "partition": i, "leader_epoch": -1, "end_offset": -1},
    lambda: {"throttle_time_ms": 0, "topics": []}), partition_data=True)
