"""One KIP-848 consumer group: epochs, members, target assignment and reconciliation.

The group epoch moves when membership or subscriptions change; the target
assignment is recomputed (by a server-side assignor) when the group epoch is
ahead of the assignment epoch; each member then converges on its target one
heartbeat at a time:

    STABLE                 member epoch == assignment epoch, owns its target
    UNREVOKED_PARTITIONS   must give partitions up first (epoch unchanged until it does)
    UNRELEASED_PARTITIONS  at the new epoch, waiting for others to release some of its target

A partition is handed to a member only when no other member owns it or still
has to revoke it. Pure bookkeeping: the coordinator (groups/consumer/coordinator.py)
drives it, owns the clocks and writes `__consumer_offsets`.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass, field

# group states as ListGroups / ConsumerGroupDescribe name them
EMPTY, ASSIGNING, RECONCILING, STABLE, DEAD = "Empty", "Assigning", "Reconciling", "Stable", "Dead"

# member states (Kafka's MemberState byte values, stored in CurrentMemberAssignment)
M_STABLE, M_UNREVOKED, M_UNRELEASED = 0, 1, 2

LEAVE_EPOCH = -1
LEAVE_STATIC_EPOCH = -2


@dataclass
class ConsumerMember:
    """A member of a consumer group: what it subscribes to and where it stands."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_names: list = field(default_factory=list)
    subscribed_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    epoch: int = 0
    previous_epoch: int = 0
    state: int = M_STABLE
    assigned: set = field(default_factory=set)  # {(topic_id, partition)}
    pending_revocation: set = field(default_factory=set)
    # {(topic_id, partition): the member epoch it was assigned at}, for assigned and revoking
    # partitions: a commit with an older member epoch is fine for partitions owned since then
    epochs: dict = field(default_factory=dict)
    session_deadline: float = 0.0  # monotonic seconds
    rebalance_deadline: float = 0.0  # set while UNREVOKED_PARTITIONS
    # a member speaking the classic protocol (a migrating group): {"session_timeout_ms", "protocols"}
    classic: dict | None = None
    # in memory only: may the principal of the member's last heartbeat DESCRIBE a topic (a regex
    # subscription resolves to those topics only, as Kafka's authorizer-filtered resolution)
    may_describe: object = field(default=None, compare=False, repr=False)

    def subscription(self) -> tuple:
        """What a change of bumps the group epoch."""
        return (tuple(sorted(self.subscribed_names)), self.subscribed_regex, self.server_assignor, self.rack_id)


@dataclass
class ConsumerGroup:
    """A consumer group's KIP-848 state (its committed offsets stay on the enclosing Group)."""

    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    members: dict = field(default_factory=dict)  # member_id -> ConsumerMember
    target: dict = field(default_factory=dict)  # member_id -> {(topic_id, partition)}
    # {topic name: (topic_id, partitions)} of every subscribed topic at the last epoch bump
    subscription_metadata: dict = field(default_factory=dict)
    metadata_hash: int = 0

    @property
    def state(self) -> str:
        """Empty, Assigning, Reconciling or Stable (Kafka's ConsumerGroupState)."""
        if not self.members:
            return EMPTY
        if self.epoch != self.assignment_epoch:
            return ASSIGNING
        for m in self.members.values():
            if m.epoch != self.assignment_epoch or m.state != M_STABLE:
                return RECONCILING
        return STABLE

    def static_member(self, instance_id: str | None) -> ConsumerMember | None:
        """The member holding `instance_id`, if any."""
        if instance_id is None:
            return None
        for m in self.members.values():
            if m.instance_id == instance_id:
                return m
        return None

    def owners(self) -> dict:
        """(topic_id, partition) -> member id of whoever owns it or still has to revoke it."""
        out = {}
        for m in self.members.values():
            for tp in m.assigned:
                out[tp] = m.member_id
            for tp in m.pending_revocation:
                out[tp] = m.member_id
        return out

    def preferred_assignor(self, default: str) -> str:
        """The server assignor most members ask for (ties by name); `default` when none asks."""
        votes: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor:
                votes[m.server_assignor] = votes.get(m.server_assignor, 0) + 1
        if not votes:
            return default
        return max(sorted(votes), key=lambda n: votes[n])


