"""One consumer group's state: members, generation, the state machine, committed offsets.

States and the transitions Kafka's classic group coordinator allows:

    Empty --join--> PreparingRebalance --all joined / timeout--> CompletingRebalance
    CompletingRebalance --leader's SyncGroup--> Stable
    Stable / CompletingRebalance --join, leave, member expiry--> PreparingRebalance
    PreparingRebalance --every member gone--> Empty
    any --delete / offsets expired--> Dead

Pure bookkeeping; the coordinator drives it, owns the timers and writes
`__consumer_offsets`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

EMPTY = "Empty"
PREPARING = "PreparingRebalance"
COMPLETING = "CompletingRebalance"
STABLE = "Stable"
DEAD = "Dead"

VALID_PREVIOUS = {
    PREPARING: {STABLE, COMPLETING, EMPTY},
    COMPLETING: {PREPARING},
    STABLE: {COMPLETING},
    EMPTY: {PREPARING},
    DEAD: {STABLE, PREPARING, COMPLETING, EMPTY, DEAD},
}


class IllegalStateTransition(Exception):
    """A transition the state table does not allow: a coordinator bug."""


@dataclass
class OffsetEntry:
    """One committed offset of a group for one partition."""

    offset: int
    leader_epoch: int
    metadata: str
    commit_ts: int  # ms


@dataclass
class MemberIdentity:
    """Who a member is and its timeouts: what the live member and its stored form share."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int


@dataclass
class Member(MemberIdentity):
    """One group member: identity, timeouts, protocols, assignment and its parked requests."""

    protocol_type: str
    protocols: list  # [(name, metadata bytes)] in the member's preference order
    assignment: bytes = b""
    join_waiter: object = None  # asyncio.Future of the parked JoinGroup
    sync_waiter: object = None  # asyncio.Future of the parked SyncGroup
    deadline: float = 0.0  # monotonic seconds: session expiry
    is_new: bool = True

    def metadata(self, protocol: str) -> bytes:
        """The member's metadata (subscription) for `protocol`, empty if it has none."""
        for name, md in self.protocols:
            if name == protocol:
                return md
        return b""

    def vote(self, candidates: set) -> str:
        """The member's most preferred protocol among `candidates`."""
        for name, _ in self.protocols:
            if name in candidates:
                return name
        raise ValueError("member supports none of the candidate protocols")

    def same_protocols(self, protocols) -> bool:
        """True when a rejoin brings exactly the protocols (and metadata) the member had."""
        return [(n, bytes(m)) for n, m in self.protocols] == [(n, bytes(m)) for n, m in protocols]

    def touch(self, now: float | None = None) -> None:
        """A sign of life: the session expires session_timeout_ms from now."""
        self.deadline = (now if now is not None else time.monotonic()) + self.session_timeout_ms / 1000.0

    @property
    def awaiting(self) -> bool:
        """A member parked in JoinGroup or SyncGroup is not expired (Kafka keeps it alive)."""
        return (self.join_waiter is not None and not self.join_waiter.done()) or \
            (self.sync_waiter is not None and not self.sync_waiter.done())


