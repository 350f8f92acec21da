"""A model-based test of the share-partition state machine (hypothesis stateful, in-process, on a
real pylog log): any sequence of appends, acquisitions, acknowledgements (well-formed or not), lock
expiries, renewals and members leaving keeps a small reference model of record states in step with
SharePartition, and these hold after every step:
- the in-flight acquired count equals the records acquired;
- no record is acquired by two members at once (an acquisition only takes records the model has
  available or new);
- nothing below the start offset is ever delivered, and delivery counts go up by one per delivery;
- acknowledgements are all or nothing: refused ones change no record;
- every record is eventually acknowledged, archived or available again (once every lock ran out,
  nothing is acquired).
"""
from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from support.examples import examples

from pylog.broker.groups.share import partition as spm
from pylog.core.config import TOPIC_CONFIGS
from pylog.core.records import BatchBuilder
from pylog.storage.log import Log

MEMBERS = ("m1", "m2", "m3")
LOCK_MS = 1000
TYPES = (spm.GAP, spm.ACCEPT, spm.RELEASE, spm.REJECT, spm.RENEW)


class SharePartitionModel(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        self.now = 1_000_000
        self.model: dict[int, list] = {}  # offset -> [state, delivery count, member]

    @initialize(tmp=st.just(None), limit=st.integers(2, 6), cap=st.sampled_from((8, 20, 1000)))
    def setup(self, tmp, limit, cap):
        import tempfile

        self.dir = tempfile.TemporaryDirectory()
        self.log = Log(f"{self.dir.name}/t-0", TOPIC_CONFIGS.resolve({}), fsync=False)
        self.sp = spm.SharePartition("g", "t", None, 0, 0)
        self.limit, self.cap = limit, cap

    def teardown(self):
        if hasattr(self, "log"):
            self.log.close()
            self.dir.cleanup()

    # ---- steps -------------------------------------------------------------------------
    @rule(n=st.integers(1, 6))
    def append(self, n):
        b = BatchBuilder()
        for i in range(n):
            b.append(self.now + i, None, b"v%d" % i, [])
        self.log.append_as_leader(bytearray(b.build()), 0, now_ms=self.now)

    @rule(member=st.sampled_from(MEMBERS), max_records=st.sampled_from((1, 2, 3, 5, 500)),
          batch_size=st.sampled_from((1, 2, 500)), strict=st.booleans())
    def acquire(self, member, max_records, batch_size, strict):
        start, hw = self.sp.start, self.log.high_watermark
        _, ranges = self.sp.acquire(self.log, member, max_records, 1 << 20, LOCK_MS, self.cap, hw, self.now,
                                    strict, batch_size=batch_size, limit=self.limit)
        got = 0
        for first, last, count in ranges:
            assert first >= start, (ranges, start)
            for off in range(first, last + 1):
                st_, c, _ = self.model.get(off, [spm.AVAILABLE, 0, None])
                assert st_ == spm.AVAILABLE, (off, self.model.get(off))
                assert count == c + 1, (off, count, c)
                self.model[off] = [spm.ACQUIRED, count, member]
                got += 1
        if strict:
            assert got <= max_records

    @rule(member=st.sampled_from(MEMBERS), data=st.data())
    def acknowledge(self, member, data):
        held = sorted(o for o, r in self.model.items() if r[0] == spm.ACQUIRED and r[2] == member)
        top = max(self.model, default=0) + 3
        if held and data.draw(st.integers(0, 3)):
            i = data.draw(st.integers(0, len(held) - 1))
            first = held[i]
            last = held[data.draw(st.integers(i, min(len(held) - 1, i + 4)))]
        else:
            first = data.draw(st.integers(0, top))
            last = data.draw(st.integers(first - 1, top))
        batches = [{"first_offset": first, "last_offset": last, "acknowledge_types": [data.draw(st.sampled_from(TYPES))]}]
        if data.draw(st.booleans()):  # a second batch: after, touching, overlapping or before the first
            f2 = {"after": last + 1, "touching": last, "overlap": max(0, last - 1), "before": max(0, first - 2),
                  "any": data.draw(st.integers(max(0, first - 3), last + 4))}[
                data.draw(st.sampled_from(("after", "touching", "overlap", "before", "any")))]
            batches.append({"first_offset": f2, "last_offset": data.draw(st.integers(f2, f2 + 3)),
                            "acknowledge_types": [data.draw(st.sampled_from(TYPES))]})
        before = {o: list(r) for o, r in self.model.items()}
        if spm.batches_error(batches, True, True) is not None:
            return  # refused before the share-partition sees it (the handler's check)
        try:
            self.sp.acknowledge(member, batches, self.limit, LOCK_MS, self.now)
        except spm.AckError:
            self._check_states()
            assert self.model == before
            return
        seen = set()
        for b in batches:
            for off in range(max(b["first_offset"], self.sp_start_before(before)), b["last_offset"] + 1):
                r = self.model.get(off)
                if r is None or r[0] != spm.ACQUIRED:
                    continue
                assert r[2] == member and off not in seen, (off, r, member)
                seen.add(off)
                self._apply(off, r, b["acknowledge_types"][0])

    def sp_start_before(self, before):
        done = (spm.ACKNOWLEDGED, spm.ARCHIVED)
        s = 0
        while s in before and before[s][0] in done:
            s += 1
        return s

    def _apply(self, off, r, t):
        if t == spm.RENEW:
            return
        if t == spm.RELEASE:
            r[0], r[2] = (spm.ARCHIVED if r[1] >= self.limit else spm.AVAILABLE), None
        else:
            r[0], r[2] = (spm.ACKNOWLEDGED if t == spm.ACCEPT else spm.ARCHIVED), None

    @rule(ms=st.sampled_from((100, 600, 1500)))
    def time_passes(self, ms):
        self.now += ms
        self.sp.expire_locks(self.now, self.limit)
        for off, r in self.model.items():
            if r[0] == spm.ACQUIRED and self.sp.records.get(off, [None])[0] != spm.ACQUIRED:
                r[0], r[2] = (spm.ARCHIVED if r[1] >= self.limit else spm.AVAILABLE), None

    @rule(member=st.sampled_from(MEMBERS))
    def member_leaves(self, member):
        self.sp.release_member(member, self.limit)
        for r in self.model.values():
            if r[0] == spm.ACQUIRED and r[2] == member:
                r[0], r[2] = (spm.ARCHIVED if r[1] >= self.limit else spm.AVAILABLE), None

    @precondition(lambda self: hasattr(self, "sp"))
    @rule()
    def every_lock_runs_out(self):
        self.now += LOCK_MS + 1
        self.time_passes(0)
        assert self.sp.acquired == 0
        assert all(r[0] != spm.ACQUIRED for r in self.model.values())
        assert all(r[spm.STATE] != spm.ACQUIRED for r in self.sp.records.values())

    # ---- invariants ----------------------------------------------------------------------
    @invariant()
    def counts_agree(self):
        if not hasattr(self, "sp"):
            return
        real = sum(1 for r in self.sp.records.values() if r[spm.STATE] == spm.ACQUIRED)
        assert self.sp.acquired == real == sum(1 for r in self.model.values() if r[0] == spm.ACQUIRED)
        self._check_states()

    def _check_states(self):
        sp = self.sp
        for off in range(sp.start, sp.end):
            r = sp.records.get(off)
            m = self.model.get(off)
            if r is None:
                continue
            assert m is not None and (r[spm.STATE], r[spm.COUNT]) == (m[0], m[1]), (off, r, m)
            if r[spm.STATE] == spm.ACQUIRED:
                assert r[spm.MEMBER] == m[2]
            assert (off in sp.available) == (r[spm.STATE] == spm.AVAILABLE)
        for off, m in self.model.items():  # below the start offset: all done
            if off < sp.start:
                assert m[0] in (spm.ACKNOWLEDGED, spm.ARCHIVED), (off, m, sp.start)


SharePartitionModel.TestCase.settings = settings(max_examples=examples(150), stateful_step_count=40, deadline=None)
TestSharePartitionModel = SharePartitionModel.TestCase
