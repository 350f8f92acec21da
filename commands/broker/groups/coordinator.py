"""The group coordinator: Kafka's classic consumer-group protocol on one node.

This module is the state machine's driver: membership (JoinGroup, SyncGroup,
Heartbeat, LeaveGroup), rebalances, session expiry, offset commits and
expiration. groups/state.py holds one group's bookkeeping, groups/store.py the
records in `__consumer_offsets`, api/groups.py turns requests into calls here.

Everything runs on the broker's event loop thread: JoinGroup and SyncGroup
park an asyncio future per member and answer when the rebalance moves on; a
100 ms ticker expires sessions and gives up on members that do not rejoin
within the rebalance timeout; the first rebalance of a new group waits
`group.initial.rebalance.delay.ms` (extended while members keep arriving, up to
the rebalance timeout) so a fleet starting together lands in one generation.
"""
from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Awaitable, NamedTuple, Union

from pylog.commands.broker.groups.consumer.coordinator import ConsumerGroupCoordinator
from pylog.commands.broker.groups.state import (
    COMPLETING,
    DEAD,
    EMPTY,
    PREPARING,
    STABLE,
    Group,
    Member,
    OffsetEntry,
)
from pylog.commands.broker.groups import offsets_topic as ot
from pylog.commands.broker.groups.store import GroupStore, now_ms
from pylog.core.errors import ErrorCode

log = logging.getLogger("pylog.broker.groups")

TICK_S = 0.1
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


