"""The transaction coordinator: Kafka's transactions (KIP-98) on one node.

Every transactional id lives on partition `abs(javaHashCode(id)) %
transaction.state.log.num.partitions` of `__transaction_state`; each state
change is one TransactionLogValue record there (txn/state.py), written before
the client is answered, and replayed at start-up (the latest record per id
wins, a tombstone removes it).

Ending a transaction: the PrepareCommit/PrepareAbort record, then a COMMIT or
ABORT marker on every partition of the transaction (a `__consumer_offsets`
partition's marker also applies or drops the group's pending offsets), then
the CompleteCommit/CompleteAbort record. All three happen on the event loop
in one step; a kill -9 between them leaves a Prepare state in the log, which
`load()` completes (markers written again are harmless: the partition has no
open transaction of that producer any more).

Clients at transaction.version 1 add partitions with AddPartitionsToTxn, and
a transactional produce to a partition not added is refused (KIP-890 part 1);
at level 2 (KIP-890 part 2, txn/epoch_bump.py) partitions join implicitly and
the epoch moves at every EndTxn. A ticker aborts transactions
past their timeout (bumping the epoch, which fences the old producer) and
removes transactional ids idle past `transactional.id.expiration.ms`.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable

from pylog.broker.common.partition_logs import PartitionLogs
from pylog.broker.groups import offsets_topic as ot
from pylog.broker.groups.coordinator import GroupCoordinator
from pylog.broker.groups.store import iter_keyed_records
from pylog.broker.common.scheduler import Ticker
from pylog.broker.node.producer_ids import ProducerIdManager
from pylog.broker.txn.state import MAX_EPOCH, NO_EPOCH, NO_PRODUCER_ID, TOPIC, TxnMetadata
from pylog.core.errors import ErrorCode
from pylog.core.protocol import txn_log as tl
from pylog.core.protocol.txn_log import TxnState
from pylog.core.records import BatchBuilder
from pylog.core.records.control import ABORT, COMMIT, build_end_txn_batch

log = logging.getLogger("pylog.broker.txn")

COORDINATOR_EPOCH = 0  # one node: the __transaction_state leader epoch never changes


def _exhausted(epoch: int) -> bool:
    """Kafka never hands out Short.MAX_VALUE: it stays free to fence the last producer."""
    return epoch >= MAX_EPOCH - 1


def now_ms() -> int:
    """Wall-clock milliseconds (the records' timestamps)."""
    return int(time.time() * 1000)


class TransactionCoordinator:
    """Every transactional id of this broker. Lifecycle (driven by Broker): load() replays
    `__transaction_state` and completes prepared transactions, start(loop) starts the
    timeout/expiration ticker, stop() cancels it."""

    def __init__(self, partitions: PartitionLogs, producer_ids: ProducerIdManager, groups: GroupCoordinator,
                 transaction_version: Callable[[], int]):
        self.partitions = partitions
        self.producer_ids = producer_ids
        self.group_coordinator = groups  # its `__consumer_offsets` partitions and transactional offsets
        self._transaction_version = transaction_version  # the finalized transaction.version
        cfg = partitions.config
        self.txns: dict[str, TxnMetadata] = {}
        self.by_producer: dict[int, TxnMetadata] = {}  # current producer id -> its transactional id's state
        self.num_partitions = cfg["transaction.state.log.num.partitions"]
        self.max_timeout_ms = cfg["transaction.max.timeout.ms"]
        self.expiration_ms = cfg["transactional.id.expiration.ms"]
        self.abort_check_s = cfg["transaction.abort.timed.out.transaction.cleanup.interval.ms"] / 1000.0
        self.expire_check_s = cfg["transaction.remove.expired.transaction.cleanup.interval.ms"] / 1000.0
        self.loop: asyncio.AbstractEventLoop | None = None
        self._timers: list[Ticker] = []

    # ================================================================ lifecycle
    def load(self) -> None:
        """Replay `__transaction_state`; finish transactions a crash left in PrepareCommit/PrepareAbort."""
        logs = self.partitions.logs
        info = logs.topics.get(TOPIC)
        if info is None:
            return
        self.num_partitions = info.num_partitions
        count = 0
        for r in iter_keyed_records(logs, TOPIC, info.num_partitions):
            count += 1
            try:
                tid = tl.decode_key(bytes(r.key))
                decoded = tl.decode_value(None if r.value is None else bytes(r.value))
            except tl.MalformedDataError as e:
                log.warning("skipping unreadable %s record at %d: %s", TOPIC, r.offset, e)
                continue
            if decoded is None:
                self.txns.pop(tid, None)
            else:
                self.txns[tid] = TxnMetadata.from_value(tid, decoded[1])
        self.by_producer = {m.producer_id: m for m in self.txns.values()}
        log.info("loaded %d transactional ids from %d %s records", len(self.txns), count, TOPIC)
        for m in list(self.txns.values()):
            if m.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
                log.info("completing %s of %s after restart", m.state.kafka_name, m.transactional_id)
                self.complete(m, m.state == TxnState.PREPARE_COMMIT)
            elif m.state == TxnState.PREPARE_EPOCH_FENCE:
                self._abort(m, fence=False)

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the timers: abort timed-out transactions, remove expired transactional ids."""
        self.loop = loop
        self._timers = [
            Ticker(loop, self.abort_check_s, lambda: self.abort_timed_out(now_ms()), "aborting timed-out transactions",
                   log),
            Ticker(loop, self.expire_check_s, lambda: self.expire_ids(now_ms()), "expiring transactional ids", log)]

    def stop(self) -> None:
        """Cancel the timers."""
        for t in self._timers:
            t.cancel()

    # ================================================================ persistence
    def partition_for(self, transactional_id: str) -> int:
        """The `__transaction_state` partition of a transactional id."""
        return ot.partition_for(transactional_id, self.num_partitions)

    def ensure_topic(self) -> None:
        """Create `__transaction_state` (compacted) on first use, as Kafka does (raises KafkaError)."""
        logs = self.partitions.logs
        if TOPIC in logs.topics:
            return
        cfg = self.partitions.config
        logs.create_topic(TOPIC, self.num_partitions, {
            "cleanup.policy": "compact",
            "segment.bytes": str(cfg["transaction.state.log.segment.bytes"]),
            "compression.type": "uncompressed",
            "min.insync.replicas": "1",
        })
        log.info("created %s with %d partitions", TOPIC, self.num_partitions)

    def _write(self, m: TxnMetadata, tombstone: bool = False) -> int:
        """Append the state record of `m` (or its tombstone); a Kafka error code."""
        try:
            self.ensure_topic()
            p = self.partition_for(m.transactional_id)
            plog = self.partitions.logs.get_log(TOPIC, p)
            if plog is None:
                return ErrorCode.COORDINATOR_NOT_AVAILABLE
            b = BatchBuilder()
            b.append(now_ms(), m.key(), None if tombstone else m.to_value())
            plog.append_as_leader(bytearray(b.build()), self.partitions.leader_epoch(plog))
            return ErrorCode.NONE
        except Exception as e:  # noqa: BLE001 - storage failure: the client retries
            log.error("cannot write to %s: %s", TOPIC, e)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE

    def set_state(self, m: TxnMetadata, **changes) -> int:
        """Write `m` with `changes` applied; the in-memory state changes only when the write succeeded."""
        old = {k: getattr(m, k) for k in changes}
        for k, v in changes.items():
            setattr(m, k, v)
        m.update_ms = now_ms()
        code = self._write(m)
        if code != ErrorCode.NONE:
            for k, v in old.items():
                setattr(m, k, v)
        return code

    # ================================================================ requests
    def init_producer_id(self, tid: str, timeout_ms: int, pid: int, epoch: int) -> tuple[int, int, int]:
        """InitProducerId with a transactional id: (error code, producer id, epoch). A new id
        starts at epoch 0; a known one gets its epoch bumped (fencing the older producer; an open
        transaction is aborted first); KIP-360: a producer naming its current id and epoch may
        recover, one naming an older one is fenced."""
        if not tid:
            return ErrorCode.INVALID_REQUEST, -1, -1
        if timeout_ms <= 0 or timeout_ms > self.max_timeout_ms:
            return ErrorCode.INVALID_TRANSACTION_TIMEOUT, -1, -1
        try:
            self.ensure_topic()
        except Exception:  # noqa: BLE001
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, -1, -1
        m = self.txns.get(tid)
        if m is None:
            m = TxnMetadata(tid, self.producer_ids.next_id(), NO_EPOCH, timeout_ms)
            m.update_ms = now_ms()
            code = self._bump(m, timeout_ms, new=True)
            if code == ErrorCode.NONE:
                self.txns[tid] = m
                self.by_producer[m.producer_id] = m
            return code, m.producer_id, m.producer_epoch
        expected = (pid, epoch) if pid >= 0 else None
        if expected is not None and not (
                m.producer_epoch == NO_EPOCH or pid == m.producer_id
                or (pid == m.previous_producer_id and _exhausted(epoch))):
            return ErrorCode.PRODUCER_FENCED, -1, -1
        if m.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            # Kafka answers CONCURRENT_TRANSACTIONS while markers are pending; the client retries
            code = self.complete(m, m.state == TxnState.PREPARE_COMMIT)
            return (code if code != ErrorCode.NONE else ErrorCode.CONCURRENT_TRANSACTIONS), -1, -1
        if m.state in (TxnState.ONGOING, TxnState.PREPARE_EPOCH_FENCE):
            # As Kafka: fence (epoch + 1) and abort the older producer's transaction, then answer
            # CONCURRENT_TRANSACTIONS; the client's retry bumps the epoch a second time.
            code = self._abort(m, fence=True)
            return (code if code != ErrorCode.NONE else ErrorCode.CONCURRENT_TRANSACTIONS), -1, -1
        if _exhausted(m.producer_epoch) and (expected is None or epoch == m.producer_epoch):
            code = self._rotate(m, timeout_ms, record_last=expected is not None)
        else:
            code = self._bump(m, timeout_ms, None if expected is None else epoch)
        if code != ErrorCode.NONE:
            return code, -1, -1
        return code, m.producer_id, m.producer_epoch

    def _bump(self, m: TxnMetadata, timeout_ms: int, expected_epoch: int | None = None, new: bool = False) -> int:
        """Kafka's prepareIncrementProducerEpoch: epoch + 1, state Empty. A fresh init (no
        expected epoch) forgets the last epoch, so a fenced producer's KIP-360 re-init with its
        old epoch is PRODUCER_FENCED; a producer naming the current epoch bumps it and keeps the
        old one as the last; one naming the last epoch is a retry answered the current one."""
        if expected_epoch is None or new:
            epoch, last = m.producer_epoch + 1, NO_EPOCH
        elif m.producer_epoch == NO_EPOCH or expected_epoch == m.producer_epoch:
            epoch, last = m.producer_epoch + 1, m.producer_epoch
        elif expected_epoch == m.last_producer_epoch:
            epoch, last = m.producer_epoch, m.last_producer_epoch
        else:
            return ErrorCode.PRODUCER_FENCED
        # __transaction_state carries a previous producer id only across a producer id rotation
        code = self.set_state(m, producer_epoch=epoch, previous_producer_id=NO_PRODUCER_ID, timeout_ms=timeout_ms,
                         state=TxnState.EMPTY, partitions=set(), start_ms=-1)
        if code == ErrorCode.NONE:
            m.last_producer_epoch = last
        return code

    def _rotate(self, m: TxnMetadata, timeout_ms: int, record_last: bool) -> int:
        """The epoch is exhausted: a new producer id at epoch 0 (Kafka's prepareProducerIdRotation)."""
        old_pid, old_epoch = m.producer_id, m.producer_epoch
        pid = self.producer_ids.next_id()
        code = self.set_state(m, producer_id=pid, producer_epoch=0, previous_producer_id=old_pid, timeout_ms=timeout_ms,
                         state=TxnState.EMPTY, partitions=set(), start_ms=-1)
        if code == ErrorCode.NONE:
            m.last_producer_epoch = old_epoch if record_last else NO_EPOCH
            self.by_producer.pop(old_pid, None)
            self.by_producer[pid] = m
        return code

    def _current(self, tid: str, pid: int, epoch: int) -> tuple[int, TxnMetadata | None]:
        """The transactional id's state if the producer id and epoch are current, else the error."""
        m = self.txns.get(tid)
        if m is None or m.producer_id != pid:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None
        if m.producer_epoch != epoch:
            return ErrorCode.PRODUCER_FENCED, None
        return ErrorCode.NONE, m

    def add_partitions(self, tid: str, pid: int, epoch: int, partitions: list) -> int:
        """AddPartitionsToTxn: put (topic, partition)s in the producer's transaction, opening it."""
        code, m = self._current(tid, pid, epoch)
        if code != ErrorCode.NONE:
            return code
        if m.state in (TxnState.PREPARE_COMMIT, TxnState.PREPARE_ABORT):
            return ErrorCode.CONCURRENT_TRANSACTIONS
        if m.state == TxnState.PREPARE_EPOCH_FENCE:
            return ErrorCode.PRODUCER_FENCED
        new = set(partitions) - m.partitions
        if m.state == TxnState.ONGOING and not new:
            return ErrorCode.NONE
        start = m.start_ms if m.state == TxnState.ONGOING else now_ms()
        return self.set_state(m, state=TxnState.ONGOING, partitions=m.partitions | new, start_ms=start)

    def verify_partition(self, tid: str, pid: int, epoch: int, topic: str, partition: int) -> int:
        """KIP-890 part 1, for a transactional produce: the producer is current and the partition
        is in its open transaction (INVALID_TXN_STATE when it was never added)."""
        m = self.txns.get(tid)
        if m is None or m.producer_id != pid:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING
        if m.producer_epoch != epoch:
            return ErrorCode.INVALID_PRODUCER_EPOCH
        if m.state != TxnState.ONGOING or (topic, partition) not in m.partitions:
            return ErrorCode.INVALID_TXN_STATE
        return ErrorCode.NONE

    def offsets_partition(self, group_id: str) -> int:
        """The `__consumer_offsets` partition of a group (AddOffsetsToTxn adds it to the transaction)."""
        return self.group_coordinator.offsets_partition(group_id)

    def check_offsets_commit(self, tid: str, pid: int, epoch: int, group_id: str) -> int:
        """TxnOffsetCommit: the producer is current and the group's partition is in its transaction."""
        code, m = self._current(tid, pid, epoch)
        if code != ErrorCode.NONE:
            return code
        if m.state != TxnState.ONGOING or (ot.TOPIC, self.offsets_partition(group_id)) not in m.partitions:
            return ErrorCode.INVALID_TXN_STATE
        return ErrorCode.NONE

    def end_txn(self, tid: str, pid: int, epoch: int, commit: bool, client_version: int = 0) -> int:
        """EndTxn: commit or abort the open transaction (markers on every partition); the state
        records the client's transaction version (0 for an EndTxn below v5, as Kafka 4.4)."""
        code, m = self._current(tid, pid, epoch)
        if code != ErrorCode.NONE:
            return code
        s = m.state
        if s == TxnState.ONGOING:
            if not commit:
                return self._abort(m, fence=False, client_version=client_version)
            code = self.set_state(m, state=TxnState.PREPARE_COMMIT, client_txn_version=client_version)
            return code if code != ErrorCode.NONE else self.complete(m, True)
        # a retried EndTxn whose first attempt completed answers the same
        if s == TxnState.COMPLETE_COMMIT and commit or s == TxnState.COMPLETE_ABORT and not commit:
            return ErrorCode.NONE
        if s == TxnState.PREPARE_COMMIT and commit or s == TxnState.PREPARE_ABORT and not commit:
            return self.complete(m, commit)
        # transaction.version 1: nothing was added (Empty), or the other outcome of a completed
        # transaction, is not a transaction to end (Kafka's INVALID_TXN_STATE)
        return ErrorCode.INVALID_TXN_STATE

    # ================================================================ completion
    def _abort(self, m: TxnMetadata, fence: bool, client_version: int | None = None) -> int:
        """Abort the open transaction; fence=True bumps the epoch first (timeouts, a new producer),
        so the producer that opened it can no longer write."""
        if fence and m.producer_epoch + 1 < MAX_EPOCH:
            last = m.producer_epoch
            code = self.set_state(m, producer_epoch=m.producer_epoch + 1, state=TxnState.PREPARE_ABORT)
            # as Kafka: at transaction.version 2 the fenced epoch is the last one, so the producer
            # that held it recovers with KIP-360 (its retry gets the fenced epoch; a fresh init
            # forgets it, _bump); at level 1 the fence keeps no last epoch and it stays fenced
            if code == ErrorCode.NONE:
                m.last_producer_epoch = last if self._transaction_version() >= 2 else NO_EPOCH
        elif client_version is not None:  # the client's EndTxn
            code = self.set_state(m, state=TxnState.PREPARE_ABORT, client_txn_version=client_version)
        else:
            code = self.set_state(m, state=TxnState.PREPARE_ABORT)
        return code if code != ErrorCode.NONE else self.complete(m, False)

    def complete(self, m: TxnMetadata, commit: bool) -> int:
        """Markers on every partition of the transaction, then the Complete state."""
        marker = COMMIT if commit else ABORT
        logs = self.partitions.logs
        groups = self.group_coordinator
        now = now_ms()
        for topic, p in sorted(m.partitions):
            plog = logs.get_log(topic, p)
            if plog is None:
                continue  # the topic was deleted: nothing to mark
            batch = build_end_txn_batch(marker, m.producer_id, m.producer_epoch, COORDINATOR_EPOCH, timestamp=now)
            try:
                plog.append_internal(bytearray(batch), self.partitions.leader_epoch(plog), now_ms=now)
            except Exception as e:  # noqa: BLE001 - the state stays Prepare*: completed on the next try
                log.error("cannot write the %s marker to %s-%d: %s", "COMMIT" if commit else "ABORT", topic, p, e)
                return ErrorCode.COORDINATOR_NOT_AVAILABLE
            if topic == ot.TOPIC and groups is not None:
                groups.complete_txn(m.producer_id, p, commit)
            self.partitions.wake(topic, p)
        return self.set_state(m, state=TxnState.COMPLETE_COMMIT if commit else TxnState.COMPLETE_ABORT,
                         partitions=set())

    def abort_timed_out(self, now: int) -> list[str]:
        """Abort (and fence) every transaction open longer than its timeout; their ids."""
        done = []
        for m in list(self.txns.values()):
            if m.state == TxnState.ONGOING and m.start_ms >= 0 and now > m.start_ms + m.timeout_ms:
                log.info("aborting transaction of %s (producer %d): open for more than %d ms",
                         m.transactional_id, m.producer_id, m.timeout_ms)
                if self._abort(m, fence=True) == ErrorCode.NONE:
                    done.append(m.transactional_id)
        return done

    def expire_ids(self, now: int) -> list[str]:
        """Remove transactional ids with no transaction for transactional.id.expiration.ms."""
        gone = []
        for m in list(self.txns.values()):
            if not m.is_open and now - m.update_ms > self.expiration_ms:
                if self._write(m, tombstone=True) == ErrorCode.NONE:
                    del self.txns[m.transactional_id]
                    self.by_producer.pop(m.producer_id, None)
                    gone.append(m.transactional_id)
        return gone

    # ================================================================ admin
    def describe(self, tid: str) -> TxnMetadata | None:
        """The state of a transactional id, or None."""
        return self.txns.get(tid)

    def list(self) -> list[TxnMetadata]:
        """Every transactional id's state."""
        return list(self.txns.values())
