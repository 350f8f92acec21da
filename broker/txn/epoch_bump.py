"""transaction.version 2 (KIP-890 part 2): the epoch moves at every transaction's end.

A client at level 2 adds partitions implicitly (a Produce v12 batch or a TxnOffsetCommit v5
opens the transaction and adds its partition) and ends each transaction with EndTxn v5: the
coordinator bumps the producer epoch before writing the markers (so a zombie still on the old
epoch is fenced at every partition) and answers the id and epoch the next transaction uses. An
epoch that cannot be bumped again ends with a new producer id at epoch 0 (rotation; the old id
becomes the previous one). A retried EndTxn names the epoch before the bump and gets the same
answer. Level 1 (AddPartitionsToTxn, the epoch kept across transactions) stays selectable.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from pylog.broker.txn.state import MAX_EPOCH, NO_EPOCH, NO_PRODUCER_ID
from pylog.core.errors import ErrorCode
from pylog.core.protocol.txn_log import TxnState

if TYPE_CHECKING:
    from pylog.broker.txn.coordinator import TransactionCoordinator
    from pylog.broker.txn.state import TxnMetadata

SUPPORTED_LEVELS = (0, 1, 2)
DEFAULT_LEVEL = 2  # Kafka 4 formats new clusters at transaction.version 2
CLIENT_V2 = 2  # TransactionLogValue's client_transaction_version of a level-2 client

# first request versions a level-2 client sends
FIRST_V2_PRODUCE = 12
FIRST_V2_TXN_OFFSET_COMMIT = 5
FIRST_V2_END_TXN = 5

_DONE = {True: TxnState.COMPLETE_COMMIT, False: TxnState.COMPLETE_ABORT}
_PREPARE = {True: TxnState.PREPARE_COMMIT, False: TxnState.PREPARE_ABORT}


def _answer(m: TxnMetadata) -> tuple[int, int, int]:
    return ErrorCode.NONE, m.producer_id, m.producer_epoch


def _is_retry(m: TxnMetadata, pid: int, epoch: int) -> bool:
    """The request names the epoch the last bump replaced, as Kafka tells a retried EndTxn: one
    below the current epoch, or the last epoch of the producer id a rotation replaced."""
    if m.state not in (TxnState.COMPLETE_COMMIT, TxnState.COMPLETE_ABORT, *_PREPARE.values()):
        return False
    if pid == m.producer_id and epoch != NO_EPOCH and epoch + 1 == m.producer_epoch:
        return True
    return pid == m.previous_producer_id and epoch == MAX_EPOCH - 1 and m.producer_epoch == 0


def end_txn(tc: TransactionCoordinator, tid: str, pid: int, epoch: int, commit: bool) -> tuple[int, int, int]:
    """EndTxn v5: (error code, producer id, epoch for the next transaction)."""
    m = tc.txns.get(tid)
    if m is None:
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING, -1, -1
    if _is_retry(m, pid, epoch):
        if m.state == _DONE[commit]:
            return _answer(m)
        if m.state == _PREPARE[commit]:
            code = tc.complete(m, commit)
            return (code, -1, -1) if code else _answer(m)
        return ErrorCode.INVALID_TXN_STATE, -1, -1
    if pid != m.producer_id:
        return ErrorCode.INVALID_PRODUCER_ID_MAPPING, -1, -1
    if epoch != m.producer_epoch:
        return ErrorCode.PRODUCER_FENCED, -1, -1
    s = m.state
    if s in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
        return ErrorCode.CONCURRENT_TRANSACTIONS, -1, -1
    if s == TxnState.PREPARE_EPOCH_FENCE:
        return ErrorCode.PRODUCER_FENCED, -1, -1
    if s != TxnState.ONGOING and commit:
        return ErrorCode.INVALID_TXN_STATE, -1, -1  # nothing to commit
    # Ongoing (commit or abort), or an abort with nothing added: the epoch moves either way
    code = _bump_and_end(tc, m, commit)
    return (code, -1, -1) if code else _answer(m)


def _bump_and_end(tc: TransactionCoordinator, m: TxnMetadata, commit: bool) -> int:
    old_pid, old_epoch = m.producer_id, m.producer_epoch
    next_pid = NO_PRODUCER_ID
    if old_epoch + 1 >= MAX_EPOCH:
        # the markers close the old id at its last epoch; the next transaction gets a new id
        next_pid = tc.producer_ids.next_id()
    start = m.start_ms if m.state == TxnState.ONGOING else -1
    code = tc.set_state(m, producer_epoch=old_epoch + 1, state=_PREPARE[commit], next_producer_id=next_pid,
                   client_txn_version=CLIENT_V2, start_ms=start)
    if code:
        return code
    m.last_producer_epoch = old_epoch
    code = tc.complete(m, commit)
    if code or next_pid == NO_PRODUCER_ID:
        return code
    code = tc.set_state(m, producer_id=next_pid, producer_epoch=0, previous_producer_id=old_pid,
                   next_producer_id=NO_PRODUCER_ID)
    if code == ErrorCode.NONE:
        tc.by_producer.pop(old_pid, None)
        tc.by_producer[next_pid] = m
    return code


def add_implicitly(tc: TransactionCoordinator, tid: str, pid: int, epoch: int, partitions: list) -> int:
    """A level-2 client's Produce v12 or TxnOffsetCommit v5: the partitions join the producer's
    transaction (opening one when none is open), as AddPartitionsToTxn would have done."""
    m = tc.txns.get(tid)
    before = m.client_txn_version if m is not None else None
    if m is not None:
        m.client_txn_version = CLIENT_V2  # written with the add's record, as Kafka's prepareAddPartitions
    code = tc.add_partitions(tid, pid, epoch, partitions)
    if code != ErrorCode.NONE and m is not None and before is not None:
        m.client_txn_version = before
    return code
