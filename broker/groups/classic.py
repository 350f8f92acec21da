"""The classic group protocol's state machine: JoinGroup, SyncGroup, Heartbeat, LeaveGroup.

Membership and rebalances of classic groups (groups/state.py holds one group's
bookkeeping). The group coordinator (groups/coordinator.py) routes a request
here once it knows the group is a classic one; groups/migration.py uses the two
public steps, finish() and prepare_rebalance(), when a group changes protocol.

Everything runs on the broker's event loop thread: JoinGroup and SyncGroup
park an asyncio future per member and answer when the rebalance moves on; the
coordinator's 100 ms ticker calls tick() to expire sessions and give up on
members that do not rejoin within the rebalance timeout; the first rebalance of
a new group waits `group.initial.rebalance.delay.ms` (extended while members
keep arriving, up to the rebalance timeout) so a fleet starting together lands
in one generation.
"""
from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Awaitable, NamedTuple, Union

from pylog.broker.groups.state import COMPLETING, EMPTY, PREPARING, STABLE, Group, Member
from pylog.broker.groups.store import GroupStore
from pylog.core.errors import ErrorCode

log = logging.getLogger("pylog.broker.groups")

Answer = Union[dict, Awaitable[dict]]


class JoinRequest(NamedTuple):
    """A JoinGroup request's fields, plus who sent it."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    session_timeout_ms: int
    rebalance_timeout_ms: int
    protocol_type: str
    protocols: list  # [(name, metadata bytes)] in the member's preference order
    client_id: str
    client_host: str
    version: int


class SyncRequest(NamedTuple):
    """A SyncGroup request's fields; `assignments` matter only from the leader."""

    group_id: str
    member_id: str
    group_instance_id: str | None
    generation: int
    protocol_type: str | None
    protocol_name: str | None
    assignments: dict  # member_id -> assignment bytes


def join_error(member_id: str, code: int) -> dict:
    """A JoinGroup answer that carries only an error (and the member id, for MEMBER_ID_REQUIRED)."""
    return {"throttle_time_ms": 0, "error_code": code, "generation_id": -1, "protocol_type": None,
            "protocol_name": None, "leader": "", "skip_assignment": False, "member_id": member_id,
            "members": []}


def sync_answer(g: Group | None, code: int, assignment: bytes = b"") -> dict:
    """A SyncGroup answer; the group's protocol is named only on success."""
    return {"throttle_time_ms": 0, "error_code": code,
            "protocol_type": g.protocol_type if g and not code else None,
            "protocol_name": g.protocol_name if g and not code else None, "assignment": assignment}


