"""The sticky task assignor of streams groups, after Kafka 4.4's StickyTaskAssignor.

Active tasks go back to the member that ran them (while it is under its quota), then
to a member that held them as standby (or reports their offsets, most caught-up first),
then to the least-loaded process, least-loaded member; standby replicas of stateful
tasks go to the previous active owner, then to a previous standby, then to the
least-loaded process that does not hold the task. Quotas are the ceiling of tasks per
member, recomputed as members fill up. Kafka iterates members in its hash maps'
order; pylog in member-id order (ties can fall differently).
"""
from __future__ import annotations

import heapq
import itertools
import logging
from dataclasses import dataclass, field

log = logging.getLogger("pylog.broker.groups")


@dataclass
class MemberSpec:
    """What the assignor knows of one member."""

    process_id: str
    active: set = field(default_factory=set)  # tasks of its current target
    standby: set = field(default_factory=set)
    task_offsets: dict = field(default_factory=dict)  # {task: offset sum} reported by the member


class _Process:
    """One process (a Streams instance) and its members' counts."""

    def __init__(self, pid: str):
        self.pid = pid
        self.counts: dict[str, int] = {}
        self.active: dict[str, set] = {}
        self.standby: dict[str, set] = {}
        self.tasks: set = set()

    @property
    def load(self) -> float:
        return sum(self.counts.values()) / len(self.counts)

    def add(self, mid: str, task, active: bool) -> int:
        (self.active if active else self.standby)[mid].add(task)
        self.tasks.add(task)
        self.counts[mid] += 1
        return self.counts[mid]

    def add_to_least_loaded(self, task, active: bool) -> int:
        mid = min(self.counts, key=lambda m: (self.counts[m], m))
        return self.add(mid, task, active)


