"""The transactional producer's state machine (KIP-98, KIP-360, KIP-447).

`TransactionManager` is what a Producer with `transactional.id` gets: the
coordinator lookup, InitProducerId with the transactional id (which fences
older producers of the same id), AddPartitionsToTxn before the first batch of a
partition is drained, AddOffsetsToTxn + TxnOffsetCommit for
`send_offsets_to_transaction`, and EndTxn. Its states and transitions are the
Java client's TransactionManager's; errors fall in Kafka's three kinds:

- retriable (CONCURRENT_TRANSACTIONS, COORDINATOR_LOAD_IN_PROGRESS, a moved
  coordinator): retried within the call's time limit, the coordinator
  looked up again when it moved;
- abortable (a failed batch, TRANSACTION_ABORTABLE, a rejected offset commit):
  the transaction can only be aborted, then the producer goes on
  (`AbortableTransactionError`);
- fatal (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH, authorization, a broken
  coordinator state): the producer can only be closed
  (`FatalTransactionError`; `.fenced` when another producer took the id).

The user-facing calls run on the caller's thread and hand their work to the
producer's event loop; the sender calls `sender_mute` every turn, which holds
back partitions not yet in the transaction and starts their AddPartitionsToTxn.
"""
from __future__ import annotations

import asyncio
import enum
import logging
import time
from dataclasses import dataclass

from pylog.core.client.errors import ConnectionFailedError, KafkaTimeoutError
from pylog.core.client.structs import TopicPartition
from pylog.core.errors import ErrorCode, PylogError, error_for_code, error_name

log = logging.getLogger(__name__)

# FindCoordinator key types
GROUP_KEY = 0
TXN_KEY = 1


class TxnState(enum.Enum):
    """The Java client's TransactionManager.State."""

    UNINITIALIZED = "UNINITIALIZED"
    INITIALIZING = "INITIALIZING"
    READY = "READY"
    IN_TRANSACTION = "IN_TRANSACTION"
    COMMITTING_TRANSACTION = "COMMITTING_TRANSACTION"
    ABORTING_TRANSACTION = "ABORTING_TRANSACTION"
    ABORTABLE_ERROR = "ABORTABLE_ERROR"
    FATAL_ERROR = "FATAL_ERROR"


class TransactionError(PylogError):
    """A transactional call failed; `cause` is the underlying error (a KafkaError for a
    broker's answer), `code` its Kafka error code when it has one."""

    abortable = False
    fatal = False

    def __init__(self, message: str, cause: BaseException | None = None):
        super().__init__(message)
        self.cause = cause
        self.code = getattr(cause, "code", None)

    @property
    def fenced(self) -> bool:
        """Another producer with the same transactional.id (a newer epoch) took over."""
        return self.code in (ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH)


class AbortableTransactionError(TransactionError):
    """The transaction cannot commit: call abort_transaction(), then go on."""

    abortable = True


class FatalTransactionError(TransactionError):
    """The producer cannot go on (fenced, not authorized, broken state): close it."""

    fatal = True


class TransactionStateError(PylogError):
    """A transactional call in a state that does not allow it (Kafka's IllegalStateException),
    such as send() outside a transaction or commit before begin."""


class TransactionAbortedError(PylogError):
    """The record's transaction was aborted before the record was sent (Kafka's
    TransactionAbortedException)."""


@dataclass(frozen=True)
class ConsumerGroupMetadata:
    """Who consumed the offsets given to send_offsets_to_transaction (KIP-447): the group
    coordinator refuses them from a member that left or a stale generation."""

    group_id: str
    generation_id: int = -1
    member_id: str = ""
    group_instance_id: str | None = None


# answers that mean another producer has the transactional id
_FENCED = {ErrorCode.PRODUCER_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH}
# answers retried after a backoff within the call's time limit
_RETRY = {ErrorCode.CONCURRENT_TRANSACTIONS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
          ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.OPERATION_NOT_ATTEMPTED,
          ErrorCode.REQUEST_TIMED_OUT, ErrorCode.NETWORK_EXCEPTION, ErrorCode.LEADER_NOT_AVAILABLE}
