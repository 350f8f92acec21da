"""One streams group (KIP-1071): topology, members, target assignment and reconciliation.

Tasks are (subtopology id, partition) pairs in three roles: active, standby and warm-up.
The group epoch moves when membership, a member's metadata, the topology or the
topics it reads and writes change; the target assignment is recomputed by the task
assignor at the group epoch; each member converges on its target one heartbeat at a
time, as Kafka's CurrentAssignmentBuilder does:

    STABLE             member epoch == assignment epoch, owns its target
    UNREVOKED_TASKS    must give tasks up first (epoch unchanged until it does)
    UNRELEASED_TASKS   at the new epoch, waiting for another member to release an active task

Pure bookkeeping: the coordinator (groups/streams/coordinator.py) drives it, owns the
clocks and writes `__consumer_offsets`.
"""
from __future__ import annotations

from dataclasses import dataclass, field

# group states as ListGroups / StreamsGroupDescribe name them (Kafka's StreamsGroupState)
EMPTY, NOT_READY, ASSIGNING, RECONCILING, STABLE, DEAD = (
    "Empty", "NotReady", "Assigning", "Reconciling", "Stable", "Dead")
# member states (Kafka's MemberState bytes, stored in CurrentMemberAssignment)
M_STABLE, M_UNREVOKED, M_UNRELEASED = 0, 1, 2
LEAVE_EPOCH, LEAVE_STATIC_EPOCH = -1, -2
ROLES = ("active", "standby", "warmup")


def empty_tasks() -> dict:
    """{role: set((subtopology, partition))} with nothing in it."""
    return {r: set() for r in ROLES}


def tasks_from_wire(wire) -> set:
    """{(subtopology, partition)} of [{subtopology_id, partitions}] (None -> empty)."""
    return {(t["subtopology_id"], p) for t in wire or () for p in t["partitions"]}


def tasks_to_wire(tasks) -> list:
    """[{subtopology_id, partitions}] sorted by subtopology, partitions ascending."""
    by: dict = {}
    for s, p in tasks:
        by.setdefault(s, []).append(p)
    return [{"subtopology_id": s, "partitions": sorted(ps)} for s, ps in sorted(by.items())]


