"""Aborted transactions seen by the cleaner (Kafka's CleanedTransactionMetadata, in part).

The cleaner removes the records of aborted transactions: it skips their batches
when it builds the offset map (an aborted value must not shadow an older
committed one) and drops them when it rewrites segments, keeping an empty
batch only where a live producer's sequence needs it, as for any batch. The
ranges come from the `.txnindex` files (written on abort), and the entries of
a cleaned segment group are copied into the cleaned segment's `.txnindex` so
READ_COMMITTED fetches of what remains still see them. Transaction markers are
kept (compaction_rules keeps control batches).
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

    def within(self, start: int, end: int) -> list:
        """Entries whose transaction began in [start, end) (for a cleaned segment's .txnindex)."""
        return [t for t in self.entries if start <= t.first_offset < end]