# answers after which the coordinator is looked up again
_REDISCOVER = {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE}
# answers that leave the transaction abortable rather than the producer dead
_ABORTABLE = {ErrorCode.TRANSACTION_ABORTABLE, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
              ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_MEMBER_ID,
              ErrorCode.ILLEGAL_GENERATION, ErrorCode.FENCED_INSTANCE_ID, ErrorCode.REBALANCE_IN_PROGRESS,
              ErrorCode.UNKNOWN_PRODUCER_ID, ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
              ErrorCode.INVALID_RECORD, ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE,
              ErrorCode.INVALID_TIMESTAMP, ErrorCode.CORRUPT_MESSAGE, ErrorCode.POLICY_VIOLATION}
# a produce answer that ends the producer, not only the transaction
_FATAL_PRODUCE = _FENCED | {ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                            ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
# CONCURRENT_TRANSACTIONS right after EndTxn is the common case (the previous transaction's
# markers are still being written, a matter of milliseconds): retried after 5 ms rather than
# retry.backoff.ms (the Java client waits 20 ms; 5 doubles the rate of 1,000-record transactions)
_SHORT_BACKOFF = 0.005

_SEND_STATES = (TxnState.IN_TRANSACTION,)
_ADD_STATES = (TxnState.IN_TRANSACTION, TxnState.COMMITTING_TRANSACTION)


class TransactionManager:
    """The transactional state of one Producer (see the module docstring)."""

    def __init__(self, producer, sender, transactional_id: str, timeout_ms: int):
        self.producer = producer
        self.sender = sender
        self.client = producer.client
        self.idem = sender.idem
        self.transactional_id = transactional_id
        self.timeout_ms = timeout_ms
        cfg = producer.config
        self.backoff = cfg["retry.backoff.ms"] / 1000.0
        self.max_block = cfg["max.block.ms"] / 1000.0
        self.state = TxnState.UNINITIALIZED
        self.last_error: TransactionError | None = None
        self.partitions: set = set()  # partitions the coordinator has in this transaction
        self.offsets_added = False  # AddOffsetsToTxn succeeded in this transaction
        self._coordinators: dict = {}  # (key type, key) -> node id
        self._add_task: asyncio.Task | None = None

    # ================================================================ caller's thread
    def check_send(self) -> None:
        """send() is allowed only inside a transaction that has not failed."""
        st = self.state
        if st in _SEND_STATES:
            return
        if self.last_error is not None and st in (TxnState.ABORTABLE_ERROR, TxnState.FATAL_ERROR):
            raise type(self.last_error)(
                f"Cannot perform send because at least one previous transactional or idempotent request "
                f"has failed with errors: {self.last_error}", self.last_error.cause)
        raise TransactionStateError(f"TransactionalId {self.transactional_id}: Cannot call send in state {st.value}"
                                    + (" (call begin_transaction() first)" if st == TxnState.READY else ""))

    def _run(self, coro, timeout):
        limit = self.max_block if timeout is None else timeout
        return self.producer.loop.run(self._deadline(coro, limit))

    @staticmethod
    async def _deadline(coro, limit):
        try:
            return await asyncio.wait_for(coro, limit)
        except asyncio.TimeoutError:
            raise KafkaTimeoutError(f"Timeout expired after {int(limit * 1000)} ms while awaiting the "
                                    f"transactional request") from None

    def init_transactions(self, timeout: float | None = None) -> None:
        """Register the transactional id with its coordinator: fences any older producer with
        the same id and completes (or aborts) its open transaction. Call once, first."""
        self._run(self._init(), timeout)

    def begin_transaction(self) -> None:
        """Start a transaction (local only: the coordinator hears of it with the first
        partition or offsets)."""
        self._fail_if_error()
        if self.state != TxnState.READY:
            raise self._illegal("begin_transaction", TxnState.IN_TRANSACTION)
        self.state = TxnState.IN_TRANSACTION

    def send_offsets_to_transaction(self, offsets: dict, group, timeout: float | None = None) -> None:
        """Commit consumed `offsets` ({TopicPartition or (topic, partition): offset or
        (offset, metadata)}) for `group` (a group id or ConsumerGroupMetadata) as part of
        the transaction: visible to the group only if the transaction commits."""
        self._fail_if_error()
        if self.state != TxnState.IN_TRANSACTION:
            raise TransactionStateError(f"TransactionalId {self.transactional_id}: Cannot send offsets if a "
                                        f"transaction is not in progress (currentState= {self.state.value})")
        meta = group if isinstance(group, ConsumerGroupMetadata) else ConsumerGroupMetadata(str(group))
        self._run(self._send_offsets(offsets, meta), timeout)

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flush every record of the transaction, then commit it. After a KafkaTimeoutError
        the call may be repeated; after an AbortableTransactionError, abort."""
        self._fail_if_error(abortable=True)
        if self.state not in (TxnState.IN_TRANSACTION, TxnState.COMMITTING_TRANSACTION):
            raise self._illegal("commit_transaction", TxnState.COMMITTING_TRANSACTION)
        start = time.monotonic()
        limit = self.max_block if timeout is None else timeout
        self.state = TxnState.COMMITTING_TRANSACTION
        self.producer.flush(limit)
        self._fail_if_error(abortable=True)
        self._run(self._end(True), max(0.0, limit - (time.monotonic() - start)))

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Drop the records not yet sent, wait for those in flight, and abort the transaction
        (consumers with isolation.level=read_committed never see its records)."""
        self._fail_if_error()
        if self.state not in (TxnState.IN_TRANSACTION, TxnState.ABORTABLE_ERROR, TxnState.ABORTING_TRANSACTION):
            raise self._illegal("abort_transaction", TxnState.ABORTING_TRANSACTION)
        start = time.monotonic()
        limit = self.max_block if timeout is None else timeout
        self.state = TxnState.ABORTING_TRANSACTION
        self.producer.notify_sender(force=True)  # the sender drops what is queued
        try:
            self.producer.flush(limit)
        except KafkaTimeoutError:
            raise
        self._run(self._end(False), max(0.0, limit - (time.monotonic() - start)))

    def _fail_if_error(self, abortable=False):
        err = self.last_error
        if err is None:
            return
        if self.state == TxnState.FATAL_ERROR:
            raise FatalTransactionError(f"Cannot execute transactional method because we are in an error "
                                        f"state: {err}", err.cause)
        if abortable and self.state == TxnState.ABORTABLE_ERROR:
            raise AbortableTransactionError(f"Cannot commit: the transaction must be aborted: {err}", err.cause)

    def _illegal(self, call, target):
        return TransactionStateError(f"TransactionalId {self.transactional_id}: Invalid transition attempted "
                                     f"from state {self.state.value} to state {target.value} ({call})")

    # ================================================================ state changes (loop thread)
    def _abortable(self, cause, what) -> AbortableTransactionError:
        err = AbortableTransactionError(f"{what}: {cause}", cause)
        if self.state != TxnState.FATAL_ERROR:
            self.state = TxnState.ABORTABLE_ERROR
            self.last_error = err
        return err

    def _fatal(self, cause, what) -> FatalTransactionError:
        err = FatalTransactionError(f"{what}: {cause}", cause)
        self.state = TxnState.FATAL_ERROR
        self.last_error = err
        self.sender.wake()
        return err

    def _classify(self, code, what, fatal_default=True) -> TransactionError:
        cause = error_for_code(code, error_name(code))
        if code in _FENCED:
            cause = error_for_code(ErrorCode.PRODUCER_FENCED, f"{what}: {error_name(code)}: There is a newer "
                                   f"producer with the same transactionalId {self.transactional_id}")
            return self._fatal(cause, "producer fenced")
        if code in _ABORTABLE or not fatal_default:
            return self._abortable(cause, what)
        return self._fatal(cause, what)

    def batch_failed(self, error) -> None:
        """The sender failed a batch of this transaction (loop thread)."""
        if isinstance(error, TransactionAbortedError) or isinstance(error, TransactionError):
            return
        if self.state in (TxnState.FATAL_ERROR, TxnState.UNINITIALIZED):
            return
        code = getattr(error, "code", None)
        if code in _FATAL_PRODUCE:
            self._classify(code, "Produce")
        elif self.state != TxnState.ABORTABLE_ERROR:
            self._abortable(error, "a record of the transaction failed")

    # ================================================================ the sender's hook (loop thread)
    def sender_mute(self, acc, muted):
        """Called by the sender every turn: after an error or while aborting, fail what is
        queued; otherwise hold back partitions the coordinator does not have yet (and ask
        it to add them). Returns the partitions not to drain."""
        st = self.state
        if st in (TxnState.ABORTABLE_ERROR, TxnState.FATAL_ERROR, TxnState.ABORTING_TRANSACTION):
            dropped = acc.abort_all()
            if dropped:
                err = (TransactionAbortedError("Failing batch since transaction was aborted")
                       if st == TxnState.ABORTING_TRANSACTION or self.last_error is None else self.last_error)
                for b in dropped:
                    self.sender.complete(b, err)
            return muted
        with acc.lock:
            new = [tp for tp, dq in acc.deques.items() if dq and tp not in self.partitions]
        if not new:
            return muted
        if self._add_task is None and st in _ADD_STATES:
            self._add_task = asyncio.get_running_loop().create_task(self._add_partitions(new))
        return muted | set(new)

    async def _add_partitions(self, tps):
        try:
            await self._add_partitions_loop(tps)
        except TransactionError:
            pass  # state changed: the sender fails the queued batches
        except Exception as e:  # noqa: BLE001 - anything else leaves the transaction abortable
            self._abortable(e, "AddPartitionsToTxn")
        finally:
            self._add_task = None
            self.sender.wake()

    async def _add_partitions_loop(self, tps):
        by_topic: dict = {}
        for t, p in tps:
            by_topic.setdefault(t, []).append(p)
        body = {"v3_and_below_transactional_id": self.transactional_id,
                "v3_and_below_producer_id": self.idem.producer_id,
                "v3_and_below_producer_epoch": self.idem.producer_epoch,
                "v3_and_below_topics": [{"name": t, "partitions": sorted(ps)} for t, ps in by_topic.items()]}
        backoff = _SHORT_BACKOFF if not self.partitions else self.backoff
        while True:
            resp = await self._coordinator_request(TXN_KEY, self.transactional_id, "AddPartitionsToTxn", body)
            if resp is None:
                continue  # coordinator moved or unreachable: looked up again
            codes = set()
            for t in resp.get("results_by_topic_v3_and_below") or []:
                for r in t.get("results_by_partition") or []:
                    codes.add(r.get("partition_error_code", 0))
            codes.discard(ErrorCode.NONE)
            if len(codes) > 1:  # the partitions that failed matter, not those never tried
                codes.discard(ErrorCode.OPERATION_NOT_ATTEMPTED)
            if not codes:
                self.partitions.update(tps)
                return
            code = min(codes, key=lambda c: (c not in _FENCED, c not in _REDISCOVER, c))
            if code in _REDISCOVER:
                self._coordinators.pop((TXN_KEY, self.transactional_id), None)
            elif code not in _RETRY:
                raise self._classify(code, "AddPartitionsToTxn")
            await asyncio.sleep(_SHORT_BACKOFF if code == ErrorCode.CONCURRENT_TRANSACTIONS else backoff)

    # ================================================================ coordinator requests
    async def _coordinator(self, key_type, key) -> int:
        """The node id of the coordinator for a transactional id or group."""
        node = self._coordinators.get((key_type, key))
        if node is not None:
            return node
        while True:
            resp = await self.client.request_any("FindCoordinator", {
                "key": key, "key_type": key_type, "coordinator_keys": [key]})
            e = (resp.get("coordinators") or [resp])[0]
            code = e.get("error_code", 0)
            if not code:
                break
            if code in _REDISCOVER or code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                await asyncio.sleep(self.backoff)
                continue
            raise self._classify(code, "FindCoordinator")
        node = e["node_id"]
        if node not in self.client.metadata.brokers:
            await self.client.refresh_metadata()
        self._coordinators[(key_type, key)] = node
        return node

    async def _coordinator_request(self, key_type, key, api, body):
        """One request to the coordinator; None (after a backoff) when it could not be
        reached, so the caller retries with a fresh lookup."""
        try:
            node = await self._coordinator(key_type, key)
            return await self.client.request(node, api, body)
        except (ConnectionFailedError, KafkaTimeoutError, OSError) as e:
            log.debug("%s to the coordinator of %s failed: %s", api, key, e)
            self._coordinators.pop((key_type, key), None)
            await asyncio.sleep(self.backoff)
            return None

    async def _simple(self, key_type, key, api, body, what):
        """Send `api` until it succeeds: retriable answers retried, a moved coordinator
        looked up again, anything else classified (abortable or fatal) and raised."""
        while True:
            resp = await self._coordinator_request(key_type, key, api, body)
            if resp is None:
                continue
            code = resp.get("error_code", 0)
            if code == ErrorCode.NONE:
                return resp
            if code in _REDISCOVER:
                self._coordinators.pop((key_type, key), None)
            elif code not in _RETRY:
                raise self._classify(code, what)
            await asyncio.sleep(_SHORT_BACKOFF if code == ErrorCode.CONCURRENT_TRANSACTIONS else self.backoff)

    # ================================================================ the calls (loop thread)
    async def _init(self):
        if self.state not in (TxnState.UNINITIALIZED, TxnState.INITIALIZING):
            raise self._illegal("init_transactions", TxnState.INITIALIZING)
        self.state = TxnState.INITIALIZING
        await self._init_producer_id(bump=False)
        self.state = TxnState.READY

    async def _init_producer_id(self, bump):
        body = {"transactional_id": self.transactional_id, "transaction_timeout_ms": self.timeout_ms}
        if bump:
            # KIP-360: keep the producer id, bump the epoch (after an abortable sequence error)
            body["producer_id"] = self.idem.producer_id
            body["producer_epoch"] = self.idem.producer_epoch
        resp = await self._simple(TXN_KEY, self.transactional_id, "InitProducerId", body, "InitProducerId")
        self.idem.producer_id = resp["producer_id"]
        self.idem.producer_epoch = resp["producer_epoch"]
        self.idem.bump_unsupported = False
        self.idem.reset_sequences(self.producer.acc)
        log.debug("transactional id %s: producer id %d epoch %d", self.transactional_id,
                  self.idem.producer_id, self.idem.producer_epoch)

    async def _send_offsets(self, offsets, meta: ConsumerGroupMetadata):
        await self._simple(TXN_KEY, self.transactional_id, "AddOffsetsToTxn", {
            "transactional_id": self.transactional_id, "producer_id": self.idem.producer_id,
            "producer_epoch": self.idem.producer_epoch, "group_id": meta.group_id}, "AddOffsetsToTxn")
        self.offsets_added = True
        by_topic: dict = {}
        for tp, om in offsets.items():
            tp = TopicPartition(*tp)
            off, md = (om, "") if isinstance(om, int) else (om[0], om[1] if len(om) > 1 else "")
            by_topic.setdefault(tp.topic, []).append({
                "partition_index": tp.partition, "committed_offset": int(off),
                "committed_leader_epoch": -1, "committed_metadata": md})
        body = {"transactional_id": self.transactional_id, "group_id": meta.group_id,
                "producer_id": self.idem.producer_id, "producer_epoch": self.idem.producer_epoch,
                "generation_id_or_member_epoch": meta.generation_id, "member_id": meta.member_id,
                "group_instance_id": meta.group_instance_id,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
        while True:
            resp = await self._coordinator_request(GROUP_KEY, meta.group_id, "TxnOffsetCommit", body)
            if resp is None:
                continue
            codes = {p.get("error_code", 0) for t in resp.get("topics") or [] for p in t.get("partitions") or []}
            codes.discard(ErrorCode.NONE)
            if not codes:
                return
            code = min(codes, key=lambda c: (c not in _FENCED, c not in _REDISCOVER, c))
            if code in _REDISCOVER:
                self._coordinators.pop((GROUP_KEY, meta.group_id), None)
            elif code not in _RETRY:
                raise self._classify(code, "TxnOffsetCommit", fatal_default=False)
            await asyncio.sleep(self.backoff)

    async def _end(self, commit: bool):
        if self._add_task is not None:
            try:
                await asyncio.shield(self._add_task)
            except Exception:  # noqa: BLE001 - its outcome is in the state
                pass
        if commit and self.state == TxnState.ABORTABLE_ERROR:
            raise AbortableTransactionError(f"Cannot commit: the transaction must be aborted: {self.last_error}",
                                            self.last_error.cause if self.last_error else None)
        if self.state == TxnState.FATAL_ERROR:
            raise self.last_error
        if self.partitions or self.offsets_added:
            await self._simple(TXN_KEY, self.transactional_id, "EndTxn", {
                "transactional_id": self.transactional_id, "producer_id": self.idem.producer_id,
                "producer_epoch": self.idem.producer_epoch, "committed": commit}, "EndTxn")
        self.partitions.clear()
        self.offsets_added = False
        if not commit and self.idem.need_bump:
            # a batch failed with its sequence in doubt: a new epoch restarts the sequences
            await self._init_producer_id(bump=True)
        self.last_error = None
        self.state = TxnState.READY


__all__ = ["TransactionManager", "TxnState", "TransactionError", "AbortableTransactionError",
           "FatalTransactionError", "TransactionStateError", "TransactionAbortedError",
           "ConsumerGroupMetadata"]
