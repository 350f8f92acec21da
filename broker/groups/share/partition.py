"""One share-partition: the in-flight records of a (share group, topic, partition).

As Kafka's SharePartition keeps it: the start offset (every record below it is
done), the end offset (the next record never acquired), and between them the
records in flight, each AVAILABLE, ACQUIRED (by one member, until its
acquisition lock runs out), ACKNOWLEDGED or ARCHIVED, with its delivery count.
A record released (RELEASE, lock timeout, its member gone) at the delivery
limit is archived instead of becoming available again. Transaction markers are
acquired like records (the consumer acknowledges them as gaps, as Kafka expects);
records of aborted transactions are archived under read_committed; offsets in
[start, end) that hold no record (compacted away) are done from the start.

Acquisition works on whole batches: a read of the log from the first
acquirable offset gives a file slice (sent as Fetch sends it) and the batch
headers in it say which offsets it holds; the consumer keeps the records of the
acquired ranges the response names. No per-record objects are built for new
records beyond one small list per in-flight offset.
"""
from __future__ import annotations

import bisect
import os
import struct

from pylog.broker.groups.share.acquisition import Acquisition
from pylog.broker.groups.share.states import ACKNOWLEDGED, ACQUIRED, ARCHIVED, AVAILABLE, COUNT, DEADLINE, MEMBER, STATE

REJECTED = "Offset rejected by client."  # the __dlq.errors.message of a dead letter
EXCEEDED = "Offset delivery count exceeded the threshold."
GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
_DONE = (ACKNOWLEDGED, ARCHIVED)
# the v2 batch header fields acquisition needs: base offset, length, ..., attributes, last offset delta
_HDR = struct.Struct(">qi")
_ATTR_POS, _DELTA_POS, _HEADER_LEN = 21, 23, 61
_CONTROL, _TRANSACTIONAL, _PID_POS = 0x20, 0x10, 43


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


