"""Classic and KIP-848 members in one group: online upgrade and downgrade (KIP-848's migration).

`group.consumer.migration.policy` (bidirectional, upgrade, downgrade, disabled):
- upgrade: a KIP-848 member joins a Stable classic group; every classic member
  becomes a consumer-group member that still speaks JoinGroup/SyncGroup/Heartbeat,
  keeping its partitions (its generation becomes its member epoch);
- classic members of a consumer group: JoinGroup answers at once with the member's
  epoch as generation (never as leader: the broker assigns), SyncGroup hands out
  the member's current partitions in the consumer protocol's Assignment, and
  Heartbeat answers REBALANCE_IN_PROGRESS while the member is not reconciled, so
  it rejoins and gives up (eager: everything; cooperative: what it lost) first;
- downgrade: when the last KIP-848 member leaves, the remaining classic members
  become a classic group again, which then rebalances.
"""
from __future__ import annotations

import logging
import time
import uuid

from pylog.broker.groups.classic import ClassicGroups, join_error
from pylog.broker.groups.consumer import store as cgs
from pylog.broker.groups.consumer.coordinator import ConsumerGroupCoordinator
from pylog.broker.groups import offsets_topic as ot
from pylog.broker.groups.consumer.group import M_STABLE, ConsumerGroup, ConsumerMember, by_topic, reconcile
from pylog.broker.groups.state import EMPTY, STABLE, Group, Member
from pylog.broker.groups.store import GroupStore
from pylog.core.errors import ErrorCode
from pylog.core.protocol import consumer_protocol as cp

log = logging.getLogger("pylog.broker.groups")

UPGRADE = ("bidirectional", "upgrade")
DOWNGRADE = ("bidirectional", "downgrade")


def _sync(code: int, name: str | None = None, assignment: bytes = b"") -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "protocol_type": "consumer" if not code else None,
            "protocol_name": name if not code else None, "assignment": assignment}