@dataclass
class StreamsMember:
    """A member of a streams group: who it is, where it stands and what it reports."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = -1
    topology_epoch: int = 0
    process_id: str = ""
    user_endpoint: tuple | None = None  # (host, port) for interactive queries
    client_tags: dict = field(default_factory=dict)
    epoch: int = 0
    previous_epoch: int = 0
    state: int = M_STABLE
    assigned: dict = field(default_factory=empty_tasks)
    pending_revocation: dict = field(default_factory=empty_tasks)
    task_offsets: dict = field(default_factory=dict)  # {(subtopology, partition): offset}, in memory
    task_end_offsets: dict = field(default_factory=dict)
    session_deadline: float = 0.0  # monotonic seconds
    rebalance_deadline: float = 0.0  # set while UNREVOKED_TASKS
    is_classic: bool = False

    def description(self) -> tuple:
        """What StreamsGroupMemberMetadata holds: a change rewrites it and bumps the group epoch."""
        return (self.instance_id, self.rack_id, self.client_id, self.client_host, self.rebalance_timeout_ms,
                self.topology_epoch, self.process_id, self.user_endpoint, tuple(sorted(self.client_tags.items())))

    def metadata_for_epoch(self) -> tuple:
        """The metadata whose change bumps the group epoch (Kafka leaves client id/host and timeouts out)."""
        return (self.instance_id, self.rack_id, self.topology_epoch, self.process_id, self.user_endpoint,
                tuple(sorted(self.client_tags.items())))


@dataclass
class StreamsGroup:
    """A streams group's KIP-1071 state (its committed offsets stay on the enclosing Group)."""

    group_id: str
    epoch: int = 0
    assignment_epoch: int = 0
    metadata_hash: int = 0
    validated_topology_epoch: int = -1
    topology: dict | None = None  # the StreamsGroupTopology value (epoch, subtopologies)
    members: dict = field(default_factory=dict)  # member_id -> StreamsMember
    target: dict = field(default_factory=dict)  # member_id -> {role: tasks}
    last_assignment_configs: dict = field(default_factory=dict)
    endpoint_epoch: int = 0
    # in memory: the configured topology (partitions per subtopology) and its missing topics
    partitions: dict = field(default_factory=dict)  # subtopology -> number of tasks
    stateful: set = field(default_factory=set)
    missing_topics: dict = field(default_factory=dict)  # name -> (partitions, configs)
    creation_errors: dict = field(default_factory=dict)  # topic -> message
    missing_sources: list = field(default_factory=list)
    created_at: float = 0.0  # monotonic: the initial rebalance delay runs from here
    last_assigned_at: float = 0.0
    description: dict | None = None  # KIP-1331: the uploaded topology description
    description_epoch: int = -1

    @property
    def ready(self) -> bool:
        """The topology is configured: every topic exists with its partitions."""
        return self.topology is not None and not self.missing_topics and not self.missing_sources

    @property
    def state(self) -> str:
        """Kafka's StreamsGroupState name."""
        if not self.members:
            return EMPTY
        if not self.ready:
            return NOT_READY
        if self.assignment_epoch != self.epoch:
            return ASSIGNING
        if any(m.epoch != self.assignment_epoch or m.state != M_STABLE for m in self.members.values()):
            return RECONCILING
        return STABLE

    def static_member(self, instance_id: str | None) -> StreamsMember | None:
        """The member holding a group.instance.id, if any."""
        if instance_id is None:
            return None
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    def owners(self, role: str, exclude: str) -> dict:
        """{task: member id} of tasks another member owns or still has to revoke in `role`."""
        out = {}
        for mid, m in self.members.items():
            if mid != exclude:
                for t in m.assigned[role] | m.pending_revocation[role]:
                    out[t] = mid
        return out


def reconcile(g: StreamsGroup, m: StreamsMember, owned: dict | None, now: float) -> bool:
    """Move `m` one step toward its target; `owned` is what the heartbeat says it owns ({role:
    tasks}, None when not sent). True when its epoch, state or tasks changed."""
    before = (m.epoch, m.previous_epoch, m.state, {r: set(t) for r, t in m.assigned.items()},
              {r: set(t) for r, t in m.pending_revocation.items()})
    target = g.target.get(m.member_id) or empty_tasks()
    if m.state == M_UNREVOKED:
        if owned is None or any(owned[r] & m.pending_revocation[r] for r in ROLES):
            return False
        m.pending_revocation = empty_tasks()
    if m.epoch == g.assignment_epoch and m.state == M_STABLE:
        return False
    revoke = {r: m.assigned[r] - target[r] for r in ROLES}
    if any(revoke.values()):
        for r in ROLES:
            m.assigned[r] = m.assigned[r] & target[r]
        m.pending_revocation = revoke
        m.state = M_UNREVOKED
        m.rebalance_deadline = now + max(m.rebalance_timeout_ms, 0) / 1000.0
    else:
        active_owner = g.owners("active", m.member_id)
        same_process = {mid for mid, o in g.members.items() if o.process_id == m.process_id and mid != m.member_id}
        held = False
        for r in ROLES:
            for t in target[r] - m.assigned[r]:
                owner = active_owner.get(t)
                if owner is not None and (r == "active" or owner in same_process):
                    held = True
                    continue
                m.assigned[r].add(t)
        if m.epoch != g.assignment_epoch:
            m.previous_epoch, m.epoch = m.epoch, g.assignment_epoch
        m.state = M_UNRELEASED if held else M_STABLE
    after = (m.epoch, m.previous_epoch, m.state, m.assigned, m.pending_revocation)
    return before != after