def batches_error(batches: list, renew_allowed: bool, renew_flag: bool) -> str | None:
    """Why one partition's acknowledgement batches are INVALID_REQUEST, as Kafka checks them before
    the share-partition sees them: backwards or overlapping batches, no or miscounted types, an
    unknown type, RENEW without IsRenewAck (or at a version without RENEW). None when they are fine."""
    prev = -1
    top = RENEW if renew_allowed else REJECT
    for b in batches:
        first, last, types = b["first_offset"], b["last_offset"], b["acknowledge_types"]
        if first > last or first < prev:
            return "Acknowledgement batches are out of order or overlap"
        if not types or len(types) > 1 and len(types) != last - first + 1:
            return "Acknowledge types do not match the batch"
        for t in types:
            if t < 0 or t > top or t == RENEW and not renew_flag:
                return f"Invalid acknowledge type {t}"
        prev = last
    return None


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
        # -1 (Kafka's "no state yet") until the first acknowledgement, release or lock timeout is written
        self.described_start = -1
        self.described_complete = self._complete_at = 0
        self._pre_start: int | None = None
        self.dead: list = []  # (offset, delivery count, why) archived since the last write: dead letters
        # the acquired batches in flight, {first offset: last offset}, as Kafka's in-flight batches: new
        # records are acquired in them and acquisition near the delivery limit works batch by batch
        self.batches: dict[int, int] = {}
        self._firsts: list | None = None
        # the group had no member left: Kafka drops the share-partition and loads it from its stored
        # state at the next fetch, its acquired batches then the stored (coalesced) state batches
        self.reload_pending = False

    # ---- queries ---------------------------------------------------------------
    @property
    def in_flight(self) -> int:
        """Offsets between start and end (Kafka's record-lock count)."""
        return self.end - self.start

    def cache_end(self) -> int:
        """One past the last offset in flight, counting the rest of a log batch a record-limit
        acquisition left (Kafka keeps it in its in-flight batch)."""
        if not self.batches:
            return self.end
        return max(self.end, self.batches[self._batch_firsts()[-1]] + 1)

    def can_acquire(self, max_locks: int) -> bool:
        """Something available again or left in flight, or room under the in-flight cap (Kafka's
        canAcquireRecords): a new share session's first answer lists only such partitions."""
        return bool(self.available) or self.end < self.cache_end() or self.cache_end() - self.start < max_locks

    def has_available(self, bound: int) -> bool:
        """Something to acquire below `bound` (the high watermark or last stable offset)."""
        return bool(self.available) or self.end < bound

    # ---- acquisition -------------------------------------------------------------
    def acquire(self, plog, member: str, max_records: int, max_bytes: int, lock_ms: int, max_locks: int,
                bound: int, now_ms: int, strict: bool = False, min_one: bool = True, read_committed: bool = False,
                batch_size: int = 0, limit: int = 0, hold=(), held_start: int | None = None):
        """Acquire up to max_records for `member`: (FetchSlice or None, [(first, last, delivery count)]).
        read_committed: `bound` is the last stable offset, and records of aborted transactions are
        archived as they are reached (never delivered). New records are cut into acquired batches at
        log batch boundaries once `batch_size` records are in one; records near the delivery `limit`
        are acquired in smaller groups (see acquisition.py). `hold`: offsets this request's own
        acknowledgements just released, not acquirable before their change is written; `held_start`:
        the start offset before them (the in-flight count of the cap counts from there till then)."""
        self.skip_to(plog.log_start_offset)
        if self.reload_pending:
            self.reload_pending = False
            self.batches.clear()
            for b in self.state_batches():
                self.batches[b["first_offset"]] = b["last_offset"]
            self._firsts = None
        avail = self.available.difference(hold) if hold else self.available
        frm = min(avail) if avail else self.end
        if frm >= bound or max_records <= 0:
            return None, []
        cend = self.cache_end()
        room = max_locks - (cend - min(self.start, self.start if held_start is None else held_start))
        if room > 0:
            max_records = min(max_records, room)
        elif frm < cend:  # at the cap: only records already in flight, below the end offset
            max_records, bound = min(max_records, cend - frm), min(bound, cend)
        else:
            return None, []
        sl = plog.read(frm, max_bytes, upper_bound=bound, min_one_batch=min_one)
        if not sl.length:
            return None, []
        pending = sorted(((a.first_offset, a.producer_id) for a in plog.aborted_transactions(frm, bound)),
                         reverse=True) if read_committed else None
        run = Acquisition(self, member, now_ms + lock_ms, max_records, strict, batch_size or max_records,
                          limit, hold, frm, bound)
        cut = run.walk(slice_batches(sl), pending)
        if not run.got:
            return None, []
        self.acquired += run.got
        if self.next_deadline is None or run.deadline < self.next_deadline:
            self.next_deadline = run.deadline
        sl = sl._replace(length=cut - sl.position)
        return sl, [tuple(r[:3]) for r in run.ranges]

    def batch_of(self, off: int) -> tuple[int, int]:
        """The acquired batch (first, last) holding in-flight offset `off` (one offset when none does)."""
        firsts = self._batch_firsts()
        i = bisect.bisect_right(firsts, off) - 1
        if i >= 0 and self.batches[firsts[i]] >= off:
            return firsts[i], self.batches[firsts[i]]
        return off, off

    def add_batch(self, first: int, last: int) -> None:
        self.batches[first] = last
        self._firsts = None

    def _batch_firsts(self) -> list:
        if self._firsts is None:
            self._firsts = sorted(self.batches)
        return self._firsts

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

    def _begin(self, start: int | None = None) -> None:
        """A change begins (from start offset `start`, the current one by default)."""
        if self._pre_start is None:
            self._pre_start = self.start if start is None else start

    def _changed(self) -> None:
        """A change to be written: the start offset moves past what is done; the write carries the
        start offset the change began with and the records complete from there (Kafka computes
        them when the change is made, before anything the same request acquires)."""
        self.advance()
        self._complete_at = self.start - self._pre_start + self.delivery_complete_count()

    def written(self) -> None:
        """The state was persisted: describe now shows the start offset the change began with."""
        if self._pre_start is not None:  # a write of acquisitions only (Kafka writes none) keeps it
            self.described_start = self._pre_start
            self.described_complete = self._complete_at
            self._pre_start = None
            self.advance()  # the write done, the start offset moves (past aborted records archived meanwhile)

    def described(self, high_watermark: int) -> tuple[int, int]:
        """(start offset, lag) as DescribeShareGroupOffsets shows them (KIP-1226 lag: records from the
        start offset to the high watermark whose delivery is not complete)."""
        if self.described_start < 0:
            return -1, -1
        return self.described_start, max(0, high_watermark - self.described_start - self.described_complete)

    def expire_locks(self, now_ms: int, limit: int) -> bool:
        """Release records whose acquisition lock ran out; True when any was."""
        if not self.acquired or self.next_deadline is None or now_ms < self.next_deadline:
            return False
        start = self.start
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
            self._begin(start)
            self._changed()
        return changed

    def release_member(self, member: str, limit: int) -> bool:
        """Release every record `member` holds (it left the group or closed its session)."""
        if not self.acquired:
            return False
        start = self.start
        changed = False
        for off, rec in self.records.items():
            if rec[STATE] == ACQUIRED and rec[MEMBER] == member:
                self._release(off, rec, limit)
                changed = True
        if changed:
            self._begin(start)
            self._changed()
        return changed

    # ---- acknowledgements ------------------------------------------------------------
    def acknowledge(self, member: str, batches: list, limit: int, lock_ms: int, now_ms: int) -> set | None:
        """Apply acknowledgement batches of `member` (checked by `batches_error` first) all or
        nothing, as Kafka does: batches wholly below the start offset are skipped (accepted by
        another member after this one's lock ran out), offsets past the acquired records are
        INVALID_REQUEST, and an offset not acquired by `member`, or touched twice, is
        INVALID_RECORD_STATE. Returns the offsets made available again (None when no record changed
        state: nothing to write)."""
        plan = {}
        for b in batches:
            first, last, types = b["first_offset"], b["last_offset"], b["acknowledge_types"]
            if last < self.start:
                continue
            cend = self.cache_end()
            if self.start == cend:
                raise AckError("INVALID_RECORD_STATE",
                               "Batch record not found. The request batch offsets are not found in the cache.")
            if first >= cend:
                raise AckError("INVALID_REQUEST", "Batch record not found. The first offset in request is past "
                                                  "acquired records.")
            if last >= cend:
                raise AckError("INVALID_REQUEST", "Batch record not found. The last offset in request is past "
                                                  "acquired records.")
            for off in range(max(first, self.start), last + 1):
                rec = self.records.get(off)
                if rec is None:
                    if off >= self.end:  # the rest of a record-limit acquisition's batch: not acquired
                        raise AckError("INVALID_RECORD_STATE", "The offset cannot be acknowledged. The offset is "
                                                               "not acquired.")
                    continue  # no record there (compacted away): done already
                if off in plan:
                    raise AckError("INVALID_RECORD_STATE", "The record state is invalid. The acknowledgement of "
                                                           "delivery could not be completed.")
                if rec[STATE] != ACQUIRED:
                    raise AckError("INVALID_RECORD_STATE", "The offset cannot be acknowledged. The offset is not "
                                                           "acquired.")
                if rec[MEMBER] != member:
                    raise AckError("INVALID_RECORD_STATE", "Member is not the owner of offset")
                plan[off] = (rec, types[0] if len(types) == 1 else types[off - first])
        released = set()
        for off, (rec, t) in plan.items():
            if t == RENEW:  # a new lock: nothing to write
                rec[DEADLINE] = now_ms + lock_ms
                if self.next_deadline is None or rec[DEADLINE] < self.next_deadline:
                    self.next_deadline = rec[DEADLINE]
        plan = {off: v for off, v in plan.items() if v[1] != RENEW}
        if not plan:
            return None  # no record changed state: nothing to write
        self._begin()
        for off, (rec, t) in plan.items():
            if t == RELEASE:
                self._release(off, rec, limit)
                if rec[STATE] == AVAILABLE:
                    released.add(off)
                continue
            self.acquired -= 1
            rec[MEMBER] = None
            rec[STATE] = ACKNOWLEDGED if t == ACCEPT else ARCHIVED  # GAP and REJECT archive
            if t == REJECT:
                self.dead.append((off, rec[COUNT], REJECTED))
        self._changed()
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
        if self.batches and self._batch_firsts()[0] < s:
            self._drop_batches_below(s)

    def _drop_batches_below(self, start: int) -> None:
        for first in [f for f, last in self.batches.items() if last < start]:
            del self.batches[first]
        self._firsts = None

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
        self.batches.clear()
        self._firsts = None
        self.acquired = 0
        self.next_deadline = None
        self.start = self.end = self.described_start = start_offset
        self.described_complete = 0
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
            self.batches.clear()
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
            if replace and b["last_offset"] >= self.start:  # Kafka reloads its in-flight batches as stored
                self.add_batch(max(b["first_offset"], self.start), b["last_offset"])
            for off in range(max(b["first_offset"], self.start), b["last_offset"] + 1):
                self.records[off] = [st, count, None, 0]
                if st == AVAILABLE:
                    self.available.add(off)
                else:
                    self.available.discard(off)
        self.end = max([self.start] + [o + 1 for o in self.records])
        self.advance()
        self.described_start = self.start
        self.described_complete = self.delivery_complete_count()


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