class GroupCoordinator:
    """Every consumer group of this broker: membership, rebalances and committed offsets.

    Lifecycle (driven by Broker): load() replays `__consumer_offsets`, start(loop)
    starts the session/rebalance ticker and offset expiration, stop() cancels them.
    """

    def __init__(self, broker):
        self.broker = broker
        cfg = broker.config
        self.groups: dict[str, Group] = {}
        self.store = GroupStore(broker)
        self.initial_delay_ms = cfg["group.initial.rebalance.delay.ms"]
        self.min_session = cfg["group.min.session.timeout.ms"]
        self.max_session = cfg["group.max.session.timeout.ms"]
        self.max_size = cfg["group.max.size"]
        self.retention_ms = cfg["offsets.retention.minutes"] * 60000
        self.retention_check_s = cfg["offsets.retention.check.interval.ms"] / 1000.0
        self.metadata_max = cfg["offset.metadata.max.bytes"]
        self.loop: asyncio.AbstractEventLoop | None = None
        self._ticker: asyncio.TimerHandle | None = None
        self._retention_timer: asyncio.TimerHandle | None = None
        self._stopped = False
        self.consumer = ConsumerGroupCoordinator(self)  # KIP-848 groups share `groups` and the store
        # offsets of open transactions (TxnOffsetCommit): producer id -> group -> {(topic, p): OffsetEntry}
        self.txn_offsets: dict[int, dict[str, dict]] = {}

    # ================================================================ lifecycle
    def load(self) -> None:
        """Rebuild every group from `__consumer_offsets` (before the broker listens)."""
        open_txns: dict[int, list] = {}
        self.store.load(self.groups, open_txns)
        for pid, records in open_txns.items():
            for k, v in records:
                try:
                    rec = ot.parse_record(bytes(k), None if v is None else bytes(v))
                except Exception as e:  # noqa: BLE001 - one bad record must not stop the load
                    log.warning("skipping unreadable transactional offset record: %s", e)
                    continue
                if isinstance(rec, ot.OffsetRecord) and rec.value is not None:
                    self.txn_offsets.setdefault(pid, {}).setdefault(rec.group, {})[
                        (rec.topic, rec.partition)] = OffsetEntry(*rec.value)
        self.consumer.after_load(time.monotonic())

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the session/rebalance ticker and the offset-expiration timer."""
        self.loop = loop
        self._stopped = False
        self._ticker = loop.call_later(TICK_S, self._tick)
        self._retention_timer = loop.call_later(self.retention_check_s, self._retention_tick)

    def stop(self) -> None:
        """Cancel the timers; parked JoinGroup/SyncGroup answers go with their connections."""
        self._stopped = True
        for t in (self._ticker, self._retention_timer):
            if t is not None:
                t.cancel()

    def ensure_topic(self) -> None:
        """FindCoordinator creates `__consumer_offsets` on first use (raises KafkaError)."""
        self.store.ensure_topic()

    # ================================================================ timers
    def _tick(self) -> None:
        try:
            self.tick(time.monotonic())
        except Exception:  # noqa: BLE001 - keep ticking
            log.exception("group coordinator tick failed")
        if not self._stopped:
            self._ticker = self.loop.call_later(TICK_S, self._tick)

    def tick(self, now: float) -> None:
        """Expire sessions and pending member ids; give up on slow joins and syncs."""
        self.consumer.tick(now)
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
                self._prepare_rebalance(g, now)

    def _retention_tick(self) -> None:
        try:
            self.expire_offsets(now_ms())
        except Exception:  # noqa: BLE001
            log.exception("offset expiration failed")
        if not self._stopped:
            self._retention_timer = self.loop.call_later(self.retention_check_s, self._retention_tick)

    def expire_offsets(self, now: int) -> int:
        """offsets.retention.minutes: an Empty group's offsets expire that long after it became
        empty (a group never used for membership: after each offset's commit); a group with
        nothing left is removed. Returns the number of offsets expired."""
        n = 0
        for g in list(self.groups.values()):
            if not g.is_(EMPTY) or (g.consumer is not None and g.consumer.members):
                continue
            if g.protocol_type:
                expired = list(g.offsets) if now - g.state_ts >= self.retention_ms else []
            else:
                expired = [tp for tp, e in g.offsets.items() if now - e.commit_ts >= self.retention_ms]
            if not expired and g.offsets:
                continue
            whole = not g.offsets or len(expired) == len(g.offsets)
            if self.store.delete(g.group_id, expired, group=whole,
                                 extra=self.consumer.delete(g) if whole else ()) != ErrorCode.NONE:
                continue
            for tp in expired:
                del g.offsets[tp]
            n += len(expired)
            if not g.offsets:
                g.transition(DEAD)
                del self.groups[g.group_id]
                log.info("group %s expired", g.group_id)
        return n

    # ================================================================ rebalancing
    def _prepare_rebalance(self, g: Group, now: float) -> None:
        if g.is_(COMPLETING):
            # a member changed while the leader was assigning: everyone rejoins
            for m in g.members.values():
                self._finish(m, "sync_waiter", sync_answer(g, ErrorCode.REBALANCE_IN_PROGRESS))
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
            self._finish(m, "join_waiter", self._join_answer(g, m))

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
    def _finish(m: Member, attr: str, response: dict) -> None:
        fut = getattr(m, attr)
        setattr(m, attr, None)
        if fut is not None and not fut.done():
            fut.set_result(response)

    def _remove_member(self, g: Group, member_id: str, now: float) -> None:
        m = g.remove_member(member_id)
        if m is None:
            return
        self._finish(m, "join_waiter", join_error(member_id, ErrorCode.UNKNOWN_MEMBER_ID))
        self._finish(m, "sync_waiter", sync_answer(g, ErrorCode.UNKNOWN_MEMBER_ID))
        if g.is_(STABLE, COMPLETING):
            self._prepare_rebalance(g, now)
        elif g.is_(PREPARING):
            self._maybe_complete_join(g, now)

    @staticmethod
    async def _wait(fut) -> dict:
        # shield: a closed connection cancels the request task, not the member's waiter
        return await asyncio.shield(fut)

    # ================================================================ JoinGroup
    def join(self, req: JoinRequest) -> Answer:
        """Add or re-add a member; the answer comes when the rebalance completes."""
        gid, member_id, inst, session = req.group_id, req.member_id, req.group_instance_id, req.session_timeout_ms
        log.debug("JoinGroup v%d group=%s member=%s instance=%s", req.version, gid, member_id, inst)
        if not gid:
            return join_error(member_id, ErrorCode.INVALID_GROUP_ID)
        if not self.min_session <= session <= self.max_session:
            return join_error(member_id, ErrorCode.INVALID_SESSION_TIMEOUT)
        now = time.monotonic()
        g = self.groups.get(gid)
        if g is None:
            if member_id:
                return join_error(member_id, ErrorCode.UNKNOWN_MEMBER_ID)
            g = self.groups[gid] = Group(gid)
        if g.is_(DEAD):
            return join_error(member_id, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if g.consumer is not None:
            if g.consumer.members:  # classic members of a consumer group (groups/migration.py)
                return self.consumer.migration.join(g, req)
            if self.store.append(gid, self.consumer.delete(g)) != ErrorCode.NONE:
                return join_error(member_id, ErrorCode.COORDINATOR_NOT_AVAILABLE)
            g.consumer = None  # an empty consumer group becomes a classic one
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
        self._finish(m, "join_waiter", join_error(member_id, ErrorCode.UNKNOWN_MEMBER_ID))  # a duplicate join
        m.join_waiter = fut
        if not g.is_(PREPARING):
            self._prepare_rebalance(g, now)
        self._maybe_complete_join(g, now)
        return self._wait(fut)

    def _add_and_rebalance(self, g: Group, m: Member, now: float) -> None:
        m.touch(now)
        g.add_member(m)
        if g.initial_delay_until:
            g.new_member_added = True
            g.initial_delay_limit = max(g.initial_delay_limit, now + m.rebalance_timeout_ms / 1000.0)
        if not g.is_(PREPARING):
            self._prepare_rebalance(g, now)
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
        self._finish(old, "join_waiter", join_error(old_id, ErrorCode.FENCED_INSTANCE_ID))
        self._finish(old, "sync_waiter", sync_answer(g, ErrorCode.FENCED_INSTANCE_ID))
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
            self._prepare_rebalance(g, now)
        self._maybe_complete_join(g, now)
        return self._wait(fut)

    # ================================================================ SyncGroup
    def sync(self, req: SyncRequest) -> Answer:
        """Hand out the leader's assignment; members wait for it while the group completes."""
        gid, mid, inst = req.group_id, req.member_id, req.group_instance_id
        g = self.groups.get(gid)
        log.debug("SyncGroup group=%s member=%s generation=%s state=%s", gid, mid, req.generation,
                  g.state if g else None)
        if g is None or g.is_(DEAD):
            return sync_answer(None, ErrorCode.UNKNOWN_MEMBER_ID if g is None else ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if g.consumer is not None:
            return self.consumer.migration.sync(g, req)
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
        self._finish(m, "sync_waiter", sync_answer(None, ErrorCode.REBALANCE_IN_PROGRESS))
        m.sync_waiter = fut
        if mid == g.leader_id:
            for x in g.members.values():
                x.assignment = req.assignments.get(x.member_id, b"")
            code = self.store.store_group(g)
            if code != ErrorCode.NONE:
                for x in g.members.values():
                    x.assignment = b""
                    self._finish(x, "sync_waiter", sync_answer(None, code))
                self._prepare_rebalance(g, now)
            else:
                g.transition(STABLE)
                log.info("group %s stable at generation %d", g.group_id, g.generation)
                for x in g.members.values():
                    x.touch(now)
                    self._finish(x, "sync_waiter", sync_answer(g, ErrorCode.NONE, x.assignment))
        return self._wait(fut)

    # ================================================================ Heartbeat, LeaveGroup
    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation: int) -> int:
        """Keep a member's session alive; the error code tells it to rejoin or stop."""
        g = self.groups.get(group_id)
        if g is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if g.is_(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if g.consumer is not None:
            return self.consumer.migration.heartbeat(g, member_id, instance_id, generation)
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

    def leave(self, group_id: str, member_id: str, instance_id: str | None) -> tuple[str, int]:
        """Remove one member (by member id, or by instance id for static members).
        Returns the member id it concerned and an error code."""
        g = self.groups.get(group_id)
        now = time.monotonic()
        mid = member_id
        if g is None or g.is_(DEAD):
            return mid, ErrorCode.UNKNOWN_MEMBER_ID if g is None else ErrorCode.COORDINATOR_NOT_AVAILABLE
        if g.consumer is not None:
            return self.consumer.migration.leave(g, mid, instance_id)
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
            log.info("group %s: member %s left", group_id, mid)
            self._remove_member(g, mid, now)
        return mid, ErrorCode.NONE

    # ================================================================ offsets
    def commit_offsets(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                       offsets: list) -> list[int]:
        """Commit [((topic, partition), offset, leader_epoch, metadata)]; an error code for each."""
        code = self._commit_check(group_id, generation, member_id, instance_id)
        if code != ErrorCode.NONE:
            return [code] * len(offsets)
        g = self.groups.get(group_id)
        written, errors = self._entries(offsets)
        wcode = self.store.store_offsets(group_id, written) if written else ErrorCode.NONE
        if wcode == ErrorCode.NONE:
            if g is None:
                g = self.groups[group_id] = Group(group_id)
            g.offsets.update(written)
            m = g.members.get(member_id)
            if m is not None:
                m.touch()  # a commit counts as a heartbeat
        return [errors.get(tp, wcode) for tp, *_ in offsets]

    def _entries(self, offsets: list) -> tuple[list, dict]:
        """([((topic, p), OffsetEntry)] to write, {(topic, p): error}) of a commit's offsets."""
        now = now_ms()
        written, errors = [], {}
        for tp, offset, epoch, md in offsets:
            if md is not None and len(md.encode()) > self.metadata_max:
                errors[tp] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            written.append((tp, OffsetEntry(offset, epoch, md or "", now)))
        return written, errors

    def txn_commit_offsets(self, group_id: str, producer_id: int, producer_epoch: int, generation: int,
                           member_id: str, instance_id: str | None, offsets: list) -> list[int]:
        """TxnOffsetCommit: write [((topic, partition), offset, leader_epoch, metadata)] in the
        producer's transaction; they become the group's offsets when its COMMIT marker is written."""
        code = self._commit_check(group_id, generation, member_id or "", instance_id) \
            if generation >= 0 or member_id else (ErrorCode.NONE if group_id else ErrorCode.INVALID_GROUP_ID)
        if code != ErrorCode.NONE:
            return [code] * len(offsets)
        written, errors = self._entries(offsets)
        wcode = self.store.store_offsets(group_id, written, (producer_id, producer_epoch)) if written \
            else ErrorCode.NONE
        if wcode == ErrorCode.NONE and written:
            self.txn_offsets.setdefault(producer_id, {}).setdefault(group_id, {}).update(written)
        return [errors.get(tp, wcode) for tp, *_ in offsets]

    def complete_txn(self, producer_id: int, offsets_partition: int, commit: bool) -> None:
        """A transaction marker was written to `__consumer_offsets` partition `offsets_partition`:
        the producer's pending offsets of the groups on it apply (COMMIT) or go (ABORT)."""
        by_group = self.txn_offsets.get(producer_id)
        if not by_group:
            return
        for gid in [g for g in by_group if ot.partition_for(g, self.store.num_partitions) == offsets_partition]:
            entries = by_group.pop(gid)
            if commit:
                g = self.groups.get(gid)
                if g is None:
                    g = self.groups[gid] = Group(gid)
                g.offsets.update(entries)
        if not by_group:
            del self.txn_offsets[producer_id]

    def has_pending_txn_offset(self, group_id: str, tp: tuple) -> bool:
        """An open transaction holds an offset for this partition (OffsetFetch require_stable)."""
        return any(tp in by_group.get(group_id, ()) for by_group in self.txn_offsets.values())

    def _commit_check(self, gid: str, gen: int, mid: str, inst: str | None) -> int:
        if not gid:
            return ErrorCode.INVALID_GROUP_ID
        g = self.groups.get(gid)
        if g is None:  # a simple (admin) commit creates it
            return ErrorCode.NONE if gen < 0 else ErrorCode.ILLEGAL_GENERATION
        if g.is_(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if g.consumer is not None:
            return self.consumer.offset_check(g.consumer, mid, gen)
        if gen < 0 and g.is_(EMPTY):
            return ErrorCode.NONE
        if inst is not None and g.static.get(inst) not in (None, mid):
            return ErrorCode.FENCED_INSTANCE_ID
        if g.is_(COMPLETING):
            return ErrorCode.REBALANCE_IN_PROGRESS
        if mid not in g.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if gen != g.generation:
            return ErrorCode.ILLEGAL_GENERATION
        return ErrorCode.NONE  # Stable or PreparingRebalance: commits before revocation land here

    def delete_offsets(self, group_id: str, partitions: list) -> tuple[int, set]:
        """OffsetDelete: (group error code, topics not deleted because the group subscribes to them)."""
        g = self.groups.get(group_id)
        if g is None or g.is_(DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND, set()
        if g.consumer is not None:
            subscribed = self.consumer.subscribed_topic_names(g.consumer)
        else:
            subscribed = set() if g.is_(EMPTY) else g.subscribed_topics()
        if subscribed is None:
            return ErrorCode.NON_EMPTY_GROUP, set()
        deleting = [tp for tp in partitions if tp[0] not in subscribed and tp in g.offsets]
        code = self.store.delete(group_id, deleting) if deleting else ErrorCode.NONE
        if code != ErrorCode.NONE:
            return code, set()
        for tp in deleting:
            g.offsets.pop(tp, None)
        return ErrorCode.NONE, subscribed

    def delete_group(self, group_id: str) -> int:
        """DeleteGroups: only an Empty group goes, with its offsets."""
        g = self.groups.get(group_id)
        if g is None or g.is_(DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND
        if not g.is_(EMPTY) or (g.consumer is not None and g.consumer.members):
            return ErrorCode.NON_EMPTY_GROUP
        code = self.store.delete(group_id, list(g.offsets), group=True, extra=self.consumer.delete(g))
        if code == ErrorCode.NONE:
            g.transition(DEAD)
            del self.groups[group_id]
        return code
