"""A share group's membership and its assignment (Kafka's simple share assignor).

Share groups have no revocation: a partition may be assigned to several
members at once (records, not partitions, are what members hold exclusively),
so a member takes its part of a new target assignment at its next heartbeat,
with the target assignment's epoch as its member epoch.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

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
        self.metadata_hash = 0  # as read back from __consumer_offsets
        self.created_ms = int(time.time() * 1000)

    @property
    def state(self) -> str:
        return STABLE if self.members else EMPTY

    def subscribed_topics(self) -> list[str]:
        """Every topic some member subscribes to, sorted."""
        return sorted({t for m in self.members.values() for t in m.subscribed})


def simple_assign(members: dict[str, ShareMember], topics: dict[str, tuple]) -> dict[str, dict]:
    """Kafka's simple share assignor for members that may subscribe differently: per topic, its
    partitions spread over the members subscribing to it; with fewer partitions than members, each
    member still gets one (a partition then has several members). topics: name -> (id, partitions)."""
    out: dict[str, dict] = {m: {} for m in members}
    for name in sorted(topics):
        tid, n = topics[name]
        subs = sorted(m for m, mem in members.items() if name in mem.subscribed)
        if not subs or n <= 0:
            continue
        if len(subs) <= n:
            for p in range(n):
                out[subs[p % len(subs)]].setdefault(tid, []).append(p)
        else:
            for i, m in enumerate(subs):
                out[m].setdefault(tid, []).append(i % n)
    for a in out.values():
        for tid in a:
            a[tid].sort()
    return out