class ClassicGroups:
    """The classic protocol over the coordinator's `groups` (those whose `consumer` is None)."""

    def __init__(self, groups: dict[str, Group], store: GroupStore, config):
        self.groups = groups
        self.store = store
        self.initial_delay_ms = config["group.initial.rebalance.delay.ms"]
        self.max_size = config["group.max.size"]
        # set by the coordinator's start(): delays end exactly on time through the loop
        self.loop: asyncio.AbstractEventLoop | None = None

    def tick(self, now: float) -> None:
        """Expire sessions and pending member ids; give up on slow joins and syncs."""
        for g in list(self.groups.values()):
            for mid, dl in list(g.pending.items()):
                if now >= dl:
                    del g.pending[mid]
                    if g.is_(PREPARING):
                        self._maybe_complete_join(g, now)
            for m in list(g.members.values()):
                if not m.awaiting and now >= m.deadline and g.is_(STABLE, COMPLETING, PREPARING):
                    log.info("group %s: member %s session expired", g.group_id, m.member_id)
                    self._remove_member(g, m.member_id, now)
            if g.is_(PREPARING):
                self._maybe_complete_join(g, now)
            elif g.is_(COMPLETING) and now >= g.sync_deadline:
                # the leader never sent its assignment: members who did not sync are gone
                for m in list(g.members.values()):
                    if m.sync_waiter is None or m.sync_waiter.done():
                        g.remove_member(m.member_id)
                self.prepare_rebalance(g, now)

    # ================================================================ rebalancing
    def prepare_rebalance(self, g: Group, now: float) -> None:
        """Move `g` to PreparingRebalance: every member must join again (the first rebalance
        of an empty group waits the initial delay)."""
        if g.is_(COMPLETING):
            # a member changed while the leader was assigning: everyone rejoins
            for m in g.members.values():
                self.finish(m, "sync_waiter", sync_answer(g, ErrorCode.REBALANCE_IN_PROGRESS))
                m.assignment = b""
        if g.is_(EMPTY):
            delay = self.initial_delay_ms / 1000.0
            g.initial_delay_until = now + delay
            g.initial_delay_limit = now + g.max_rebalance_timeout_ms() / 1000.0
            g.new_member_added = False
            self._wake_at(g, g.initial_delay_until)
        else:
            g.initial_delay_until = 0.0
        if not g.is_(PREPARING):
            g.transition(PREPARING)
        g.join_deadline = now + g.max_rebalance_timeout_ms() / 1000.0
        log.debug("group %s preparing rebalance (generation %d)", g.group_id, g.generation)
        self._maybe_complete_join(g, now)  # e.g. the last member left: nobody to wait for

    def _maybe_complete_join(self, g: Group, now: float) -> None:
        if not g.is_(PREPARING):
            return
        if g.initial_delay_until:
            if now < g.initial_delay_until:
                return
            if g.new_member_added and now < g.initial_delay_limit:
                # members are still arriving: wait one more delay (bounded by the rebalance timeout)
                g.new_member_added = False
                g.initial_delay_until = min(now + self.initial_delay_ms / 1000.0, g.initial_delay_limit)
                if now < g.initial_delay_until:
                    self._wake_at(g, g.initial_delay_until)
                    return
            g.initial_delay_until = 0.0
        if not g.all_joined() and now < g.join_deadline:
            return
        self._complete_join(g, now)

    def _wake_at(self, g: Group, when: float) -> None:
        """Re-check the join exactly when a delay ends (the ticker alone would add up to TICK_S)."""
        if self.loop is not None:
            self.loop.call_later(max(0.0, when - time.monotonic()),
                                 lambda: self._maybe_complete_join(g, time.monotonic()))

    def _complete_join(self, g: Group, now: float) -> None:
        for m in list(g.members.values()):
            if m.join_waiter is None:
                log.info("group %s: member %s did not rejoin in time", g.group_id, m.member_id)
                g.remove_member(m.member_id)
        g.pending.clear()
        g.generation += 1
        if not g.members:
            g.protocol_name = None
            g.leader_id = None
            g.transition(EMPTY)
            self.store.store_group(g)
            log.info("group %s is empty (generation %d)", g.group_id, g.generation)
            return
        g.protocol_name = g.select_protocol()
        if g.leader_id not in g.members:
            g.leader_id = next(iter(g.members))
        g.transition(COMPLETING)
        g.sync_deadline = now + g.max_rebalance_timeout_ms() / 1000.0
        log.info("group %s: generation %d with %d members, protocol %s", g.group_id, g.generation,
                 len(g.members), g.protocol_name)
        for m in g.members.values():
            m.touch(now)
            m.is_new = False
            self.finish(m, "join_waiter", self._join_answer(g, m))

    @staticmethod
    def _join_answer(g: Group, m: Member, code: int = ErrorCode.NONE, *, as_follower: bool = False,
                     skip_assignment: bool = False) -> dict:
        members = []
        if m.member_id == g.leader_id and not as_follower:
            members = [{"member_id": x.member_id, "group_instance_id": x.group_instance_id,
                        "metadata": x.metadata(g.protocol_name)} for x in g.members.values()]
        return {"throttle_time_ms": 0, "error_code": code, "generation_id": g.generation,
                "protocol_type": g.protocol_type, "protocol_name": g.protocol_name,
                "leader": g.leader_id or "", "skip_assignment": skip_assignment, "member_id": m.member_id,
                "members": members}

    @staticmethod
    def finish(m: Member, attr: str, response: dict) -> None:
        """Answer a member's parked JoinGroup (`attr` "join_waiter") or SyncGroup ("sync_waiter")."""
        fut = getattr(m, attr)
        setattr(m, attr, None)
        if fut is not None and not fut.done():
            fut.set_result(response)

    def _remove_member(self, g: Group, member_id: str, now: float) -> None:
        m = g.remove_member(member_id)
        if m is None:
            return
        self.finish(m, "join_waiter", join_error(member_id, ErrorCode.UNKNOWN_MEMBER_ID))
        self.finish(m, "sync_waiter", sync_answer(g, ErrorCode.UNKNOWN_MEMBER_ID))
        if g.is_(STABLE, COMPLETING):
            self.prepare_rebalance(g, now)
        elif g.is_(PREPARING):
            self._maybe_complete_join(g, now)

    @staticmethod
    async def _wait(fut) -> dict:
        # shield: a closed connection cancels the request task, not the member's waiter
        return await asyncio.shield(fut)

    # ================================================================ JoinGroup
    def join(self, g: Group, req: JoinRequest, now: float) -> Answer:
        """Add or re-add a member of classic group `g`; the answer comes when the rebalance completes."""
        member_id, inst, session = req.member_id, req.group_instance_id, req.session_timeout_ms
        if not g.supports(req.protocol_type, req.protocols):
            return join_error(member_id, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        fut = asyncio.get_running_loop().create_future()

        def new_member(mid):
            return Member(mid, inst, req.client_id, req.client_host, req.rebalance_timeout_ms, session,
                          req.protocol_type, req.protocols, join_waiter=fut)

        if not member_id:
            if inst is not None and inst in g.static:
                return self._static_rejoin(g, inst, new_member, fut, now, req.version)
            if len(g.members) + len(g.pending) >= self.max_size:
                return join_error(member_id, ErrorCode.GROUP_MAX_SIZE_REACHED)
            mid = f"{req.client_id}-{uuid.uuid4()}"
            if inst is None and req.version >= 4:
                # KIP-394: the member must come back with this id, so a lost response cannot leak members
                g.pending[mid] = now + session / 1000.0
                return join_error(mid, ErrorCode.MEMBER_ID_REQUIRED)
            self._add_and_rebalance(g, new_member(mid), now)
            return self._wait(fut)
        if member_id in g.pending:
            del g.pending[member_id]
            self._add_and_rebalance(g, new_member(member_id), now)
            return self._wait(fut)
        m = g.members.get(member_id)
        if inst is not None and g.static.get(inst) not in (None, member_id):
            return join_error(member_id, ErrorCode.FENCED_INSTANCE_ID)
        if m is None:
            return join_error(member_id, ErrorCode.UNKNOWN_MEMBER_ID)
        # a known member rejoins
        same = m.same_protocols(req.protocols)
        m.protocols, m.session_timeout_ms, m.rebalance_timeout_ms = req.protocols, session, req.rebalance_timeout_ms
        m.client_id, m.client_host = req.client_id, req.client_host
        m.touch(now)
        if g.is_(COMPLETING) and same:
            return self._join_answer(g, m)  # a retry: nothing changed
        if g.is_(STABLE) and same and member_id != g.leader_id:
            return self._join_answer(g, m)
        self.finish(m, "join_waiter", join_error(member_id, ErrorCode.UNKNOWN_MEMBER_ID))  # a duplicate join
        m.join_waiter = fut
        if not g.is_(PREPARING):
            self.prepare_rebalance(g, now)
        self._maybe_complete_join(g, now)
        return self._wait(fut)

    def _add_and_rebalance(self, g: Group, m: Member, now: float) -> None:
        m.touch(now)
        g.add_member(m)
        if g.initial_delay_until:
            g.new_member_added = True
            g.initial_delay_limit = max(g.initial_delay_limit, now + m.rebalance_timeout_ms / 1000.0)
        if not g.is_(PREPARING):
            self.prepare_rebalance(g, now)
        self._maybe_complete_join(g, now)

    def _static_rejoin(self, g: Group, inst: str, new_member, fut, now: float, version: int) -> Answer:
        """A static member restarted (unknown member id, known instance id): it takes over its
        old identity under a new member id; the old id is fenced. In a Stable group with
        unchanged protocols nothing is reassigned: the member gets the current generation and
        its old assignment through SyncGroup. A returning leader gets the member list with
        skip_assignment (KIP-814, v9+) or, before v9, a follower's answer."""
        old_id = g.static[inst]
        fresh = new_member(f"{inst}-{uuid.uuid4()}")
        old = g.members[old_id]
        self.finish(old, "join_waiter", join_error(old_id, ErrorCode.FENCED_INSTANCE_ID))
        self.finish(old, "sync_waiter", sync_answer(g, ErrorCode.FENCED_INSTANCE_ID))
        same = old.same_protocols(fresh.protocols)
        m = g.replace_static_member(inst, fresh.member_id)
        m.protocols, m.session_timeout_ms, m.rebalance_timeout_ms = fresh.protocols, fresh.session_timeout_ms, \
            fresh.rebalance_timeout_ms
        m.client_id, m.client_host = fresh.client_id, fresh.client_host
        m.touch(now)
        if g.is_(STABLE) and same:
            if m.member_id == g.leader_id and version >= 9:
                return self._join_answer(g, m, skip_assignment=True)
            return self._join_answer(g, m, as_follower=True)
        m.join_waiter = fut
        if not g.is_(PREPARING):
            self.prepare_rebalance(g, now)
        self._maybe_complete_join(g, now)
        return self._wait(fut)

    # ================================================================ SyncGroup
    def sync(self, g: Group, req: SyncRequest) -> Answer:
        """Hand out the leader's assignment; members wait for it while the group completes."""
        mid, inst = req.member_id, req.group_instance_id
        if inst is not None and g.static.get(inst) not in (None, mid):
            return sync_answer(None, ErrorCode.FENCED_INSTANCE_ID)
        m = g.members.get(mid)
        if m is None:
            return sync_answer(None, ErrorCode.UNKNOWN_MEMBER_ID)
        if req.generation != g.generation:
            return sync_answer(None, ErrorCode.ILLEGAL_GENERATION)
        ptype, pname = req.protocol_type, req.protocol_name
        if (ptype is not None and ptype != g.protocol_type) or (pname is not None and pname != g.protocol_name):
            return sync_answer(None, ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        now = time.monotonic()
        m.touch(now)
        if g.is_(PREPARING):
            return sync_answer(None, ErrorCode.REBALANCE_IN_PROGRESS)
        if g.is_(STABLE):
            return sync_answer(g, ErrorCode.NONE, m.assignment)
        # CompletingRebalance
        fut = asyncio.get_running_loop().create_future()
        self.finish(m, "sync_waiter", sync_answer(None, ErrorCode.REBALANCE_IN_PROGRESS))
        m.sync_waiter = fut
        if mid == g.leader_id:
            for x in g.members.values():
                x.assignment = req.assignments.get(x.member_id, b"")
            code = self.store.store_group(g)
            if code != ErrorCode.NONE:
                for x in g.members.values():
                    x.assignment = b""
                    self.finish(x, "sync_waiter", sync_answer(None, code))
                self.prepare_rebalance(g, now)
            else:
                g.transition(STABLE)
                log.info("group %s stable at generation %d", g.group_id, g.generation)
                for x in g.members.values():
                    x.touch(now)
                    self.finish(x, "sync_waiter", sync_answer(g, ErrorCode.NONE, x.assignment))
        return self._wait(fut)

    # ================================================================ Heartbeat, LeaveGroup
    def heartbeat(self, g: Group, member_id: str, instance_id: str | None, generation: int) -> int:
        """Keep a member's session alive; the error code tells it to rejoin or stop."""
        if instance_id is not None and g.static.get(instance_id) not in (None, member_id):
            return ErrorCode.FENCED_INSTANCE_ID
        m = g.members.get(member_id)
        if m is None or g.is_(EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if g.is_(PREPARING):
            m.touch()
            return ErrorCode.REBALANCE_IN_PROGRESS
        if generation != g.generation:
            return ErrorCode.ILLEGAL_GENERATION
        m.touch()
        return ErrorCode.NONE

    def leave(self, g: Group, member_id: str, instance_id: str | None) -> tuple[str, int]:
        """Remove one member (by member id, or by instance id for static members).
        Returns the member id it concerned and an error code."""
        now = time.monotonic()
        mid = member_id
        if instance_id is not None:
            cur = g.static.get(instance_id)
            if cur is None:
                return mid, ErrorCode.UNKNOWN_MEMBER_ID
            if mid and mid != cur:
                return mid, ErrorCode.FENCED_INSTANCE_ID
            mid = cur
        elif mid in g.pending:
            del g.pending[mid]
            self._maybe_complete_join(g, now)
        elif mid not in g.members:
            return mid, ErrorCode.UNKNOWN_MEMBER_ID
        if mid in g.members:
            log.info("group %s: member %s left", g.group_id, mid)
            self._remove_member(g, mid, now)
        return mid, ErrorCode.NONE