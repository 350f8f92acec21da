"""Transaction APIs: the client's (AddPartitionsToTxn, AddOffsetsToTxn, EndTxn,
TxnOffsetCommit) and the admin's (DescribeProducers, DescribeTransactions,
ListTransactions), at the versions a transaction.version 2 broker serves, and
WriteTxnMarkers, which kafka-transactions.sh's abort sends to a partition leader."""
from pylog.core.protocol.facts import Acl, Facts, Partitions
from pylog.core.protocol.schema import Api, Field as F
from pylog.core.protocol.types import Array, BOOL, INT8, INT16, INT32, INT64, STRING, UUID, ZERO_UUID

_TXN_TOPIC = [
    F("name", STRING),
    F("partitions", Array(INT32)),
]
_TXN_TOPIC_RESULT = [
    F("name", STRING),
    F("results_by_partition", [
        F("partition_index", INT32),
        F("partition_error_code", INT16),
    ]),
]

ADD_PARTITIONS_TO_TXN = Api(24, "AddPartitionsToTxn", "0-5", "3+",
    request=[
        F("transactions", [
            F("transactional_id", STRING),
            F("producer_id", INT64),
            F("producer_epoch", INT16),
            F("verify_only", BOOL, default=False),
            F("topics", _TXN_TOPIC),
        ], "4+"),
        F("v3_and_below_transactional_id", STRING, "0-3"),
        F("v3_and_below_producer_id", INT64, "0-3"),
        F("v3_and_below_producer_epoch", INT16, "0-3"),
        F("v3_and_below_topics", _TXN_TOPIC, "0-3"),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16, "4+"),
        F("results_by_transaction", [
            F("transactional_id", STRING),
            F("topic_results", _TXN_TOPIC_RESULT),
        ], "4+"),
        F("results_by_topic_v3_and_below", _TXN_TOPIC_RESULT, "0-3"),
    ],
)

ADD_OFFSETS_TO_TXN = Api(25, "AddOffsetsToTxn", "0-4", "3+",
    request=[
        F("transactional_id", STRING),
        F("producer_id", INT64),
        F("producer_epoch", INT16),
        F("group_id", STRING),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
    ],
)

END_TXN = Api(26, "EndTxn", "0-5", "3+",
    request=[
        F("transactional_id", STRING),
        F("producer_id", INT64),
        F("producer_epoch", INT16),
        F("committed", BOOL),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        # v5 (transaction.version 2): the producer id and epoch the next transaction uses
        F("producer_id", INT64, "5+", default=-1),
        F("producer_epoch", INT16, "5+", default=-1),
    ],
)

TXN_OFFSET_COMMIT = Api(28, "TxnOffsetCommit", "0-6", "3+",
    request=[
        F("transactional_id", STRING),
        F("group_id", STRING),
        F("producer_id", INT64),
        F("producer_epoch", INT16),
        F("generation_id_or_member_epoch", INT32, "3+", default=-1),
        F("member_id", STRING, "3+", default=""),
        F("group_instance_id", STRING, "3+", nullable="3+", default=None),
        F("topics", [
            F("name", STRING, "0-5", default=""),
            F("topic_id", UUID, "6+", default=ZERO_UUID),
            F("partitions", [
                F("partition_index", INT32),
                F("committed_offset", INT64),
                F("committed_leader_epoch", INT32, "2+", default=-1),
                F("committed_metadata", STRING, nullable="0+"),
            ]),
        ]),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("topics", [
            F("name", STRING, "0-5", default=""),
            F("topic_id", UUID, "6+", default=ZERO_UUID),
            F("partitions", [
                F("partition_index", INT32),
                F("error_code", INT16),
            ]),
        ]),
    ],
)

DESCRIBE_PRODUCERS = Api(61, "DescribeProducers", "0", "0+",
    request=[
        F("topics", [
            F("name", STRING),
            F("partition_indexes", Array(INT32)),
        ]),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("topics", [
            F("name", STRING),
            F("partitions", [
                F("partition_index", INT32),
                F("error_code", INT16),
                F("error_message", STRING, nullable="0+", default=None),
                F("active_producers", [
                    F("producer_id", INT64),
                    F("producer_epoch", INT32),
                    F("last_sequence", INT32, default=-1),
                    F("last_timestamp", INT64, default=-1),
                    F("coordinator_epoch", INT32),
                    F("current_txn_start_offset", INT64, default=-1),
                ]),
            ]),
        ]),
    ],
)

DESCRIBE_TRANSACTIONS = Api(65, "DescribeTransactions", "0", "0+",
    request=[
        F("transactional_ids", Array(STRING)),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("transaction_states", [
            F("error_code", INT16),
            F("transactional_id", STRING),
            F("transaction_state", STRING),
            F("transaction_timeout_ms", INT32),
            F("transaction_start_time_ms", INT64),
            F("producer_id", INT64),
            F("producer_epoch", INT16),
            F("topics", [
                F("topic", STRING),
                F("partitions", Array(INT32)),
            ]),
        ]),
    ],
)

LIST_TRANSACTIONS = Api(66, "ListTransactions", "0-2", "0+",
    request=[
        F("state_filters", Array(STRING)),
        F("producer_id_filters", Array(INT64)),
        F("duration_filter", INT64, "1+", default=-1),
        F("transactional_id_pattern", STRING, "2+", nullable="2+", default=None),
    ],
    response=[
        F("throttle_time_ms", INT32),
        F("error_code", INT16),
        F("unknown_state_filters", Array(STRING)),
        F("transaction_states", [
            F("transactional_id", STRING),
            F("producer_id", INT64),
            F("transaction_state", STRING),
        ]),
    ],
)

WRITE_TXN_MARKERS = Api(27, "WriteTxnMarkers", "1-2", "1+",
    request=[
        F("markers", [
            F("producer_id", INT64),
            F("producer_epoch", INT16),
            F("transaction_result", BOOL),
            F("topics", [
                F("name", STRING),
                F("partition_indexes", Array(INT32)),
            ]),
            F("coordinator_epoch", INT32),
            F("transaction_version", INT8, "2+", default=0),
        ]),
    ],
    response=[
        F("markers", [
            F("producer_id", INT64),
            F("topics", [
                F("name", STRING),
                F("partitions", [
                    F("partition_index", INT32),
                    F("error_code", INT16),
                ]),
            ]),
        ]),
    ],
)

APIS = [ADD_PARTITIONS_TO_TXN, ADD_OFFSETS_TO_TXN, END_TXN, TXN_OFFSET_COMMIT, DESCRIBE_PRODUCERS,
        DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS, WRITE_TXN_MARKERS]


# ---- request facts (facts.py): what the broker reads of these requests besides the values
ADD_PARTITIONS_TO_TXN.facts = Facts(transactional_fields=("v3_and_below_transactional_id", "transactions"),
                                    coordinator=True)
ADD_OFFSETS_TO_TXN.facts = Facts(transactional_fields=("transactional_id",), group_fields=("group_id",),
                                 coordinator=True)
END_TXN.facts = Facts(transactional_fields=("transactional_id",), coordinator=True)
TXN_OFFSET_COMMIT.facts = Facts(partitions=Partitions(
    "topics", "name", "partitions", "partition_index", "topics", "name", "partitions", "partition_index",
    lambda i, c: {"partition_index": i, "error_code": c},
    lambda: {"throttle_time_ms": 0, "topics": []}, ids_from=6),
    transactional_fields=("transactional_id",), group_fields=("group_id",), coordinator=True)
DESCRIBE_PRODUCERS.facts = Facts(acl=Acl("READ", "TOPIC", topics_field="topics", name_field="name"))
