"""Keys and values of the `__transaction_state` records, in Kafka's schemas.

Key: TransactionLogKey, int16 version 0 + the transactional id (a null
value is a tombstone: the transactional id expired).
Value: TransactionLogValue, int16 version + struct; v0 is the classic
layout, v1 is flexible and carries three tagged fields (previous and next
producer id, the client's transaction version) that KIP-890 added.

This module is the one owner of the format: the broker's transaction
coordinator writes and replays it, dump tools render it.
"""
from __future__ import annotations

import enum

from pylog.core.protocol.embedded import Embedded, MalformedDataError
from pylog.core.protocol.schema import Field as F
from pylog.core.protocol.types import Array, INT8, INT16, INT32, INT64, STRING

__all__ = [
    "TRANSACTION_LOG_KEY", "TRANSACTION_LOG_VALUE", "TxnState", "KEY_VERSION",
    "encode_key", "encode_value", "decode_key", "decode_value", "decode_record", "MalformedDataError",
]

KEY_VERSION = 0

TRANSACTION_LOG_KEY = Embedded("TransactionLogKey", "0", "none", [
    F("transactional_id", STRING),
])

TRANSACTION_LOG_VALUE = Embedded("TransactionLogValue", "0-1", "1+", [
    F("producer_id", INT64),
    F("previous_producer_id", INT64, "1+", tag=0, default=-1),
    F("next_producer_id", INT64, "1+", tag=1, default=-1),
    F("producer_epoch", INT16),
    F("transaction_timeout_ms", INT32),
    F("transaction_status", INT8),
    F("transaction_partitions", [
        F("topic", STRING),
        F("partition_ids", Array(INT32)),
    ], nullable="0+"),
    F("transaction_last_update_timestamp_ms", INT64),
    F("transaction_start_timestamp_ms", INT64),
    F("client_transaction_version", INT16, "1+", tag=2, default=0),
])


class TxnState(enum.IntEnum):
    """TransactionStatus values as Kafka stores them (TransactionState ids)."""
    EMPTY = 0
    ONGOING = 1
    PREPARE_COMMIT = 2
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    DEAD = 6
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        """The state name Kafka's tools print ("PrepareCommit", "CompleteAbort", ...)."""
        return "".join(p.capitalize() for p in self.name.split("_"))


def encode_key(transactional_id: str) -> bytes:
    """TransactionLogKey v0 (version prefix included)."""
    return TRANSACTION_LOG_KEY.encode({"transactional_id": transactional_id}, KEY_VERSION)


def encode_value(value: dict, version: int = 1) -> bytes:
    """TransactionLogValue (version prefix included). `transaction_partitions` is a list of
    {"topic", "partition_ids"} (Kafka writes an empty list, not null, for no partitions)."""
    return TRANSACTION_LOG_VALUE.encode(value, version)


def decode_key(data) -> str:
    """The transactional id of a TransactionLogKey; MalformedDataError on another version."""
    return TRANSACTION_LOG_KEY.decode(data)[1]["transactional_id"]


def decode_value(data) -> tuple[int, dict] | None:
    """(version, fields) of a TransactionLogValue; None for a tombstone."""
    if data is None:
        return None
    return TRANSACTION_LOG_VALUE.decode(data)


def decode_record(key, value) -> dict:
    """A whole record as one dict: {"transactional_id", "value_version", "value"} (value and
    value_version None for tombstones)."""
    decoded = decode_value(value)
    return {
        "transactional_id": decode_key(key),
        "value_version": None if decoded is None else decoded[0],
        "value": None if decoded is None else decoded[1],
    }
