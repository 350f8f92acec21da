"""The idempotent producer's state: producer id, epoch and per-partition sequences.

Follows KIP-98 and KIP-360 the way the Java client's TransactionManager does for
a producer without transactions: one InitProducerId, a sequence per partition
assigned when a batch is first drained and advanced by its record count, retried
batches re-sent in sequence order (the partition is muted while earlier batches
are still in flight), and an epoch bump after OUT_OF_ORDER_SEQUENCE_NUMBER or
UNKNOWN_PRODUCER_ID on the first unacknowledged batch. Everything here runs on
the producer's event loop thread except `reset_sequences`, which takes the
accumulator lock.
"""
from __future__ import annotations

import logging

from pylog.core.errors import ErrorCode, error_for_code, error_name, is_retriable

log = logging.getLogger(__name__)

# InitProducerId answers that mean "try again later" although Kafka does not mark them retriable
_INIT_RETRY = {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE,
               ErrorCode.NOT_COORDINATOR, ErrorCode.CONCURRENT_TRANSACTIONS}
# answers to a KIP-360 bump request from a broker that cannot bump: take a fresh id instead
_BUMP_REFUSED = {ErrorCode.UNKNOWN_PRODUCER_ID, ErrorCode.INVALID_PRODUCER_EPOCH,
                 ErrorCode.INVALID_PRODUCER_ID_MAPPING, ErrorCode.UNSUPPORTED_VERSION,
                 ErrorCode.INVALID_REQUEST}
# the last epoch of a producer id (Short.MAX_VALUE - 1, as Kafka): past it, a new id
_LAST_EPOCH = 32766
# produce answers that mean the broker's sequence state and ours differ
SEQUENCE_ERRORS = {ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER, ErrorCode.UNKNOWN_PRODUCER_ID}


class PartitionState:
    """Sequence bookkeeping of one partition."""

    __slots__ = ("next_seq", "inflight", "resync", "last_acked")

    def __init__(self):
        self.next_seq = 0
        self.inflight = []  # sequenced batches in flight, sequence order
        self.resync = False
        self.last_acked = -1  # sequence of the last acknowledged record


class Idempotence:
    """Producer id, epoch and sequences of one producer (idempotent or not: a producer
    without idempotence keeps `enabled` False and never assigns a sequence)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.producer_id = -1
        self.producer_epoch = -1
        self.need_bump = False
        self.bump_unsupported = False
        self.partitions: dict[tuple, PartitionState] = {}
        self.muted: set = set()  # partitions held back until earlier batches are answered

    def blocked(self) -> bool:
        """No batch may be drained: the producer has no id yet or must bump its epoch."""
        return self.enabled and (self.producer_id < 0 or self.need_bump)

    async def init_producer_id(self, client, acc) -> bool:
        """One InitProducerId attempt (KIP-360 epoch bump when we already have an id).
        False when it should be retried later; raises the fatal error otherwise."""
        if self.producer_id >= 0 and 0 <= self.producer_epoch < _LAST_EPOCH:
            # KIP-360 as Java's idempotent producer does it: the epoch is bumped locally, since
            # Kafka answers InitProducerId without a transactional id with a new id every time
            self.producer_epoch += 1
            self.reset_sequences(acc)
            return True
        body = {"transactional_id": None, "transaction_timeout_ms": -1}
        bump = self.producer_id >= 0 and not self.bump_unsupported
        try:
            conn = await client.any_connection()
            if bump and conn.version("InitProducerId") >= 3:
                body["producer_id"] = self.producer_id
                body["producer_epoch"] = self.producer_epoch
            resp = await conn.request("InitProducerId", body)
        except Exception as e:
            log.debug("InitProducerId failed: %s", e)
            return False
        code = resp.get("error_code", 0)
        if code:
            if is_retriable(code) or code in _INIT_RETRY:
                return False
            if bump and code in _BUMP_REFUSED:
                self.bump_unsupported = True  # cannot bump: take a fresh id next time
                return False
            raise error_for_code(code, f"InitProducerId failed: {error_name(code)}")
        self.producer_id = resp["producer_id"]
        self.producer_epoch = resp["producer_epoch"]
        self.bump_unsupported = False
        self.reset_sequences(acc)
        return True

    def reset_sequences(self, acc):
        """After a new id or epoch, every partition starts again at sequence 0; queued batches
        that already had sequences are renumbered in order."""
        with acc.lock:
            for tp, ps in self.partitions.items():
                seq = 0
                for b in acc.deques.get(tp) or ():
                    if b.base_sequence >= 0:
                        b.set_producer(self.producer_id, self.producer_epoch, seq)
                        seq += b.count
                ps.next_seq = seq
                ps.last_acked = -1
                ps.inflight.clear()
                ps.resync = False
        self.muted.clear()
        self.need_bump = False

    def assign_seq(self, b) -> bool:
        """Called by the accumulator as it drains `b`: give it its sequence range."""
        tp = (b.topic, b.partition)
        ps = self.partitions.get(tp)
        if ps is None:
            ps = self.partitions[tp] = PartitionState()
        if b.base_sequence < 0:
            b.set_producer(self.producer_id, self.producer_epoch, ps.next_seq)
            ps.next_seq = (ps.next_seq + b.count) & 0x7FFFFFFF
        ps.inflight.append(b)
        ps.inflight.sort(key=lambda x: x.base_sequence)
        return True

    def state(self, b) -> PartitionState | None:
        return self.partitions.get((b.topic, b.partition))

    def is_head(self, b) -> bool:
        """`b` is the first batch the broker has not acknowledged on its partition."""
        ps = self.state(b)
        return ps is None or b.base_sequence == ps.last_acked + 1

    def _leave_flight(self, tp, b) -> PartitionState | None:
        ps = self.partitions.get(tp)
        if ps is not None:
            try:
                ps.inflight.remove(b)
            except ValueError:
                pass
        return ps

    def done_inflight(self, b, acked=False):
        """`b` left flight for good (acknowledged or failed)."""
        if b.base_sequence < 0:
            return
        tp = (b.topic, b.partition)
        ps = self._leave_flight(tp, b)
        if ps is None:
            return
        if acked and b.producer_epoch == self.producer_epoch and b.producer_id == self.producer_id:
            last = b.base_sequence + b.count - 1
            if last > ps.last_acked:
                ps.last_acked = last
        if ps.resync and not ps.inflight:
            ps.resync = False
            self.muted.discard(tp)

    def resend_later(self, b):
        """`b` leaves the in-flight list to be sent again. While batches sent before it are
        still in flight the partition is muted, so the resend waits for their answers and
        goes out in sequence order; with none left, nothing holds it back."""
        tp = (b.topic, b.partition)
        ps = self._leave_flight(tp, b)
        if ps is None:
            return
        if ps.inflight:
            ps.resync = True
            self.muted.add(tp)
        else:
            ps.resync = False
            self.muted.discard(tp)