def reconcile(group: ConsumerGroup, m: ConsumerMember, owned: set | None) -> bool:
    """Move `m` one step toward its target (Kafka's CurrentAssignmentBuilder).

    owned: the partitions the member says it owns (None: it did not say, so it is
    assumed to still own what it must revoke). Returns True when the member's
    epoch, state or partitions changed."""
    before = (m.epoch, m.previous_epoch, m.state, frozenset(m.assigned), frozenset(m.pending_revocation))
    target_epoch = group.assignment_epoch
    if m.state == M_UNREVOKED:
        if _still_owns(owned, m.pending_revocation):
            return False
        _next(group, m, target_epoch, owned)
    elif m.state == M_UNRELEASED or m.epoch != target_epoch:
        _next(group, m, target_epoch, owned)
    after = (m.epoch, m.previous_epoch, m.state, frozenset(m.assigned), frozenset(m.pending_revocation))
    return before != after


def _still_owns(owned: set | None, revoking: set) -> bool:
    if owned is None:
        return True
    return bool(owned & revoking)


def _next(group: ConsumerGroup, m: ConsumerMember, target_epoch: int, owned: set | None) -> None:
    target = group.target.get(m.member_id, set())
    current = m.assigned
    keep = current & target
    revoke = current - target
    if revoke and _still_owns(owned, revoke):
        # give these up first: the epoch stays until the member confirms
        m.assigned = keep
        m.pending_revocation = revoke
        m.state = M_UNREVOKED
        return
    owners = group.owners()
    unreleased = False
    for tp in target - current:
        holder = owners.get(tp)
        if holder is None or holder == m.member_id:
            keep.add(tp)
            m.epochs[tp] = target_epoch  # newly assigned; kept ones keep their epoch
        else:
            unreleased = True
    m.assigned = keep
    m.pending_revocation = set()
    m.epochs = {tp: m.epochs.get(tp, target_epoch) for tp in keep}
    if m.epoch != target_epoch:
        m.previous_epoch = m.epoch
        m.epoch = target_epoch
    m.state = M_UNRELEASED if unreleased else M_STABLE


def leave_for_now(m: ConsumerMember, leave_epoch: int) -> None:
    """A static member leaving with epoch -2: what it was revoking is free for others at once,
    and what it keeps is held at epoch 0 (a commit from its next incarnation is accepted)."""
    m.epoch = leave_epoch
    m.pending_revocation = set()
    m.epochs = {tp: 0 for tp in m.assigned}


def commit_epoch_error(m: ConsumerMember, epoch: int, tps) -> bool:
    """An offset commit at `epoch`, older than the member's: refused unless each partition
    (topic_id, partition) is assigned or being revoked, at an epoch no newer than `epoch`."""
    return any(tp not in m.epochs or epoch < m.epochs[tp] for tp in tps)


def by_topic(tps) -> dict:
    """{topic_id: sorted partitions} of a set of (topic_id, partition)."""
    out: dict[uuid.UUID, list] = {}
    for t, p in tps:
        out.setdefault(t, []).append(p)
    for ps in out.values():
        ps.sort()
    return out


def from_wire(topic_partitions) -> set | None:
    """[{topic_id, partitions}] -> {(topic_id, partition)}; None stays None."""
    if topic_partitions is None:
        return None
    return {(tp["topic_id"], p) for tp in topic_partitions for p in tp["partitions"]}


def to_wire(tps) -> list:
    """{(topic_id, partition)} -> [{topic_id, partitions}] sorted by topic id."""
    return [{"topic_id": t, "partitions": ps} for t, ps in sorted(by_topic(tps).items(), key=lambda kv: str(kv[0]))]
