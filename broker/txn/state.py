"""One transactional id's state, and its record in `__transaction_state`.

Kafka's TransactionMetadata on one node: the producer id and epoch handed
out, the state (txn_log.TxnState), the partitions of the open transaction and
its timestamps. `to_value()`/`from_value()` are the TransactionLogValue
(v1) the coordinator writes and replays; the byte layout is
`pylog.core.protocol.txn_log`'s.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pylog.core.protocol import txn_log as tl
from pylog.core.protocol.txn_log import TxnState

TOPIC = "__transaction_state"
VALUE_VERSION = 1  # transaction.version 1: the flexible value
NO_PRODUCER_ID = -1
NO_EPOCH = -1
MAX_EPOCH = 32767  # Short.MAX_VALUE: an epoch that cannot be bumped again needs a new producer id

OPEN = (TxnState.ONGOING, TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT, TxnState.PREPARE_EPOCH_FENCE)


@dataclass
class TxnMetadata:
    """What the coordinator knows of one transactional id (Kafka's TransactionMetadata)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState = TxnState.EMPTY
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    last_producer_epoch: int = NO_EPOCH  # in memory only: the epoch before the last bump (retries)
    partitions: set = field(default_factory=set)  # {(topic, partition)}
    start_ms: int = -1
    update_ms: int = -1
    client_txn_version: int = 0

    def to_value(self) -> bytes:
        """TransactionLogValue v1 bytes of this state (partitions sorted, as Kafka lists them)."""
        by_topic: dict[str, list[int]] = {}
        for t, p in sorted(self.partitions):
            by_topic.setdefault(t, []).append(p)
        return tl.encode_value({
            "producer_id": self.producer_id,
            "previous_producer_id": self.previous_producer_id,
            "next_producer_id": self.next_producer_id,
            "producer_epoch": self.producer_epoch,
            "transaction_timeout_ms": self.timeout_ms,
            "transaction_status": int(self.state),
            # Kafka writes null for an Empty transaction and a list otherwise
            "transaction_partitions": None if self.state == TxnState.EMPTY else
            [{"topic": t, "partition_ids": ps} for t, ps in by_topic.items()],
            "transaction_last_update_timestamp_ms": self.update_ms,
            "transaction_start_timestamp_ms": self.start_ms,
            "client_transaction_version": self.client_txn_version,
        }, VALUE_VERSION)

    @classmethod
    def from_value(cls, transactional_id: str, value: dict) -> "TxnMetadata":
        """The state a decoded TransactionLogValue describes."""
        parts = {(e["topic"], p) for e in value.get("transaction_partitions") or () for p in e["partition_ids"]}
        return cls(transactional_id, value["producer_id"], value["producer_epoch"],
                   value["transaction_timeout_ms"], TxnState(value["transaction_status"]),
                   value.get("previous_producer_id", NO_PRODUCER_ID), value.get("next_producer_id", NO_PRODUCER_ID),
                   NO_EPOCH, parts, value["transaction_start_timestamp_ms"],
                   value["transaction_last_update_timestamp_ms"], value.get("client_transaction_version", 0))

    @property
    def is_open(self) -> bool:
        """A transaction is in progress or being completed."""
        return self.state in OPEN

    def key(self) -> bytes:
        """TransactionLogKey bytes."""
        return tl.encode_key(self.transactional_id)
