"""The share-group state APIs (KIP-932): what a share-partition leader asks the share coordinator
(Kafka's message specs). The coordinator keeps each share-partition's state in
`__share_group_state`; these read, write, initialize and delete it.
"""
from pylog.core.protocol.schema import Api, Field as F
from pylog.core.protocol.types import INT8, INT16, INT32, INT64, STRING, UUID

_ERROR = [F("error_code", INT16), F("error_message", STRING, nullable="0+", default=None)]
_BATCHES = F("state_batches", [
    F("first_offset", INT64),
    F("last_offset", INT64),
    F("delivery_state", INT8),
    F("delivery_count", INT16),
])


def _request(*partition_fields):
    return [
        F("group_id", STRING),
        F("topics", [F("topic_id", UUID), F("partitions", [F("partition", INT32), *partition_fields])]),
    ]


def _response(*partition_fields):
    return [F("results", [F("topic_id", UUID), F("partitions", [F("partition", INT32), *_ERROR,
                                                                *partition_fields])])]


INITIALIZE_SHARE_GROUP_STATE = Api(83, "InitializeShareGroupState", "0", "0+",
    request=_request(F("state_epoch", INT32), F("start_offset", INT64)),
    response=_response())

READ_SHARE_GROUP_STATE = Api(84, "ReadShareGroupState", "0", "0+",
    request=_request(F("leader_epoch", INT32)),
    response=_response(F("state_epoch", INT32), F("start_offset", INT64), _BATCHES))

WRITE_SHARE_GROUP_STATE = Api(85, "WriteShareGroupState", "0-1", "0+",
    request=_request(F("state_epoch", INT32), F("leader_epoch", INT32), F("start_offset", INT64),
                     F("delivery_complete_count", INT32, "1+", default=-1), _BATCHES),
    response=_response())

DELETE_SHARE_GROUP_STATE = Api(86, "DeleteShareGroupState", "0", "0+",
    request=_request(), response=_response())

READ_SHARE_GROUP_STATE_SUMMARY = Api(87, "ReadShareGroupStateSummary", "0-1", "0+",
    request=_request(F("leader_epoch", INT32)),
    response=_response(F("state_epoch", INT32), F("leader_epoch", INT32), F("start_offset", INT64),
                       F("delivery_complete_count", INT32, "1+", default=-1)))

APIS = [INITIALIZE_SHARE_GROUP_STATE, READ_SHARE_GROUP_STATE, WRITE_SHARE_GROUP_STATE, DELETE_SHARE_GROUP_STATE,
        READ_SHARE_GROUP_STATE_SUMMARY]
