"""Kafka 4.4's share-group SimpleAssignor, ported step for step.

org.apache.kafka.coordinator.group.assignor.SimpleAssignor hands a group whose members all
subscribe to the same topics to SimpleHomogeneousAssignmentBuilder and any other to
SimpleHeterogeneousAssignmentBuilder. Both keep previous assignments where they still fit
(stickiness), share a partition among several members when there are more members than
partitions, and pick partitions and members in Java HashMap/HashSet order: the port uses
JavaHashMap/JavaHashSet (javahash.py) wherever Kafka uses those classes, with the same initial
capacities, so its choices are Kafka's (tests/test_share_assignor_parity.py runs both on the
same inputs).

The group spec is a JavaHashMap of member id -> MemberSpec, filled in the order Kafka's
TargetAssignmentBuilder fills its HashMap; a member's `topics` are its subscribed topic ids in
TopicIds' order (its subscribed names as a HashSet<String>, resolved to ids) and its
`assignment` its previous target assignment (topic id -> set of partitions). The result maps
every member id to its new assignment, in the same types.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from pylog.broker.groups.share.javahash import JavaHashMap, JavaHashSet


class AssignorError(Exception):
    """PartitionAssignorException (or the Java runtime error Kafka's code would raise)."""


@dataclass
class MemberSpec:
    topics: list  # subscribed topic ids, in TopicIds' iteration order
    assignment: JavaHashMap  # topic id -> JavaHashSet of partitions
    named: bool | None = None  # whether it subscribes to any name (TopicIds.isEmpty), resolved or not


def new_hash_map(n: int) -> JavaHashMap:
    """AssignorHelpers.newHashMap."""
    return JavaHashMap(int((n + 1) / 0.75 + 1.0))


def new_hash_set(n: int) -> JavaHashSet:
    """AssignorHelpers.newHashSet."""
    return JavaHashSet(int((n + 1) / 0.75 + 1.0))


def deep_copy(assignment: JavaHashMap) -> JavaHashMap:
    """AssignorHelpers.deepCopyAssignment: new HashMap(size), each set as new HashSet(set)."""
    out = JavaHashMap(len(assignment))
    for tid, parts in assignment.items():
        out[tid] = JavaHashSet.of(parts)
    return out


class JavaIterator:
    """A java.util.Iterator over a JavaHashSet: next() past the end raises, remove() removes the
    element last returned (the only change Kafka makes to the set while iterating)."""

    def __init__(self, s: JavaHashSet):
        self._s, self._items, self._i = s, list(s), 0

    def has_next(self) -> bool:
        return self._i < len(self._items)

    def next(self):
        if self._i >= len(self._items):
            raise AssignorError("NoSuchElementException")
        self._i += 1
        return self._items[self._i - 1]

    def remove(self) -> None:
        self._s.remove(self._items[self._i - 1])


def _desired_counts(sharing: int, n_parts: int, n_members: int) -> list[int]:
    precise = sharing * n_parts / n_members
    return [math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i in range(n_members)]


def _num_partitions(describe: dict, tid) -> int:
    n = describe.get(tid, -1)
    if n == -1:
        raise AssignorError(f"Members are subscribed to topic {tid} which doesn't exist in the topic metadata.")
    return n


def _assignable(allowed: dict | None, tid, p: int) -> bool:
    return allowed is None or (tid in allowed and p in allowed[tid])


def assign(members: JavaHashMap, homogeneous: bool, describe: dict, allowed: dict | None = None) -> JavaHashMap:
    """SimpleAssignor.assign: describe maps topic id -> partition count; allowed, when given,
    the assignable partitions per topic id (GroupSpec.isPartitionAssignable)."""
    if not len(members):
        return JavaHashMap()
    if homogeneous:
        return _Homogeneous(members, describe, allowed).build()
    return _Heterogeneous(members, describe, allowed).build()


def _fill_round_robin(by_partition, unfilled, sharing: int, by_member, desired, give) -> None:
    """Both builders' last step: partitions short of `sharing` members take the unfilled members in
    turn (skipping a partition's own), until no member is unfilled or a full turn assigns nothing;
    `give(member, partition key)` records the new part."""
    it = JavaIterator(unfilled)
    assigned_this_round = False
    for key, members in by_partition.items():
        if len(members) < sharing:
            to_make = sharing - len(members)
            while to_make > 0:
                if not it.has_next():
                    if not assigned_this_round:
                        break
                    it = JavaIterator(unfilled)
                    assigned_this_round = False
                i = it.next()
                if i in members:
                    continue
                give(i, key)
                by_member.setdefault(i, JavaHashSet).add(key)
                to_make -= 1
                assigned_this_round = True
                if len(by_member[i]) >= desired[i]:
                    it.remove()
        if not len(unfilled):
            break


class _Base:
    def __init__(self, members: JavaHashMap):
        self.members = members
        self.n = len(members)
        self.member_ids = list(members)
        self.indices = new_hash_map(self.n)
        for i, mid in enumerate(self.member_ids):
            self.indices[mid] = i
        self.old = new_hash_map(self.n)
        self.new = new_hash_map(self.n)

    def _fill_old(self) -> None:
        for mid in self.members:
            self.old[self.indices[mid]] = self.members[mid].assignment

    def new_of(self, i: int) -> JavaHashMap:
        a = self.new.get(i)
        if a is None:
            a = deep_copy(self.old.get(i))
            self.new[i] = a
        return a

    def _result(self) -> JavaHashMap:
        out = new_hash_map(self.n)
        for i in range(self.n):
            a = self.new.get(i)
            out[self.member_ids[i]] = self.old.get(i) if a is None else a
        return out


class _Homogeneous(_Base):
    """SimpleHomogeneousAssignmentBuilder."""

    def __init__(self, members: JavaHashMap, describe: dict, allowed: dict | None):
        super().__init__(members)
        first = members[self.member_ids[0]]
        self.topics = first.topics
        self.named = bool(first.topics) if first.named is None else first.named
        self.targets = [(tid, p) for tid in self.topics for p in range(_num_partitions(describe, tid))
                        if _assignable(allowed, tid, p)]
        nt = len(self.targets)
        self.sharing = 0 if nt == 0 else (self.n + nt - 1) // nt
        self.by_partition = new_hash_map(nt)
        self.by_member = new_hash_map(self.n)
        self.unfilled = new_hash_set(self.n)
        self.overfilled = new_hash_set(self.n)
        self._fill_old()
        self.desired = _desired_counts(self.sharing, nt, self.n)

    def build(self) -> JavaHashMap:
        if not self.named:
            return JavaHashMap()
        self._revoke_unassignable()
        self._revoke_overfilled()
        self._revoke_overshared()
        for tp in self.targets:
            self.by_partition.setdefault(tp, JavaHashSet)
        self._assign_remaining()
        return self._result()

    def _revoke_unassignable(self) -> None:
        subscribed = set(self.topics)
        for i, old in self.old.items():
            new = None
            count = 0
            want = self.desired[i]
            for tid, parts in old.items():
                if tid in subscribed:
                    for p in parts:
                        count += 1
                        self.by_partition.setdefault((tid, p), JavaHashSet).add(i)
                        self.by_member.setdefault(i, JavaHashSet).add((tid, p))
                        if count >= want and new is None:
                            new = deep_copy(old)
                else:
                    if new is None:
                        new = deep_copy(old)
                    new.pop(tid, None)
            if new is not None:
                self.new[i] = new
            if count < want:
                self.unfilled.add(i)
            elif count > want:
                self.overfilled.add(i)

    def _revoke_overfilled(self) -> None:
        for i in self.overfilled:
            want = self.desired[i]
            final = self.by_member.get(i)
            if len(final) > want:
                for tp in final:
                    self.new[i][tp[0]].remove(tp[1])
                    self.by_partition[tp].remove(i)
                    final.remove(tp)
                    if len(final) == want:
                        break

    def _revoke_overshared(self) -> None:
        for tp, assigned in self.by_partition.items():
            count = len(assigned)
            if count <= self.sharing:
                continue
            for i in assigned:
                parts = self.new_of(i).get(tp[0])
                if parts is not None and parts.remove(tp[1]):
                    count -= 1
                    assigned.remove(i)
                    self.by_member[i].remove(tp)
                    self.unfilled.add(i)
                if count <= self.sharing:
                    break

    def _assign_remaining(self) -> None:
        if not len(self.unfilled):
            return
        _fill_round_robin(self.by_partition, self.unfilled, self.sharing, self.by_member, self.desired,
                          lambda i, tp: self.new_of(i).setdefault(tp[0], JavaHashSet).add(tp[1]))


class _Heterogeneous(_Base):
    """SimpleHeterogeneousAssignmentBuilder."""

    def __init__(self, members: JavaHashMap, describe: dict, allowed: dict | None):
        super().__init__(members)
        self.topics = JavaHashSet()
        for mid in members:
            for tid in members[mid].topics:
                self.topics.add(tid)
        self.targets = new_hash_map(len(self.topics))
        for tid in self.topics:
            self.targets[tid] = [p for p in range(_num_partitions(describe, tid)) if _assignable(allowed, tid, p)]
        self.subscribers = new_hash_map(len(self.topics))
        for mid in members:
            for tid in members[mid].topics:
                self.subscribers.setdefault(tid, list).append(self.indices[mid])
        self._fill_old()

    def build(self) -> JavaHashMap:
        if not len(self.topics):
            return JavaHashMap()
        for tid in self.topics:
            _TopicBuilder(self, tid).build()
        return self._result()


class _TopicBuilder:
    """SimpleHeterogeneousAssignmentBuilder.TopicAssignmentPartialBuilder."""

    def __init__(self, outer: _Heterogeneous, tid):
        self.o, self.tid = outer, tid
        self.targets = outer.targets[tid]
        self.subscribers = outer.subscribers[tid]
        self.by_partition = new_hash_map(len(self.targets))
        self.by_member = new_hash_map(len(self.subscribers))
        nt, ns = len(self.targets), len(self.subscribers)
        self.sharing = 0 if nt == 0 else (ns + nt - 1) // nt
        self.desired = [0] * outer.n
        for k, c in enumerate(_desired_counts(self.sharing, nt, ns)):
            self.desired[self.subscribers[k]] = c

    def build(self) -> None:
        self._revoke_unassignable()
        self._revoke_overfilled()
        self._revoke_overshared()
        for p in self.targets:
            self.by_partition.setdefault(p, lambda: new_hash_set(len(self.subscribers)))
        self._assign_remaining()

    def _revoke_unassignable(self) -> None:
        # the topic is always among the subscribed ones here, so nothing is revoked: an old
        # assignment of it only seeds the per-partition and per-member maps, as in Kafka
        for i, old in self.o.old.items():
            if not len(old):
                continue
            parts = old.get(self.tid)
            if parts is None:
                continue
            for p in parts:
                self.by_partition.setdefault(p, JavaHashSet).add(i)
                self.by_member.setdefault(i, JavaHashSet).add(p)

    def _revoke_overfilled(self) -> None:
        for i, parts in self.by_member.items():
            want = self.desired[i]
            if len(parts) <= want:
                continue
            new = self.o.new.get(i)
            for p in parts:
                if len(parts) <= want:
                    break
                self.by_partition[p].remove(i)
                parts.remove(p)
                if new is None:
                    new = deep_copy(self.o.old[i])
                    self.o.new[i] = new
                new[self.tid].remove(p)

    def _revoke_overshared(self) -> None:
        for p, assigned in self.by_partition.items():
            count = len(assigned)
            if count <= self.sharing:
                continue
            for i in assigned:
                parts = self.o.new_of(i).get(self.tid)
                if parts is not None and parts.remove(p):
                    count -= 1
                    assigned.remove(i)
                    self.by_member[i].remove(p)
                if count <= self.sharing:
                    break

    def _assign_remaining(self) -> None:
        unfilled = new_hash_set(self.o.n)
        for i in self.o.subscribers[self.tid]:
            parts = self.by_member.get(i)
            if (0 if parts is None else len(parts)) < self.desired[i]:
                unfilled.add(i)
        _fill_round_robin(self.by_partition, unfilled, self.sharing, self.by_member, self.desired,
                          lambda i, p: self.o.new_of(i).setdefault(self.tid, JavaHashSet).add(p))
