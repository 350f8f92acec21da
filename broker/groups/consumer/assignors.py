"""Server-side assignors of KIP-848 consumer groups: `uniform` and `range`.

An assignor maps each member to a set of (topic_id, partition). Input: the
members' subscribed topic ids and their current target (for stickiness), and
the partition count of every subscribed topic. Pure functions; the group
coordinator picks one by name (`group.consumer.assignors`, or the member's
`server_assignor`).
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from pylog.core.client.assignors import contiguous_ranges

TP = tuple  # (topic_id: uuid.UUID, partition: int)


@dataclass
class MemberSpec:
    """What an assignor knows about one member."""

    subscribed: set  # topic ids
    current: set = field(default_factory=set)  # its current target: kept where the balance allows


def uniform(members: dict[str, MemberSpec], topics: dict[uuid.UUID, int]) -> dict[str, set]:
    """Balanced and sticky (Kafka's UniformAssignor in spirit): every member keeps what it had
    while it stays within one partition of every other member that could take it; free
    partitions go to the eligible member with the fewest; homogeneous subscriptions end
    with counts differing by at most one."""
    out: dict[str, set] = {m: set() for m in members}
    if not members:
        return out
    order = sorted(members)
    taken: set = set()
    eligible: dict[uuid.UUID, list[str]] = {
        t: [m for m in order if t in members[m].subscribed] for t in topics}
    # 1. stickiness: keep every still-valid partition once
    for m in order:
        for tp in sorted(members[m].current, key=_tp_key):
            t, p = tp
            if t in members[m].subscribed and t in topics and p < topics[t] and tp not in taken:
                out[m].add(tp)
                taken.add(tp)
    # 2. balance: move partitions from the fullest member to one with at least two fewer
    for t in sorted(topics, key=str):
        _balance(out, eligible[t], t)
    _balance_all(out, members, eligible)
    # 3. free partitions to the eligible member with the fewest
    for t in sorted(topics, key=str):
        cands = eligible[t]
        if not cands:
            continue
        for p in range(topics[t]):
            tp = (t, p)
            if tp in taken:
                continue
            m = min(cands, key=lambda x: (len(out[x]), x))
            out[m].add(tp)
            taken.add(tp)
    _balance_all(out, members, eligible)
    return out


def _balance_all(out: dict, members: dict, eligible: dict) -> None:
    for _ in range(10 * sum(len(s) for s in out.values()) + 1):
        moved = False
        for t, cands in eligible.items():
            moved |= _balance(out, cands, t)
        if not moved:
            return


def _balance(out: dict, cands: list, t) -> bool:
    """Move partitions of topic t between its eligible members while counts differ by two or more."""
    moved = False
    while len(cands) > 1:
        hi = max(cands, key=lambda x: (len(out[x]), x))
        lo = min(cands, key=lambda x: (len(out[x]), x))
        if len(out[hi]) - len(out[lo]) < 2:
            return moved
        give = [tp for tp in out[hi] if tp[0] == t]
        if not give:
            return moved
        tp = max(give, key=_tp_key)
        out[hi].discard(tp)
        out[lo].add(tp)
        moved = True
    return moved


def range_(members: dict[str, MemberSpec], topics: dict[uuid.UUID, int]) -> dict[str, set]:
    """Per topic, contiguous ranges over its subscribers in member-id order (the first
    `partitions % subscribers` get one more): co-partitioned topics line up."""
    out: dict[str, set] = {m: set() for m in members}
    for t, n in topics.items():
        subs = sorted(m for m, s in members.items() if t in s.subscribed)
        if not subs:
            continue
        for m, parts in contiguous_ranges(n, subs):
            out[m].update((t, p) for p in parts)
    return out


def _tp_key(tp):
    return (str(tp[0]), tp[1])


ASSIGNORS = {"uniform": uniform, "range": range_}
"""Every server-side assignor by the name clients ask for."""
