"""A share group's membership and its assignment (Kafka 4.4's simple share assignor, assignor.py).

Share groups have no revocation: a partition may be assigned to several
members at once (records, not partitions, are what members hold exclusively),
so a member takes its part of a new target assignment at its next heartbeat,
with the target assignment's epoch as its member epoch.
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field

from pylog.broker.groups.share.assignor import MemberSpec, assign
from pylog.broker.groups.share.javahash import JavaHashMap, JavaHashSet

log = logging.getLogger(__name__)

EMPTY, STABLE, DEAD = "Empty", "Stable", "Dead"
ASSIGNOR = "simple"


@dataclass
class ShareMember:
    """One member of a share group."""

    member_id: str
    client_id: str
    client_host: str
    rack_id: str | None
    subscribed: list
    epoch: int = 0
    assignment: dict = field(default_factory=dict)  # topic id -> sorted partitions
    sent_assignment: dict | None = None  # the assignment last sent to it
    last_seen: float = field(default_factory=time.monotonic)


class ShareGroup:
    """Members, epochs and the per-member assignment of one share group."""

    def __init__(self, group_id: str):
        self.group_id = group_id
        self.members: dict[str, ShareMember] = {}
        self.epoch = 0
        self.assignment_epoch = 0
        self.topology: tuple = ()  # the subscribed topics' (name, id, partitions) at the last bump
        self.target: dict[str, dict] = {}  # member -> its part of the target assignment
        self.target_changed: list[str] = []  # members whose part the last computation changed
        self.target_java: dict = {}  # the same as the assignor returned it (JavaHashMap per member)
        self.metadata_hash = 0  # as read back from __consumer_offsets
        self.assignment_ms = 0  # when the target assignment was last computed (its metadata record)
        self.created_ms = int(time.time() * 1000)

    @property
    def state(self) -> str:
        return STABLE if self.members else EMPTY

    def subscribed_topics(self) -> list[str]:
        """Every topic some member subscribes to, sorted."""
        return sorted({t for m in self.members.values() for t in m.subscribed})


def simple_assign(g: ShareGroup, topics: dict[str, tuple]) -> dict[str, dict]:
    """The group's new target assignment by Kafka 4.4's SimpleAssignor (assignor.py), from its
    members in join order and their previous target assignments (kept in Java's map types, so the
    next computation iterates them as Kafka would). topics: name -> (id, partitions).
    Returns member -> {topic id: sorted partitions}; AssignorError when Kafka's assignor would throw."""
    ids = {name: tid for name, (tid, _) in topics.items()}
    specs = JavaHashMap()
    for mid, m in g.members.items():
        prev = g.target_java.get(mid)
        if prev is None:  # as Assignment.fromRecord restores it: a HashMap of HashSets
            prev = JavaHashMap()
            for tid, ps in g.target.get(mid, {}).items():
                prev[tid] = JavaHashSet.of(ps)
        subscribed = [ids[n] for n in JavaHashSet.of(m.subscribed) if n in ids]
        specs[mid] = MemberSpec(subscribed, prev, named=bool(m.subscribed))
    homogeneous = len({frozenset(m.subscribed) for m in g.members.values()}) <= 1
    out = assign(specs, homogeneous, {tid: n for tid, n in topics.values()})  # AssignorError: the caller's
    g.target_java = out.to_dict()
    return {mid: {tid: sorted(ps) for tid, ps in a.items()} for mid, a in out.items()}
