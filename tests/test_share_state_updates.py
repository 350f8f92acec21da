"""ShareSnapshot and ShareUpdate records of `__share_group_state` as Kafka 4.4's share coordinator
writes them (store.py), checked without a broker: the records a run of random state changes writes,
replayed as the broker does at start-up, give the share-partition's state back; a snapshot comes
first and after every `share.coordinator.snapshot.update.records.per.snapshot` updates; updates carry
the snapshot's epoch and only what changed; pruning keeps the records from the earliest latest
snapshot of a live share-partition."""
from __future__ import annotations

import random
import uuid

from pylog.broker.groups.share import partition as spm
from pylog.broker.groups.share.store import ShareStateStore, expand
from pylog.core.protocol import share_state_records as ssr

LIMIT = 5


class _Broker:
    def __init__(self, per_snapshot: int):
        self.config = {"share.coordinator.state.topic.num.partitions": 1,
                       "share.coordinator.snapshot.update.records.per.snapshot": per_snapshot}


class _Store(ShareStateStore):
    """The store with its log in a list (offset = index)."""

    def __init__(self, per_snapshot: int):
        super().__init__(_Broker(per_snapshot))
        self.log: list = []

    def ensure_topic(self) -> None:
        pass

    def _append(self, p, records, now):
        first = len(self.log)
        self.log += records
        return first

    def replay(self, from_offset: int = 0) -> dict:
        out: dict = {}
        for off, (k, v) in enumerate(self.log):
            if off >= from_offset:
                self._apply(out, k, v, 0, off)
        return out


def _replayed(st) -> spm.SharePartition:
    sp = spm.SharePartition("g", "t", st.get("tid"), 0, st["start"])
    sp.load_batches(st["start"], st["batches"], LIMIT, replace=True)
    for start, batches in st["updates"]:
        sp.load_batches(start, batches, LIMIT, replace=False)
    return sp


def _step(sp: spm.SharePartition, rng: random.Random) -> None:
    """A random change: new records in flight, acknowledgements, releases with a count, archives."""
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.3:
            off = sp.end
            sp.end += 1
        elif sp.records:
            off = rng.choice(list(sp.records))
        else:
            continue
        rec = sp.records.setdefault(off, [spm.AVAILABLE, 0, None, 0])
        state = rng.choice([spm.AVAILABLE, spm.ACKNOWLEDGED, spm.ARCHIVED, spm.AVAILABLE])
        rec[spm.STATE] = state
        rec[spm.COUNT] = min(LIMIT - 1, rec[spm.COUNT] + 1) if state == spm.AVAILABLE else rec[spm.COUNT]
        (sp.available.add if state == spm.AVAILABLE else sp.available.discard)(off)
    sp.advance()


def test_replay_of_snapshots_and_updates_gives_the_state_back():
    for per_snapshot in (0, 1, 3, 500):
        rng = random.Random(per_snapshot)
        store = _Store(per_snapshot)
        tid = uuid.UUID(int=7)
        sp = spm.SharePartition("g", "t", tid, 0, 0)
        for i in range(200):
            _step(sp, rng)
            if i == 120:
                sp.reset(sp.start + 2)  # a new state epoch: always a snapshot
            store.write([sp])
            st = store.replay()[("g", tid, 0)]
            back = _replayed(st)
            assert (back.start, expand(back.state_batches())) == (sp.start, expand(sp.state_batches())), i
            assert st["state_epoch"] == sp.state_epoch
        kinds = [ssr.decode(k, v)[0] for k, v in store.log]
        assert kinds[0] == ssr.SNAPSHOT
        run = 0
        for kind in kinds:
            run = 0 if kind == ssr.SNAPSHOT else run + 1
            assert run <= per_snapshot
        if per_snapshot == 500:
            assert kinds.count(ssr.SNAPSHOT) == 2  # the first write and the state-epoch change
        # records before the redundant offset are not needed: replay from there gives the same state
        assert store.redundant[0] == max(i for i, k in enumerate(kinds) if k == ssr.SNAPSHOT)
        back = _replayed(store.replay(store.redundant[0])[("g", tid, 0)])
        assert (back.start, expand(back.state_batches())) == (sp.start, expand(sp.state_batches()))


def test_updates_carry_the_snapshot_epoch_and_only_the_change():
    store = _Store(500)
    tid = uuid.UUID(int=9)
    sp = spm.SharePartition("g", "t", tid, 0, 0)
    sp.records = {o: [spm.AVAILABLE, 1, None, 0] for o in range(5)}
    sp.end = 5
    store.write([sp])
    sp.records[3] = [spm.ACKNOWLEDGED, 1, None, 0]
    store.write([sp])
    (t1, _, snap), (t2, _, upd) = [ssr.decode(k, v) for k, v in store.log]
    assert (t1, t2) == (ssr.SNAPSHOT, ssr.UPDATE)
    assert upd["snapshot_epoch"] == snap["snapshot_epoch"] == 1
    assert upd["start_offset"] == 0 and upd["delivery_complete_count"] == 1
    assert upd["state_batches"] == [{"first_offset": 3, "last_offset": 3, "delivery_state": spm.ACKNOWLEDGED,
                                     "delivery_count": 1}]


def test_pruning_keeps_the_earliest_latest_snapshot_of_live_partitions():
    store = _Store(1)
    a, b = (spm.SharePartition("g", "t", uuid.UUID(int=i), 0, 0) for i in (1, 2))
    store.write([a])       # 0: snapshot a
    store.write([b])       # 1: snapshot b
    store.write([a])       # 2: update a
    store.write([a])       # 3: snapshot a
    assert store.redundant[0] == 1
    store.write([b])       # 4: update b
    store.write([b])       # 5: snapshot b
    assert store.redundant[0] == 3
    store.delete("g", [(a.topic_id, 0)])  # 6: tombstone of a: only b is live
    store.write([b])       # 7: update b
    assert store.redundant[0] == 5
