"""One share-partition: the in-flight records of a (share group, topic, partition).

As Kafka's SharePartition keeps it: the start offset (every record below it is
done), the end offset (the next record never acquired), and between them the
records in flight, each AVAILABLE, ACQUIRED (by one member, until its
acquisition lock runs out), ACKNOWLEDGED or ARCHIVED, with its delivery count.
A record released (RELEASE, lock timeout, its member gone) at the delivery
limit is archived instead of becoming available again. Offsets in [start, end)
that hold no record (control batches, compacted gaps) are done from the start.

Acquisition works on whole batches: a read of the log from the first
acquirable offset gives a file slice (sent as Fetch sends it) and the batch
headers in it say which offsets it holds; the consumer keeps the records of the
acquired ranges the response names. No per-record objects are built for new
records beyond one small list per in-flight offset.
"""
from __future__ import annotations

import os
import struct

AVAILABLE, ACQUIRED, ACKNOWLEDGED, ARCHIVED = 0, 1, 2, 4
REJECTED = "Offset rejected by client."  # the __dlq.errors.message of a dead letter
EXCEEDED = "Offset delivery count exceeded the threshold."
STATE_NAMES = {AVAILABLE: "Available", ACQUIRED: "Acquired", ACKNOWLEDGED: "Acknowledged", ARCHIVED: "Archived"}
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
_DONE = (ACKNOWLEDGED, ARCHIVED)
# the v2 batch header fields acquisition needs: base offset, length, ..., attributes, last offset delta
_HDR = struct.Struct(">qi")
_ATTR_POS, _DELTA_POS, _HEADER_LEN = 21, 23, 61
_CONTROL, _TRANSACTIONAL, _PID_POS = 0x20, 0x10, 43

# in-flight entry fields (a list each: [state, delivery count, member id, lock deadline ms])
STATE, COUNT, MEMBER, DEADLINE = 0, 1, 2, 3


class AckError(Exception):
    """An acknowledgement the partition refuses (INVALID_RECORD_STATE or INVALID_REQUEST)."""

    def __init__(self, code_name: str, msg: str):
        super().__init__(msg)
        self.code_name = code_name


def slice_batches(sl):
    """(base offset, last offset, is control, end position, producer id, is transactional) of each
    whole batch in a FetchSlice."""
    pos, end = sl.position, sl.position + sl.length
    while pos + _HEADER_LEN <= end:
        hdr = os.pread(sl.fd, _HEADER_LEN, pos)
        if len(hdr) < _HEADER_LEN:
            return
        base, length = _HDR.unpack_from(hdr, 0)
        stop = pos + 12 + length
        if stop > end:
            return
        attrs = int.from_bytes(hdr[_ATTR_POS:_ATTR_POS + 2], "big")
        delta = int.from_bytes(hdr[_DELTA_POS:_DELTA_POS + 4], "big")
        pid = int.from_bytes(hdr[_PID_POS:_PID_POS + 8], "big", signed=True)
        yield base, base + delta, bool(attrs & _CONTROL), stop, pid, bool(attrs & _TRANSACTIONAL)
        pos = stop


