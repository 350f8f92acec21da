"""One acquisition pass over a share-partition, as Kafka 4.4's SharePartition.acquire does it.

The pass walks the log batches a read from the first acquirable offset returned, and acquires:
- records available again (released, lock run out), batch by acquired batch: a batch whose
  available records have been delivered `max(2, ceil(limit / 2))` times or more is throttled:
  it is acquired only as the first thing of the pass, and then only part of it, half of the
  batch at that count, a quarter at the next, and so on (at least one record); a record on its
  last attempt (delivery count limit - 1) goes out alone. One poison record then does not take
  its batch-mates to the delivery limit with it;
- new records (past the end offset), cut into acquired batches at log batch boundaries once
  `batch_size` records are in one, each batch its own acquired range in the answer.
Records of aborted transactions (archived, never delivered) count towards `max_records`.
`max_records` is a soft limit (whole batches), exact in record-limit mode (`strict`).
"""
from __future__ import annotations

import math

from pylog.broker.groups.share.states import ACQUIRED, ARCHIVED, AVAILABLE, COUNT, DEADLINE, MEMBER, STATE


class Acquisition:
    """The state of one pass: what was acquired (`got`, `ranges`) and where it stopped."""

    def __init__(self, sp, member: str, deadline: int, max_records: int, strict: bool, batch_size: int,
                 limit: int, hold, frm: int, bound: int):
        self.sp, self.member, self.deadline = sp, member, deadline
        self.max_records, self.strict, self.batch_size = max_records, strict, max(1, batch_size)
        self.limit, self.hold, self.frm, self.bound = limit, hold, frm, bound
        self.threshold = max(2, math.ceil(limit / 2)) if limit else None
        self.got = 0
        self.skipped = 0  # records of aborted transactions archived on the way
        self.ranges: list[list] = []  # [first, last, delivery count, acquired batch]
        self.stopped = False
        self.cur = None  # the acquired batch of the last available record looked at
        self.throttled = False
        self.cap = None
        self.in_batch = 0
        self.chunk = None  # first offset of the acquired batch new records go into
        self.last_new = self.batch_last = None

    # ---- the walk ----------------------------------------------------------------------
    def walk(self, batches, pending) -> int | None:
        """Acquire from the log batches; returns the end position of the last batch acquired from."""
        sp = self.sp
        cut = None
        aborted: set = set()
        for base, last, control, stop, pid, txn in batches:
            if base >= self.bound:
                break
            if self.chunk is not None and not self.strict and base - self.chunk >= self.batch_size:
                self._close_chunk(base - 1)
            if base > sp.end:
                sp.end = base  # offsets missing from the log (compaction): done
            while pending and pending[-1][0] <= last:
                aborted.add(pending.pop()[1])
            if control:
                aborted.discard(pid)  # the ABORT marker ends that transaction; markers are acquired too
            elif txn and pid in aborted:
                if max(base, self.frm) >= sp.end and not self.strict and self.got + self.skipped >= self.max_records:
                    break
                if self.chunk is None and last >= sp.end:
                    self.chunk = max(base, sp.end)  # the acquired batch begins with them, as in Kafka
                for off in range(max(base, sp.end), last + 1):
                    sp.records[off] = [ARCHIVED, 0, None, 0]
                    self.skipped += 1
                sp.end = max(sp.end, last + 1)
                continue
            if max(base, self.frm) >= sp.end and not self.strict and self.got + self.skipped >= self.max_records:
                break
            if self._batch(base, min(last, self.bound - 1)):
                cut = stop
            if self.stopped:
                break
        if self.chunk is not None:
            self._close_chunk(None)
        return cut

    def _batch(self, base: int, last: int) -> bool:
        sp = self.sp
        took = False
        for off in range(max(base, self.frm), last + 1):
            if off >= sp.end:
                b = sp.batch_of(off) if sp.batches else (off, off)
                if b[1] > b[0] or off in sp.batches:
                    # the rest of a log batch a record-limit acquisition left: acquired as the
                    # available records of that batch are
                    if b != self.cur and not self._enter(b, off) or self.strict and self.got >= self.max_records:
                        self.stopped = True
                        break
                    key = b
                else:
                    if self.throttled and self.in_batch:
                        self.stopped = True  # a throttled batch is all a pass acquires
                        break
                    if self.got + self.skipped >= self.max_records and (self.strict or self.last_new is None):
                        self.stopped = True  # soft limit: whole log batches of new records, once started
                        break
                    if self.chunk is None:
                        self.chunk = off
                    key = ("new", self.chunk)
                    self.last_new, self.batch_last = off, last
                sp.records[off] = [ACQUIRED, 1, self.member, self.deadline]
                sp.end = off + 1
                self.in_batch += 1
                self._add(off, 1, key)
                took = True
                continue
            if off not in sp.available or off in self.hold:
                continue
            if not self._available(off):
                break
            took = True
            if self.stopped:
                break
        return took

    # ---- records available again -----------------------------------------------------------
    def _available(self, off: int) -> bool:
        """Acquire available record `off` unless the pass stops before it: False when it did."""
        sp = self.sp
        b = sp.batch_of(off)
        if b != self.cur and not self._enter(b, off):
            self.stopped = True
            return False
        rec = sp.records[off]
        count = rec[COUNT]
        if self.throttled and self.limit > 2 and count == self.limit - 1 and self.in_batch:
            self.stopped = True
            return False
        if self.strict and self.got >= self.max_records:
            self.stopped = True
            return False
        if self.throttled and self.cap is None and count >= self.threshold:
            self.cap = max(1, (b[1] - b[0] + 1) >> (count - self.threshold + 1))
        sp.available.discard(off)
        rec[STATE], rec[MEMBER], rec[DEADLINE] = ACQUIRED, self.member, self.deadline
        rec[COUNT] = count = count + 1
        self.in_batch += 1
        self._add(off, count, b)
        if self.throttled and (count == self.limit and self.limit > 2 or self.in_batch == self.cap):
            self.stopped = True
        return True

    def _enter(self, b: tuple, off: int) -> bool:
        """A new acquired batch: False when the pass must stop before it."""
        if self.throttled and self.in_batch:
            return False  # a throttled batch is all a pass acquires
        self.cur, self.in_batch, self.cap, self.throttled = b, 0, None, False
        if not self.strict and self.got >= self.max_records:
            return False
        if self.threshold is None:
            return True
        recs, hold = self.sp.records, self.hold
        top = max((recs[o][COUNT] for o in range(off, b[1] + 1)
                   if o in recs and recs[o][STATE] == AVAILABLE and o not in hold), default=0)
        if top >= self.threshold:
            if self.got:
                return False
            self.throttled = True
        return True

    # ---- answer ranges ----------------------------------------------------------------------
    def _add(self, off: int, count: int, key) -> None:
        self.got += 1
        r = self.ranges[-1] if self.ranges else None
        if r is not None and r[1] == off - 1 and r[2] == count and r[3] == key:
            r[1] = off
        else:
            self.ranges.append([off, off, count, key])

    def _close_chunk(self, last: int | None) -> None:
        """The acquired batch of new records ends: at the log batch boundary `last`, or (at the end of
        the pass) at the last record acquired, or in record-limit mode at the end of its log batch
        (the batch's other records acquired later stay in it, as in Kafka's in-flight batch)."""
        if self.last_new is not None and self.last_new >= self.chunk:
            if last is not None:
                end = min(last, self.last_new)
            else:
                end = self.batch_last if self.strict else self.last_new
            self.sp.add_batch(self.chunk, end)
        self.chunk = None