class Migration:
    """The classic side of consumer groups, over the two protocols' public steps: `classic`
    (finish a parked request, prepare a rebalance) and `cgc`, the ConsumerGroupCoordinator
    (write, bump the epoch, assign, fence, take over a static member)."""

    def __init__(self, classic: ClassicGroups, cgc: ConsumerGroupCoordinator, store: GroupStore, policy: str):
        self.classic = classic
        self.cgc = cgc
        self.store = store
        self.policy = policy

    # ---------------------------------------------------------------- classic -> consumer
    def can_upgrade(self, g: Group) -> bool:
        """A classic group of consumers in any state (Kafka 4.3.1 upgrades one mid-rebalance
        too), no larger than a consumer group may be, and the policy allows it."""
        return self.policy in UPGRADE and g.protocol_type == "consumer" and len(g.members) <= self.cgc.max_size

    def upgrade(self, g: Group, records: list) -> None:
        """Turn a classic group into a consumer group; its members keep their partitions. A
        rebalance under way is called off: parked JoinGroup and SyncGroup requests are answered
        REBALANCE_IN_PROGRESS, so those members join again, into the consumer group (as Kafka)."""
        for x in g.members.values():
            self.classic.finish(x, "join_waiter", join_error(x.member_id, ErrorCode.REBALANCE_IN_PROGRESS))
            self.classic.finish(x, "sync_waiter", _sync(ErrorCode.REBALANCE_IN_PROGRESS))
        cg = ConsumerGroup(g.group_id, epoch=g.generation, assignment_epoch=g.generation)
        for x in g.members.values():
            # a first rebalance has no protocol yet: the member's first choice
            sub = cp.decode_subscription(x.metadata(g.protocol_name) if g.protocol_name else x.protocols[0][1])
            asg = cp.decode_assignment(x.assignment)
            m = ConsumerMember(x.member_id, instance_id=x.group_instance_id, client_id=x.client_id,
                               client_host=x.client_host, subscribed_names=sorted(set(sub["topics"])),
                               rebalance_timeout_ms=x.rebalance_timeout_ms, epoch=g.generation,
                               previous_epoch=g.generation,
                               assigned=self.cgc.topic_ids((a["topic"], a["partitions"]) for a in asg["assigned_partitions"]))
            m.classic = {"session_timeout_ms": x.session_timeout_ms, "protocols": list(x.protocols)}
            m.session_deadline = x.deadline
            cg.members[m.member_id] = m
            cg.target[m.member_id] = set(m.assigned)
        records.append((ot.group_key(g.group_id), None))
        records.append(cgs.group_epoch_record(cg))
        for m in cg.members.values():
            records += [cgs.member_record(g.group_id, m), cgs.target_member_record(g.group_id, m.member_id, m.assigned),
                        cgs.current_assignment_record(g.group_id, m)]
        records.append(cgs.target_epoch_record(cg))
        g.members.clear()
        g.static.clear()
        g.pending.clear()
        g.leader_id = g.protocol_name = None
        g.state = EMPTY  # the classic machinery idles; the consumer group holds the members
        cg.subscription_metadata = self.cgc.subscription_metadata(cg)
        g.consumer = cg
        log.info("group %s upgraded from classic to consumer at epoch %d", g.group_id, cg.epoch)

    # ---------------------------------------------------------------- consumer -> classic
    def maybe_downgrade(self, g: Group, records: list) -> bool:
        """After a KIP-848 member left: only classic members remain -> a classic group again."""
        cg = g.consumer
        if self.policy not in DOWNGRADE or not cg.members or any(m.classic is None for m in cg.members.values()):
            return False
        if self.cgc.write(g.group_id, records + cgs.group_tombstones(cg)) != ErrorCode.NONE:
            return False  # still a consumer group; the caller's own write of `records` decides
        records.clear()
        names = {self.cgc.topic_name(t) for m in cg.members.values() for t, _ in m.assigned}
        g.consumer = None
        g.protocol_type = "consumer"
        g.generation = cg.epoch
        common = set.intersection(*[{n for n, _ in m.classic["protocols"]} for m in cg.members.values()])
        first = next(iter(cg.members.values()))
        g.protocol_name = next((n for n, _ in first.classic["protocols"] if n in common), None)
        now = time.monotonic()
        for m in cg.members.values():
            parts = [{"topic": self.cgc.topic_name(t), "partitions": ps} for t, ps in by_topic(m.assigned).items()]
            x = Member(m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                       m.classic["session_timeout_ms"], "consumer", m.classic["protocols"],
                       cp.encode_assignment({"assigned_partitions": parts, "user_data": None}), is_new=False)
            x.touch(now)
            g.members[x.member_id] = x
            if x.group_instance_id is not None:
                g.static[x.group_instance_id] = x.member_id
        g.leader_id = first.member_id
        g.state = STABLE
        self.store.store_group(g)
        self.classic.prepare_rebalance(g, now)  # the classic members rejoin under the classic protocol
        log.info("group %s downgraded from consumer to classic (%d members, topics %s)", g.group_id,
                 len(g.members), sorted(names))
        return True

    # ---------------------------------------------------------------- classic members of a consumer group
    def join(self, g: Group, req) -> dict:
        """JoinGroup from a classic member of a consumer group: answered at once."""
        cgc, cg = self.cgc, g.consumer
        if req.protocol_type != "consumer" or not req.protocols:
            return join_error(req.member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if self.policy not in UPGRADE:
            return join_error(req.member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        mid, inst = req.member_id, req.group_instance_id
        records: list = []
        if not mid:
            mid = f"{req.client_id}-{uuid.uuid4()}"
            if inst is None and req.version >= 4:
                return join_error(mid, ErrorCode.MEMBER_ID_REQUIRED)
        m = cg.members.get(mid)
        sm = cg.static_member(inst)
        if m is None and sm is not None:
            if sm.classic is None and sm.epoch != -2:
                return join_error(mid, ErrorCode.UNRELEASED_INSTANCE_ID)
            m = cgc.replace_static(cg, sm, mid, records)
        try:
            sub = cp.decode_subscription(req.protocols[0][1])
        except cp.MalformedDataError:
            return join_error(mid, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        is_new = m is None
        if is_new:
            m = ConsumerMember(mid)
        before_sub, before_desc = m.subscription(), cgs.member_description(m)
        m.instance_id = inst
        m.classic = {"session_timeout_ms": req.session_timeout_ms, "protocols": list(req.protocols)}
        m.subscribed_names = sorted(set(sub["topics"]))
        m.rebalance_timeout_ms = req.rebalance_timeout_ms
        m.client_id, m.client_host = req.client_id, req.client_host
        cg.members[mid] = m
        if is_new or cgs.member_description(m) != before_desc:
            records.append(cgs.member_record(g.group_id, m))
        if is_new or m.subscription() != before_sub or cgc.subscription_metadata(cg) != cg.subscription_metadata:
            cgc.bump_epoch(cg, records)
        if cg.epoch > cg.assignment_epoch:
            cgc.assign(cg, records)
        # a classic member rejoins having given up what it had to: it owns what it says it owns
        owned = self.cgc.topic_ids((o["topic"], o["partitions"]) for o in sub.get("owned_partitions") or ())
        reconcile(cg, m, owned)
        records.append(cgs.current_assignment_record(g.group_id, m))
        now = time.monotonic()
        m.session_deadline = now + req.session_timeout_ms / 1000.0
        m.rebalance_deadline = 0.0
        if cgc.write(g.group_id, records) != ErrorCode.NONE:
            return join_error(mid, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "generation_id": m.epoch,
                "protocol_type": "consumer", "protocol_name": req.protocols[0][0], "leader": "",
                "skip_assignment": False, "member_id": mid, "members": []}

    def _member(self, g: Group, mid: str, inst: str | None) -> tuple[ConsumerMember | None, int]:
        cg = g.consumer
        if inst is not None:
            sm = cg.static_member(inst)
            if sm is not None and sm.member_id != mid:
                return None, ErrorCode.FENCED_INSTANCE_ID
        m = cg.members.get(mid)
        if m is None or m.classic is None:
            return None, ErrorCode.UNKNOWN_MEMBER_ID
        return m, ErrorCode.NONE

    def sync(self, g: Group, req) -> dict:
        """SyncGroup: the member's current partitions in the consumer protocol's Assignment."""
        m, code = self._member(g, req.member_id, req.group_instance_id)
        if code:
            return _sync(code)
        if req.generation != m.epoch:
            return _sync(ErrorCode.ILLEGAL_GENERATION)
        m.session_deadline = time.monotonic() + m.classic["session_timeout_ms"] / 1000.0
        parts = [{"topic": self.cgc.topic_name(t), "partitions": ps} for t, ps in by_topic(m.assigned).items()]
        name = req.protocol_name or m.classic["protocols"][0][0]
        return _sync(ErrorCode.NONE, name, cp.encode_assignment({"assigned_partitions": parts, "user_data": None}))

    def heartbeat(self, g: Group, mid: str, inst: str | None, generation: int) -> int:
        """Heartbeat: REBALANCE_IN_PROGRESS until the member has reconciled with its target."""
        m, code = self._member(g, mid, inst)
        if code:
            return code
        if generation != m.epoch:
            return ErrorCode.ILLEGAL_GENERATION
        m.session_deadline = time.monotonic() + m.classic["session_timeout_ms"] / 1000.0
        cg = g.consumer
        if m.state != M_STABLE or m.epoch != cg.assignment_epoch or m.assigned != cg.target.get(mid, set()):
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(self, g: Group, mid: str, inst: str | None) -> tuple[str, int]:
        """LeaveGroup: the member goes (and the group may turn classic again)."""
        cg = g.consumer
        if inst is not None:
            sm = cg.static_member(inst)
            if sm is None:
                return mid, ErrorCode.UNKNOWN_MEMBER_ID
            if mid and sm.member_id != mid:
                return mid, ErrorCode.FENCED_INSTANCE_ID
            mid = sm.member_id
        m = cg.members.get(mid)
        if m is None:
            return mid, ErrorCode.UNKNOWN_MEMBER_ID
        records: list = []
        self.cgc.fence(g, m, records, "left")
        self.cgc.write(g.group_id, records)
        return mid, ErrorCode.NONE