class SharePartition:
    """The state of one share-partition (see the module docstring)."""

    def __init__(self, group_id: str, topic: str, topic_id, partition: int, start_offset: int,
                 created_ms: int = 0):
        self.group_id, self.topic, self.topic_id, self.partition = group_id, topic, topic_id, partition
        self.start = self.end = start_offset
        self.records: dict[int, list] = {}
        self.available: set[int] = set()
        self.acquired = 0
        self.next_deadline = None  # earliest lock deadline of an acquired record (ms)
        self.state_epoch = 0
        self.snapshot_epoch = 0
        self.persisted = None  # (start, state epoch, {offset: (state, count)}) last written (store.py)
        self.updates_since_snapshot = 0
        self.created_ms = created_ms
        # Kafka's coordinator writes the start offset a change began with and moves it in memory
        # after the write: describe shows that one until the next write (see described())
        self.described_start = start_offset
        self._pre_start: int | None = None
        self.dead: list = []  # (offset, delivery count, why) archived since the last write: dead letters

    # ---- queries ---------------------------------------------------------------
    @property
    def in_flight(self) -> int:
        """Offsets between start and end (Kafka's record-lock count)."""
        return self.end - self.start

    def has_available(self, bound: int) -> bool:
        """Something to acquire below `bound` (the high watermark or last stable offset)."""
        return bool(self.available) or self.end < bound

    # ---- acquisition -------------------------------------------------------------
    def acquire(self, plog, member: str, max_records: int, max_bytes: int, lock_ms: int, max_locks: int,
                bound: int, now_ms: int, strict: bool = False, min_one: bool = True, read_committed: bool = False):
        """Acquire up to max_records for `member`: (FetchSlice or None, [(first, last, delivery count)]).
        read_committed: `bound` is the last stable offset, and records of aborted transactions are
        archived as they are reached (never delivered)."""
        self.skip_to(plog.log_start_offset)
        frm = min(self.available) if self.available else self.end
        if frm >= bound or max_records <= 0:
            return None, []
        if frm >= self.end and self.in_flight >= max_locks:
            return None, []
        sl = plog.read(frm, max_bytes, upper_bound=bound, min_one_batch=min_one)
        if not sl.length:
            return None, []
        deadline = now_ms + lock_ms
        got = 0
        ranges: list[list[int]] = []
        cut = None
        pending = sorted(((a.first_offset, a.producer_id) for a in plog.aborted_transactions(frm, bound)),
                         reverse=True) if read_committed else None
        aborted: set = set()
        for base, last, control, stop, pid, txn in slice_batches(sl):
            if base > self.end:
                self.end = base  # offsets missing from the log (compaction): done
            while pending and pending[-1][0] <= last:
                aborted.add(pending.pop()[1])
            took = False
            if control:
                aborted.discard(pid)  # the ABORT marker ends that transaction
                if last >= self.end:
                    self.end = last + 1
                continue
            if txn and pid in aborted:
                for off in range(max(base, self.end), last + 1):
                    self.records[off] = [ARCHIVED, 0, None, 0]
                self.end = max(self.end, last + 1)
                continue
            for off in range(max(base, frm), last + 1):
                if off >= self.end:
                    if self.in_flight >= max_locks or (strict and got >= max_records):
                        break
                    self.records[off] = [ACQUIRED, 1, member, deadline]
                    self.end = off + 1
                    count = 1
                elif off in self.available:
                    if strict and got >= max_records:
                        break
                    rec = self.records[off]
                    self.available.discard(off)
                    rec[STATE], rec[MEMBER], rec[DEADLINE] = ACQUIRED, member, deadline
                    rec[COUNT] += 1
                    count = rec[COUNT]
                else:
                    continue
                got += 1
                took = True
                if ranges and ranges[-1][1] == off - 1 and ranges[-1][2] == count:
                    ranges[-1][1] = off
                else:
                    ranges.append([off, off, count])
            if took:
                cut = stop
            if got >= max_records or self.in_flight >= max_locks and not self.available:
                break
        if not got:
            return None, []
        self.acquired += got
        if self.next_deadline is None or deadline < self.next_deadline:
            self.next_deadline = deadline
        sl = sl._replace(length=cut - sl.position)
        return sl, [tuple(r) for r in ranges]

    # ---- releases ----------------------------------------------------------------
    def _release(self, off: int, rec: list, limit: int) -> None:
        self.acquired -= 1
        rec[MEMBER] = None
        rec[DEADLINE] = 0
        if rec[COUNT] >= limit:
            rec[STATE] = ARCHIVED
            self.dead.append((off, rec[COUNT], EXCEEDED))
        else:
            rec[STATE] = AVAILABLE
            self.available.add(off)

    def _begin(self) -> None:
        if self._pre_start is None:
            self._pre_start = self.start

    def written(self) -> None:
        """The state was persisted: describe now shows the start offset the change began with."""
        self.described_start = self.start if self._pre_start is None else self._pre_start
        self._pre_start = None

    def described(self, high_watermark: int) -> tuple[int, int]:
        """(start offset, lag) as DescribeShareGroupOffsets shows them (KIP-1226 lag: records from the
        start offset to the high watermark whose delivery is not complete)."""
        complete = self.start - self.described_start + self.delivery_complete_count()
        return self.described_start, max(0, high_watermark - self.described_start - complete)

    def expire_locks(self, now_ms: int, limit: int) -> bool:
        """Release records whose acquisition lock ran out; True when any was."""
        if not self.acquired or self.next_deadline is None or now_ms < self.next_deadline:
            return False
        self._begin()
        changed = False
        nxt = None
        for off, rec in self.records.items():
            if rec[STATE] != ACQUIRED:
                continue
            if rec[DEADLINE] <= now_ms:
                self._release(off, rec, limit)
                changed = True
            elif nxt is None or rec[DEADLINE] < nxt:
                nxt = rec[DEADLINE]
        self.next_deadline = nxt
        if changed:
            self.advance()
        return changed

    def release_member(self, member: str, limit: int) -> bool:
        """Release every record `member` holds (it left the group or closed its session)."""
        if not self.acquired:
            return False
        self._begin()
        changed = False
        for off, rec in self.records.items():
            if rec[STATE] == ACQUIRED and rec[MEMBER] == member:
                self._release(off, rec, limit)
                changed = True
        if changed:
            self.advance()
        return changed

    # ---- acknowledgements ------------------------------------------------------------
    def acknowledge(self, member: str, batches: list, limit: int, lock_ms: int, now_ms: int) -> bool:
        """Apply acknowledgement batches of `member` all or nothing; raises AckError. True when
        records became available again (waiting fetches may now get them)."""
        plan = []
        for b in batches:
            first, last, types = b["first_offset"], b["last_offset"], b["acknowledge_types"]
            if last < first or not types or (len(types) != 1 and len(types) != last - first + 1):
                raise AckError("INVALID_REQUEST", f"bad acknowledgement batch {first}-{last}")
            for i, off in enumerate(range(first, last + 1)):
                t = types[0] if len(types) == 1 else types[i]
                if t not in (GAP, ACCEPT, RELEASE, REJECT, RENEW):
                    raise AckError("INVALID_REQUEST", f"unknown acknowledge type {t}")
                rec = self.records.get(off)
                if rec is None:
                    if t == GAP and self.start <= off < self.end or off < self.start and t == GAP:
                        continue
                    raise AckError("INVALID_RECORD_STATE", f"offset {off} is not acquired")
                if rec[STATE] != ACQUIRED or rec[MEMBER] != member:
                    raise AckError("INVALID_RECORD_STATE",
                                   f"offset {off} is {STATE_NAMES[rec[STATE]].lower()}, not acquired by this member")
                plan.append((off, rec, t))
        released = False
        self._begin()
        for off, rec, t in plan:
            if t == RENEW:
                rec[DEADLINE] = now_ms + lock_ms
                continue
            if t == RELEASE:
                self._release(off, rec, limit)
                released = released or rec[STATE] == AVAILABLE
                continue
            self.acquired -= 1
            rec[MEMBER] = None
            rec[STATE] = ARCHIVED if t == REJECT else ACKNOWLEDGED
            if t == REJECT:
                self.dead.append((off, rec[COUNT], REJECTED))
        self.advance()
        return released

    # ---- start offset ------------------------------------------------------------------
    def advance(self) -> None:
        """Move the start offset past records that are done."""
        recs = self.records
        s = self.start
        while s < self.end:
            rec = recs.get(s)
            if rec is not None:
                if rec[STATE] not in _DONE:
                    break
                del recs[s]
            s += 1
        self.start = s

    def skip_to(self, log_start: int) -> None:
        """Records deleted from the log (retention, DeleteRecords) are done."""
        if log_start > self.start:
            for off in [o for o in self.records if o < log_start]:
                rec = self.records.pop(off)
                if rec[STATE] == ACQUIRED:
                    self.acquired -= 1
                self.available.discard(off)
            self.start = log_start
            self.end = max(self.end, log_start)
            self.advance()

    def reset(self, start_offset: int) -> None:
        """A new start offset (AlterShareGroupOffsets on an empty group): nothing in flight."""
        self.records.clear()
        self.available.clear()
        self.acquired = 0
        self.next_deadline = None
        self.start = self.end = self.described_start = start_offset
        self._pre_start = None
        self.state_epoch += 1

    # ---- persistence -----------------------------------------------------------------------
    def state_batches(self) -> list[dict]:
        """The in-flight records as Kafka's state batches (acquired records stored as available)."""
        return coalesce({off: (AVAILABLE if r[STATE] == ACQUIRED else r[STATE], r[COUNT])
                         for off, r in self.records.items()})

    def delivery_complete_count(self) -> int:
        """Offsets at or above the start offset whose delivery is complete (KIP-1226)."""
        return sum(1 for r in self.records.values() if r[STATE] in _DONE)

    def load_batches(self, start: int, batches: list, limit: int, replace: bool) -> None:
        """Apply a snapshot (replace=True) or an update read back from `__share_group_state`."""
        if replace:
            self.records.clear()
            self.available.clear()
            self.acquired = 0
        if start >= 0:
            self.start = start
            for off in [o for o in self.records if o < start]:
                del self.records[off]
                self.available.discard(off)
        for b in batches:
            st, count = b["delivery_state"], b["delivery_count"]
            if st == AVAILABLE and count >= limit:
                st = ARCHIVED  # acquired at the limit when the broker stopped: as if released
            for off in range(max(b["first_offset"], self.start), b["last_offset"] + 1):
                self.records[off] = [st, count, None, 0]
                if st == AVAILABLE:
                    self.available.add(off)
                else:
                    self.available.discard(off)
        self.end = max([self.start] + [o + 1 for o in self.records])
        self.advance()
        self.described_start = self.start


def coalesce(state: dict) -> list:
    """State batches of {offset: (state, count)}, adjacent equal offsets in one batch."""
    out: list = []
    for off in sorted(state):
        st, count = state[off]
        if out and out[-1]["last_offset"] == off - 1 and out[-1]["delivery_state"] == st \
                and out[-1]["delivery_count"] == count:
            out[-1]["last_offset"] = off
        else:
            out.append({"first_offset": off, "last_offset": off, "delivery_state": st, "delivery_count": count})
    return out