def _per_member(tasks: int, members: int) -> int:
    return 0 if members == 0 else -(-tasks // members)


class _State:
    def __init__(self, members: dict, partitions: dict, stateful: set, standbys: int):
        self.standbys = standbys
        self.total_active = sum(partitions.values())
        self.total = self.total_active + standbys * sum(n for s, n in partitions.items() if s in stateful)
        self.with_active_room = self.with_room = len(members)
        self.active_quota = _per_member(self.total_active, len(members))
        self.quota = _per_member(self.total, len(members))
        self.procs: dict[str, _Process] = {}
        self.prev_active: dict = {}
        candidates: dict = {}
        for mid in sorted(members):
            spec = members[mid]
            p = self.procs.setdefault(spec.process_id, _Process(spec.process_id))
            p.counts[mid], p.active[mid], p.standby[mid] = 0, set(), set()
            for t in spec.active:
                self.prev_active[t] = (spec.process_id, mid)
            for t in spec.standby:
                candidates.setdefault(t, []).append((0, -spec.task_offsets.get(t, 0), spec.process_id, mid))
            for t, off in spec.task_offsets.items():
                if t not in spec.standby:
                    candidates.setdefault(t, []).append((1, -off, spec.process_id, mid))
        self.prev_standby = {t: [(c[2], c[3]) for c in sorted(cs, key=lambda c: (c[0], c[1]))]
                             for t, cs in candidates.items()}

    def count(self, pid: str, mid: str) -> int:
        return self.procs[pid].counts[mid]

    def filled(self, n: int, active: bool) -> None:
        """A member reached a quota: the quota of the others is recomputed."""
        if active and n == self.active_quota:
            self.with_active_room -= 1
            self.total_active -= n
            self.active_quota = _per_member(self.total_active, self.with_active_room)
        if n == self.quota:
            self.with_room -= 1
            self.total -= n
            self.quota = _per_member(self.total, self.with_room)

    def least_loaded_prev(self, holders, task=None):
        best, best_p, best_m = None, None, None
        for pid, mid in holders or ():
            proc = self.procs.get(pid)
            if proc is None or mid not in proc.counts or (task is not None and task in proc.tasks):
                continue
            pl, ml = proc.load, proc.counts[mid]
            if best is None or (pl < best_p and ml < best_m):
                best, best_p, best_m = (pid, mid), pl, ml
        return best


def _heap(procs):
    tie = itertools.count()
    h = [(p.load, next(tie), p) for p in procs]
    heapq.heapify(h)
    return h, tie


def _assign_active(st: _State, tasks: list) -> None:
    tasks.sort(key=lambda t: (t[1], t[0]))
    rest = []
    for t in tasks:  # 1. back to the previous active owner
        prev = st.prev_active.get(t)
        if prev and prev[0] in st.procs and prev[1] in st.procs[prev[0]].counts \
                and st.count(*prev) < st.active_quota:
            st.filled(st.procs[prev[0]].add(prev[1], t, True), True)
        else:
            rest.append(t)
    tasks = []
    for t in rest:  # 2. to a previous standby holder
        prev = st.least_loaded_prev(st.prev_standby.get(t))
        if prev and st.count(*prev) < st.active_quota:
            st.filled(st.procs[prev[0]].add(prev[1], t, True), True)
        else:
            tasks.append(t)
    tasks.sort()
    h, tie = _heap(st.procs.values())
    for t in tasks:  # 3. least-loaded process, least-loaded member
        _, _, p = heapq.heappop(h)
        st.filled(p.add_to_least_loaded(t, True), True)
        heapq.heappush(h, (p.load, next(tie), p))


def _standby_to_least_loaded(st: _State, h, tie, task) -> bool:
    skipped, found = [], False
    while h:
        entry = heapq.heappop(h)
        p = entry[2]
        if task not in p.tasks:
            st.filled(p.add_to_least_loaded(task, False), False)
            heapq.heappush(h, (p.load, next(tie), p))
            found = True
            break
        skipped.append(entry)
    for e in skipped:
        heapq.heappush(h, e)
    return found


def _assign_standby(st: _State, tasks: list) -> None:
    later = []
    for t in sorted(tasks, key=lambda t: (t[1], t[0]), reverse=True):
        for i in range(st.standbys):
            prev = st.prev_active.get(t)
            if prev and prev[0] in st.procs and prev[1] in st.procs[prev[0]].counts:
                p = st.procs[prev[0]]
                if t not in p.tasks and st.count(*prev) < st.quota:
                    st.filled(p.add(prev[1], t, False), False)
                    continue
            prev = st.least_loaded_prev(st.prev_standby.get(t), t)
            if prev and st.count(*prev) < st.quota:
                st.filled(st.procs[prev[0]].add(prev[1], t, False), False)
                continue
            later.append((t, st.standbys - i))
            break
    later.sort(reverse=True)
    h, tie = _heap(st.procs.values())
    for t, n in later:
        for i in range(n):
            if not _standby_to_least_loaded(st, h, tie, t):
                log.warning("Unable to assign %d of %d standby tasks for task [%s_%d]. There is not enough "
                            "available capacity.", n - i, st.standbys, t[0], t[1])
                break


def assign(members: dict[str, MemberSpec], partitions: dict[str, int], stateful: set,
           standbys: int) -> dict[str, dict]:
    """{member id: {"active": tasks, "standby": tasks, "warmup": set()}} for every member.
    `partitions`: tasks per subtopology; `stateful`: subtopologies with state stores."""
    out = {mid: {"active": set(), "standby": set(), "warmup": set()} for mid in members}
    if not members:
        return out
    st = _State(members, partitions, stateful, standbys)
    _assign_active(st, [(s, p) for s, n in partitions.items() for p in range(n)])
    if standbys > 0:
        _assign_standby(st, [(s, p) for s, n in partitions.items() if s in stateful for p in range(n)])
    for p in st.procs.values():
        for mid in p.counts:
            out[mid]["active"] |= p.active[mid]
            out[mid]["standby"] |= p.standby[mid]
    return out