@dataclass
class Group:
    """One consumer group: state, generation, members, pending joins and committed offsets."""

    group_id: str
    state: str = EMPTY
    protocol_type: str | None = None
    protocol_name: str | None = None
    generation: int = 0
    leader_id: str | None = None
    members: dict = field(default_factory=dict)  # member_id -> Member
    static: dict = field(default_factory=dict)  # group.instance.id -> member_id
    pending: dict = field(default_factory=dict)  # member ids handed out by MEMBER_ID_REQUIRED -> deadline
    offsets: dict = field(default_factory=dict)  # (topic, partition) -> OffsetEntry
    state_ts: int = field(default_factory=lambda: int(time.time() * 1000))
    join_deadline: float = 0.0  # PreparingRebalance: give up waiting for members
    sync_deadline: float = 0.0  # CompletingRebalance: give up waiting for the leader
    initial_delay_until: float = 0.0  # group.initial.rebalance.delay.ms window of a new group
    initial_delay_limit: float = 0.0
    new_member_added: bool = False
    consumer: object = None  # a ConsumerGroup (groups/consumer/group.py) when the group speaks KIP-848
    streams: object = None  # a StreamsGroup (groups/streams/group.py) when the group speaks KIP-1071

    def transition(self, new: str) -> None:
        """Move to state `new` (raises IllegalStateTransition when the table forbids it)."""
        if self.state not in VALID_PREVIOUS[new]:
            raise IllegalStateTransition(f"group {self.group_id}: {self.state} -> {new}")
        self.state = new
        self.state_ts = int(time.time() * 1000)

    def is_(self, *states) -> bool:
        """True when the group is in one of `states`."""
        return self.state in states

    def has_member(self, member_id: str) -> bool:
        """True when `member_id` is a current member."""
        return member_id in self.members

    def max_rebalance_timeout_ms(self) -> int:
        """How long a rebalance may wait for members: the largest of their timeouts."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def supports(self, protocol_type: str, protocols: list) -> bool:
        """An empty group accepts any non-empty protocol list; otherwise the type must
        match and at least one protocol must be shared with every member."""
        if not protocol_type or not protocols:
            return False
        if not self.members:
            return True
        if protocol_type != self.protocol_type:
            return False
        names = {n for n, _ in protocols}
        return bool(names & self.candidate_protocols())

    def candidate_protocols(self) -> set:
        """Protocols every member supports."""
        sets = [{n for n, _ in m.protocols} for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def select_protocol(self) -> str:
        """Each member votes for its most preferred candidate; most votes wins (ties: by name)."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise ValueError("no protocol common to all members")
        votes: dict[str, int] = {}
        for m in self.members.values():
            v = m.vote(candidates)
            votes[v] = votes.get(v, 0) + 1
        return max(sorted(votes), key=lambda n: votes[n])

    def all_joined(self) -> bool:
        """Every member has (re)joined this rebalance and no member id is pending."""
        return not self.pending and all(
            m.join_waiter is not None for m in self.members.values())

    def add_member(self, m: Member) -> None:
        """Add a member; the first one sets the protocol type and leads."""
        if not self.members:
            self.protocol_type = m.protocol_type
        self.members[m.member_id] = m
        if m.group_instance_id is not None:
            self.static[m.group_instance_id] = m.member_id
        if self.leader_id is None:
            self.leader_id = m.member_id
        self.new_member_added = True

    def remove_member(self, member_id: str) -> Member | None:
        """Remove a member (a new leader is picked if it led); None if unknown."""
        m = self.members.pop(member_id, None)
        if m is None:
            return None
        if m.group_instance_id is not None and self.static.get(m.group_instance_id) == member_id:
            del self.static[m.group_instance_id]
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        if not self.members:
            self.protocol_type = self.protocol_type  # kept for describe until the next generation
        return m

    def replace_static_member(self, instance_id: str, new_id: str) -> Member:
        """A static member came back: its member keeps everything under `new_id`."""
        old_id = self.static[instance_id]
        m = self.members.pop(old_id)
        m.member_id = new_id
        self.members[new_id] = m
        self.static[instance_id] = new_id
        if self.leader_id == old_id:
            self.leader_id = new_id
        return m

    def subscribed_topics(self) -> set | None:
        """Topics the members subscribe to (consumer protocol), None when unknown."""
        if self.protocol_type != "consumer" or not self.protocol_name:
            return None
        from pylog.core.client.subscription import decode_subscription

        topics: set = set()
        for m in self.members.values():
            try:
                topics.update(decode_subscription(m.metadata(self.protocol_name)).topics)
            except Exception:  # noqa: BLE001 - unreadable metadata: we cannot tell
                return None
        return topics
