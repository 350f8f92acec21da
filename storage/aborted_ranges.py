"""Aborted transactions seen by the cleaner (Kafka's CleanedTransactionMetadata, in part).

The cleaner removes the records of aborted transactions: it skips their batches
when it builds the offset map (an aborted value must not shadow an older
committed one) and drops them when it rewrites segments, keeping an empty
batch only where a live producer's sequence needs it, as for any batch. The
ranges come from the `.txnindex` files (written on abort), and the entries of
a cleaned segment group whose ABORT marker still guards data are copied into the
cleaned segment's `.txnindex` so READ_COMMITTED fetches of what remains still see
them (MarkerTracker; markers go as Kafka's do, compaction_rules.filter_marker).
"""
from __future__ import annotations

from bisect import bisect_right

from pylog.core.records.header import CONTROL_MASK, TRANSACTIONAL_MASK

__all__ = ["AbortedRanges"]


class AbortedRanges:
    """Aborted transactions of a log between two offsets, looked up per batch header."""

    def __init__(self, entries):
        self.entries = sorted(entries, key=lambda t: t.first_offset)
        by_pid: dict[int, list] = {}
        for t in self.entries:
            by_pid.setdefault(t.producer_id, []).append((t.first_offset, t.last_offset))
        self._firsts = {pid: [f for f, _ in rs] for pid, rs in by_pid.items()}
        self._ranges = by_pid

    @classmethod
    def of_log(cls, lg, start: int, end: int) -> "AbortedRanges":
        """The aborted transactions overlapping [start, end) of `lg`."""
        return cls(lg.aborted_transactions(start, end))

    def __bool__(self) -> bool:
        return bool(self.entries)

    def is_aborted(self, h) -> bool:
        """A transactional data batch inside an aborted transaction of its producer (the range
        ends at the ABORT marker, which is not data)."""
        if h.attributes & (TRANSACTIONAL_MASK | CONTROL_MASK) != TRANSACTIONAL_MASK:
            return False
        firsts = self._firsts.get(h.producer_id)
        if not firsts:
            return False
        i = bisect_right(firsts, h.base_offset) - 1
        return i >= 0 and h.base_offset <= self._ranges[h.producer_id][i][1]


class MarkerTracker:
    """Kafka's CleanedTransactionMetadata for one cleaned segment group, fed its batches in
    offset order: which transactional data batches are aborted (dropped) and which COMMIT/ABORT
    markers no longer guard any data below them (then removable once their delete horizon has
    passed, as tombstones are). An ABORT marker kept because its transaction's data was still
    seen puts the transaction in `kept_aborts`, for the cleaned segment's `.txnindex`."""

    def __init__(self, entries):
        self._queue = sorted(entries, key=lambda t: t.first_offset)
        self._next = 0
        self._aborted: dict[int, list] = {}  # producer id -> [entry, data seen]
        self._committed: set[int] = set()
        self.kept_aborts: list = []

    def _consume(self, offset: int) -> None:
        q = self._queue
        while self._next < len(q) and q[self._next].first_offset <= offset:
            t = q[self._next]
            self._next += 1
            self._aborted.setdefault(t.producer_id, [t, False])

    def on_data(self, h) -> bool:
        """True when this data batch belongs to an aborted transaction (it goes)."""
        self._consume(h.last_offset)
        if not h.attributes & TRANSACTIONAL_MASK:
            return False
        open_abort = self._aborted.get(h.producer_id)
        if open_abort is not None:
            open_abort[1] = True
            return True
        self._committed.add(h.producer_id)
        return False

    def on_marker(self, h, marker_type: int | None) -> bool:
        """True when this control batch (`marker_type` ABORT/COMMIT, None for an empty batch)
        guards no data left below it."""
        from pylog.core.records.control import ABORT, COMMIT

        self._consume(h.last_offset)
        if marker_type is None:
            return True  # already emptied by an earlier cleaning
        if marker_type == ABORT:
            open_abort = self._aborted.pop(h.producer_id, None)
            if open_abort is not None and open_abort[1]:
                self.kept_aborts.append(open_abort[0])
                return False
            return True
        if marker_type == COMMIT:
            if h.producer_id in self._committed:
                self._committed.discard(h.producer_id)
                return False
            return True
        return False
