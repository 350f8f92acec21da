"""The group coordinator: Kafka's classic consumer-group protocol on one node.

Everything runs on the broker's event loop thread: JoinGroup and SyncGroup
park an asyncio future per member and answer when the rebalance moves on; a
100 ms ticker expires sessions and gives up on members that do not rejoin
within the rebalance timeout; the first rebalance of a new group waits
`group.initial.rebalance.delay.ms` (extended while members keep arriving, up to
the rebalance timeout) so a fleet starting together lands in one generation.

Committed offsets and group metadata are records in `__consumer_offsets`
(offsets_topic.py holds the byte layouts), appended through the storage
engine like any produce; at start-up the topic is replayed to rebuild every
group. The group of `group_id` lives on partition
`abs(javaHashCode(group_id)) % offsets.topic.num.partitions`.

This module replaces groups_stub.py: the broker loads it first when present.
"""
from __future__ import annotations

import asyncio
import logging
import time
import uuid

from pylog.commands.broker import offsets_topic as ot
from pylog.commands.broker.apis import AUTHORIZED_OPS_OMITTED, Api
from pylog.commands.broker.group_state import (
    COMPLETING,
    DEAD,
    EMPTY,
    PREPARING,
    STABLE,
    Group,
    Member,
    OffsetEntry,
)
from pylog.core.errors import KafkaError, MessageTooLargeError, RecordListTooLargeError
from pylog.core.records import BatchBuilder, RecordBatch

log = logging.getLogger("pylog.broker.groups")

NONE = 0
OFFSET_METADATA_TOO_LARGE = 12
COORDINATOR_LOAD_IN_PROGRESS = 14
COORDINATOR_NOT_AVAILABLE = 15
NOT_COORDINATOR = 16
ILLEGAL_GENERATION = 22
INCONSISTENT_GROUP_PROTOCOL = 23
INVALID_GROUP_ID = 24
UNKNOWN_MEMBER_ID = 25
INVALID_SESSION_TIMEOUT = 26
REBALANCE_IN_PROGRESS = 27
INVALID_COMMIT_OFFSET_SIZE = 28
NON_EMPTY_GROUP = 68
GROUP_ID_NOT_FOUND = 69
MEMBER_ID_REQUIRED = 79
GROUP_MAX_SIZE_REACHED = 81
FENCED_INSTANCE_ID = 82
GROUP_SUBSCRIBED_TO_TOPIC = 86
TXN_REFUSED = 53

TICK_S = 0.1


def _now_ms() -> int:
    return int(time.time() * 1000)


class GroupCoordinator:
    def __init__(self, broker):
        self.broker = broker
        cfg = broker.config
        self.cfg = cfg
        self.groups: dict[str, Group] = {}
        self.num_partitions = cfg["offsets.topic.num.partitions"]
        self.initial_delay_ms = cfg["group.initial.rebalance.delay.ms"]
        self.min_session = cfg["group.min.session.timeout.ms"]
        self.max_session = cfg["group.max.session.timeout.ms"]
        self.max_size = cfg["group.max.size"]
        self.retention_ms = cfg["offsets.retention.minutes"] * 60000
        self.metadata_max = cfg["offset.metadata.max.bytes"]
        self._ticker = None
        self._retention_timer = None
        self.loaded_records = 0

    # ================================================================ storage
    def load(self) -> None:
        """Replay `__consumer_offsets` (called before the broker listens)."""
        logs = self.broker.logs
        info = logs.topics.get(ot.TOPIC) if logs is not None else None
        if info is None:
            return
        self.num_partitions = info.num_partitions  # the topic as created wins over the config
        t0 = time.monotonic()
        for p in range(info.num_partitions):
            plog = logs.get_log(ot.TOPIC, p)
            if plog is not None:
                self._replay(plog)
        now = time.monotonic()
        for g in self.groups.values():
            for m in g.members.values():
                m.touch(now)
        log.info("loaded %d groups from %d %s records in %.2fs", len(self.groups), self.loaded_records,
                  ot.TOPIC, time.monotonic() - t0)

    def _replay(self, plog) -> None:
        offset = plog.log_start_offset
        end = plog.log_end_offset
        while offset < end:
            sl = plog.read(offset, 1 << 20, upper_bound=end)
            if not sl.length:
                break
            data = memoryview(sl.read_bytes())
            pos = 0
            moved = False
            while pos + 61 <= len(data):
                length = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True)
                if pos + 12 + length > len(data):
                    break
                b = RecordBatch(data, pos)
                h = b.header
                if not h.is_control:
                    for r in b.records():
                        if r.offset >= offset:
                            self._apply(r.key, r.value)
                offset = h.last_offset + 1
                pos += 12 + length
                moved = True
            if not moved:
                break

    def _apply(self, key, value) -> None:
        if key is None:
            return
        try:
            rec = ot.parse_record(bytes(key), None if value is None else bytes(value))
        except Exception as e:  # noqa: BLE001 - one bad record must not stop the load
            log.warning("skipping unreadable %s record: %s", ot.TOPIC, e)
            return
        self.loaded_records += 1
        if isinstance(rec, ot.OffsetRecord):
            g = self.groups.get(rec.group)
            if rec.value is None:
                if g is not None:
                    g.offsets.pop((rec.topic, rec.partition), None)
                return
            if g is None:
                g = self.groups[rec.group] = Group(rec.group)
            g.offsets[(rec.topic, rec.partition)] = OffsetEntry(*rec.value)
            return
        if rec.value is None:
            self.groups.pop(rec.group, None)
            return
        g = self.groups.get(rec.group)
        if g is None:
            g = self.groups[rec.group] = Group(rec.group)
        sg = rec.value
        g.protocol_type = sg.protocol_type or None
        g.generation = sg.generation
        g.protocol_name = sg.protocol
        g.leader_id = sg.leader
        if sg.state_timestamp >= 0:
            g.state_ts = sg.state_timestamp
        g.members.clear()
        g.static.clear()
        for sm in sg.members:
            m = Member(sm.member_id, sm.group_instance_id, sm.client_id, sm.client_host, sm.rebalance_timeout_ms,
                       sm.session_timeout_ms, sg.protocol_type, [(sg.protocol or "", sm.subscription)],
                       sm.assignment, is_new=False)
            g.members[m.member_id] = m
            if m.group_instance_id is not None:
                g.static[m.group_instance_id] = m.member_id
        g.state = STABLE if g.members else EMPTY

    def _ensure_topic(self) -> None:
        logs = self.broker.logs
        if ot.TOPIC in logs.topics:
            return
        cfg = self.cfg
        logs.create_topic(ot.TOPIC, self.num_partitions, {
            "cleanup.policy": "compact",
            "segment.bytes": str(cfg["offsets.topic.segment.bytes"]),
            "compression.type": "producer",
        })
        log.info("created %s with %d partitions", ot.TOPIC, self.num_partitions)

    def _append(self, group_id: str, records: list) -> int:
        """Append [(key, value)] as one batch to the group's partition; a Kafka error code."""
        try:
            self._ensure_topic()
            p = ot.partition_for(group_id, self.num_partitions)
            plog = self.broker.logs.get_log(ot.TOPIC, p)
            if plog is None:
                return COORDINATOR_NOT_AVAILABLE
            b = BatchBuilder()
            now = _now_ms()
            for k, v in records:
                b.append(now, k, v)
            plog.append_as_leader(bytearray(b.build()), self.broker.leader_epoch(plog), now_ms=now)
            self.broker.wake(ot.TOPIC, p)
            return NONE
        except (MessageTooLargeError, RecordListTooLargeError):
            return INVALID_COMMIT_OFFSET_SIZE
        except Exception as e:  # noqa: BLE001 - storage failure: the client retries elsewhere/later
            log.error("cannot write to %s: %s", ot.TOPIC, e)
            return COORDINATOR_NOT_AVAILABLE

    def _store_group(self, g: Group) -> int:
        members = [ot.StoredMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                   m.rebalance_timeout_ms, m.session_timeout_ms,
                                   m.metadata(g.protocol_name or ""), m.assignment)
                   for m in g.members.values()]
        value = ot.group_value(ot.StoredGroup(g.protocol_type or "", g.generation, g.protocol_name,
                                              g.leader_id if g.members else None, g.state_ts, members))
        return self._append(g.group_id, [(ot.group_key(g.group_id), value)])

    # ================================================================ timers
    def start(self, loop) -> None:
        self.loop = loop
        self._ticker = loop.call_later(TICK_S, self._tick)
        every = self.cfg["offsets.retention.check.interval.ms"] / 1000.0
        self._retention_timer = loop.call_later(every, self._retention_tick, every)

    def stop(self) -> None:
        for t in (self._ticker, self._retention_timer):
            if t is not None:
                t.cancel()

    def _tick(self) -> None:
        try:
            self.tick(time.monotonic())
        except Exception:  # noqa: BLE001 - keep ticking
            log.exception("group coordinator tick failed")
        if not self.broker.stopping:
            self._ticker = self.loop.call_later(TICK_S, self._tick)

    def tick(self, now: float) -> None:
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

    def _retention_tick(self, every: float) -> None:
        try:
            self.expire_offsets(_now_ms())
        except Exception:  # noqa: BLE001
            log.exception("offset expiration failed")
        if not self.broker.stopping:
            self._retention_timer = self.loop.call_later(every, self._retention_tick, every)

    def expire_offsets(self, now_ms: int) -> int:
        """offsets.retention.minutes: an Empty group's offsets expire that long after it became
        empty (a group never used for membership: after each offset's commit); a group with
        nothing left is removed. Returns the number of offsets expired."""
        n = 0
        for g in list(self.groups.values()):
            if not g.is_(EMPTY):
                continue
            if g.protocol_type:
                expired = list(g.offsets) if now_ms - g.state_ts >= self.retention_ms else []
            else:
                expired = [tp for tp, e in g.offsets.items() if now_ms - e.commit_ts >= self.retention_ms]
            tombstones = [(ot.offset_key(g.group_id, t, p), None) for t, p in expired]
            if not expired and g.offsets:
                continue
            if not g.offsets or len(expired) == len(g.offsets):
                tombstones.append((ot.group_key(g.group_id), None))
            if self._append(g.group_id, tombstones) != NONE:
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
                self._finish(m, "sync_waiter", self._sync_response(g, REBALANCE_IN_PROGRESS))
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
        loop = getattr(self, "loop", None)
        if loop is not None:
            loop.call_later(max(0.0, when - time.monotonic()),
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
            self._store_group(g)
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
            self._finish(m, "join_waiter", self._join_response(g, m))

    def _join_response(self, g: Group, m: Member, code: int = NONE, *, as_follower: bool = False,
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
    def _sync_response(g: Group | None, code: int, assignment: bytes = b"") -> dict:
        return {"throttle_time_ms": 0, "error_code": code,
                "protocol_type": g.protocol_type if g and not code else None,
                "protocol_name": g.protocol_name if g and not code else None, "assignment": assignment}

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
        self._finish(m, "join_waiter", self._join_error(member_id, UNKNOWN_MEMBER_ID))
        self._finish(m, "sync_waiter", self._sync_response(g, UNKNOWN_MEMBER_ID))
        if g.is_(STABLE, COMPLETING):
            self._prepare_rebalance(g, now)
        elif g.is_(PREPARING):
            self._maybe_complete_join(g, now)

    @staticmethod
    def _join_error(member_id: str, code: int) -> dict:
        return {"throttle_time_ms": 0, "error_code": code, "generation_id": -1, "protocol_type": None,
                "protocol_name": None, "leader": "", "skip_assignment": False, "member_id": member_id,
                "members": []}

    # ================================================================ JoinGroup
    async def _wait(self, fut):
        # shield: a closed connection cancels the request task, not the member's waiter
        return await asyncio.shield(fut)

    def join_group(self, ctx, body):
        v = ctx.api_version
        gid = body.get("group_id") or ""
        member_id = body.get("member_id") or ""
        inst = body.get("group_instance_id")
        session = body.get("session_timeout_ms", 0)
        rebalance = body.get("rebalance_timeout_ms", -1)
        if v == 0 or rebalance is None or rebalance < 0:
            rebalance = session
        ptype = body.get("protocol_type") or ""
        protocols = [(p.get("name") or "", bytes(p.get("metadata") or b"")) for p in body.get("protocols") or []]
        log.debug("JoinGroup v%d group=%s member=%s instance=%s", v, gid, member_id, inst)
        if not gid:
            return self._join_error(member_id, INVALID_GROUP_ID)
        if not self.min_session <= session <= self.max_session:
            return self._join_error(member_id, INVALID_SESSION_TIMEOUT)
        now = time.monotonic()
        g = self.groups.get(gid)
        if g is None:
            if member_id:
                return self._join_error(member_id, UNKNOWN_MEMBER_ID)
            g = self.groups[gid] = Group(gid)
        if g.is_(DEAD):
            return self._join_error(member_id, COORDINATOR_NOT_AVAILABLE)
        if not g.supports(ptype, protocols):
            return self._join_error(member_id, INCONSISTENT_GROUP_PROTOCOL)
        client_id = ctx.client_id or ""
        host = "/" + ctx.conn.peer.rsplit(":", 1)[0] if getattr(ctx, "conn", None) else ""
        fut = asyncio.get_running_loop().create_future()

        def new_member(mid):
            return Member(mid, inst, client_id, host, rebalance, session, ptype, protocols, join_waiter=fut)

        if not member_id:
            if inst is not None and inst in g.static:
                return self._static_rejoin(g, inst, new_member, fut, now, v)
            if len(g.members) + len(g.pending) >= self.max_size:
                return self._join_error(member_id, GROUP_MAX_SIZE_REACHED)
            mid = f"{client_id}-{uuid.uuid4()}"
            if inst is None and v >= 4:
                # KIP-394: the member must come back with this id, so a lost response cannot leak members
                g.pending[mid] = now + session / 1000.0
                return self._join_error(mid, MEMBER_ID_REQUIRED)
            self._add_and_rebalance(g, new_member(mid), now)
            return self._wait(fut)
        if member_id in g.pending:
            del g.pending[member_id]
            self._add_and_rebalance(g, new_member(member_id), now)
            return self._wait(fut)
        m = g.members.get(member_id)
        if inst is not None and g.static.get(inst) not in (None, member_id):
            return self._join_error(member_id, FENCED_INSTANCE_ID)
        if m is None:
            return self._join_error(member_id, UNKNOWN_MEMBER_ID)
        # a known member rejoins
        same = m.same_protocols(protocols)
        m.protocols, m.session_timeout_ms, m.rebalance_timeout_ms = protocols, session, rebalance
        m.client_id, m.client_host = client_id, host
        m.touch(now)
        if g.is_(COMPLETING) and same:
            return self._join_response(g, m)  # a retry: nothing changed
        if g.is_(STABLE) and same and member_id != g.leader_id:
            return self._join_response(g, m)
        self._finish(m, "join_waiter", self._join_error(member_id, UNKNOWN_MEMBER_ID))  # a duplicate join
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

    def _static_rejoin(self, g: Group, inst: str, new_member, fut, now: float, version: int):
        """A static member restarted (unknown member id, known instance id): it takes over its
        old identity under a new member id; the old id is fenced. In a Stable group with
        unchanged protocols nothing is reassigned: the member gets the current generation and
        its old assignment through SyncGroup. A returning leader gets the member list with
        skip_assignment (KIP-814, v9+) or, before v9, a follower's answer."""
        old_id = g.static[inst]
        fresh = new_member(f"{inst}-{uuid.uuid4()}")
        old = g.members[old_id]
        self._finish(old, "join_waiter", self._join_error(old_id, FENCED_INSTANCE_ID))
        self._finish(old, "sync_waiter", self._sync_response(g, FENCED_INSTANCE_ID))
        same = old.same_protocols(fresh.protocols)
        m = g.replace_static_member(inst, fresh.member_id)
        m.protocols, m.session_timeout_ms, m.rebalance_timeout_ms = fresh.protocols, fresh.session_timeout_ms, \
            fresh.rebalance_timeout_ms
        m.client_id, m.client_host = fresh.client_id, fresh.client_host
        m.touch(now)
        if g.is_(STABLE) and same:
            if m.member_id == g.leader_id and version >= 9:
                return self._join_response(g, m, skip_assignment=True)
            return self._join_response(g, m, as_follower=True)
        m.join_waiter = fut
        if not g.is_(PREPARING):
            self._prepare_rebalance(g, now)
        self._maybe_complete_join(g, now)
        return self._wait(fut)

    def join_group_error(self, body, version, code, msg):
        return self._join_error(body.get("member_id") or "", code)

    # ================================================================ SyncGroup
    def sync_group(self, ctx, body):
        gid = body.get("group_id") or ""
        mid = body.get("member_id") or ""
        gen = body.get("generation_id", -1)
        inst = body.get("group_instance_id")
        g = self.groups.get(gid)
        log.debug("SyncGroup group=%s member=%s generation=%s state=%s", gid, mid, gen, g.state if g else None)
        if g is None or g.is_(DEAD):
            return self._sync_response(None, UNKNOWN_MEMBER_ID if g is None else COORDINATOR_NOT_AVAILABLE)
        if inst is not None and g.static.get(inst) not in (None, mid):
            return self._sync_response(None, FENCED_INSTANCE_ID)
        m = g.members.get(mid)
        if m is None:
            return self._sync_response(None, UNKNOWN_MEMBER_ID)
        if gen != g.generation:
            return self._sync_response(None, ILLEGAL_GENERATION)
        ptype, pname = body.get("protocol_type"), body.get("protocol_name")
        if (ptype is not None and ptype != g.protocol_type) or (pname is not None and pname != g.protocol_name):
            return self._sync_response(None, INCONSISTENT_GROUP_PROTOCOL)
        now = time.monotonic()
        m.touch(now)
        if g.is_(PREPARING):
            return self._sync_response(None, REBALANCE_IN_PROGRESS)
        if g.is_(STABLE):
            return self._sync_response(g, NONE, m.assignment)
        # CompletingRebalance
        fut = asyncio.get_running_loop().create_future()
        self._finish(m, "sync_waiter", self._sync_response(None, REBALANCE_IN_PROGRESS))
        m.sync_waiter = fut
        if mid == g.leader_id:
            given = {a.get("member_id"): bytes(a.get("assignment") or b"") for a in body.get("assignments") or []}
            for x in g.members.values():
                x.assignment = given.get(x.member_id, b"")
            code = self._store_group(g)
            if code != NONE:
                for x in g.members.values():
                    x.assignment = b""
                    self._finish(x, "sync_waiter", self._sync_response(None, code))
                self._prepare_rebalance(g, now)
            else:
                g.transition(STABLE)
                log.info("group %s stable at generation %d", g.group_id, g.generation)
                for x in g.members.values():
                    x.touch(now)
                    self._finish(x, "sync_waiter", self._sync_response(g, NONE, x.assignment))
        return self._wait(fut)

    def sync_group_error(self, body, version, code, msg):
        return self._sync_response(None, code)

    # ================================================================ Heartbeat
    def heartbeat(self, ctx, body):
        code = self._heartbeat_code(body)
        if code:
            log.debug("Heartbeat group=%s member=%s: error %d", body.get("group_id"), body.get("member_id"), code)
        return {"throttle_time_ms": 0, "error_code": code}

    def _heartbeat_code(self, body) -> int:
        g = self.groups.get(body.get("group_id") or "")
        mid = body.get("member_id") or ""
        inst = body.get("group_instance_id")
        if g is None:
            return UNKNOWN_MEMBER_ID
        if g.is_(DEAD):
            return COORDINATOR_NOT_AVAILABLE
        if inst is not None and g.static.get(inst) not in (None, mid):
            return FENCED_INSTANCE_ID
        m = g.members.get(mid)
        if m is None or g.is_(EMPTY):
            return UNKNOWN_MEMBER_ID
        if g.is_(PREPARING):
            m.touch()
            return REBALANCE_IN_PROGRESS
        if body.get("generation_id", -1) != g.generation:
            return ILLEGAL_GENERATION
        m.touch()
        return NONE

    # ================================================================ LeaveGroup
    def leave_group(self, ctx, body):
        gid = body.get("group_id") or ""
        if ctx.api_version < 3:
            items = [{"member_id": body.get("member_id") or "", "group_instance_id": None}]
        else:
            items = body.get("members") or []
        g = self.groups.get(gid)
        results = []
        now = time.monotonic()
        for it in items:
            mid = it.get("member_id") or ""
            inst = it.get("group_instance_id")
            code = NONE
            if g is None or g.is_(DEAD):
                code = UNKNOWN_MEMBER_ID if g is None else COORDINATOR_NOT_AVAILABLE
            elif inst is not None:
                cur = g.static.get(inst)
                if cur is None:
                    code = UNKNOWN_MEMBER_ID
                elif mid and mid != cur:
                    code = FENCED_INSTANCE_ID
                else:
                    mid = cur
            elif mid in g.pending:
                del g.pending[mid]
                self._maybe_complete_join(g, now)
            elif mid not in g.members:
                code = UNKNOWN_MEMBER_ID
            if code == NONE and g is not None and mid in g.members:
                log.info("group %s: member %s left", gid, mid)
                self._remove_member(g, mid, now)
            results.append({"member_id": mid, "group_instance_id": inst, "error_code": code})
        top = NONE
        if ctx.api_version < 3:
            top = results[0]["error_code"]
        return {"throttle_time_ms": 0, "error_code": top, "members": results}

    def leave_group_error(self, body, version, code, msg):
        return {"throttle_time_ms": 0, "error_code": code,
                "members": [{"member_id": m.get("member_id", ""), "group_instance_id": m.get("group_instance_id"),
                             "error_code": code} for m in body.get("members") or []]}

    # ================================================================ offsets
    def offset_commit(self, ctx, body):
        gid = body.get("group_id") or ""
        gen = body.get("generation_id_or_member_epoch", body.get("generation_id", -1))
        mid = body.get("member_id") or ""
        inst = body.get("group_instance_id")
        topics = body.get("topics") or []

        def answer(code_for):
            return {"throttle_time_ms": 0, "topics": [
                {"name": t.get("name"), "partitions": [
                    {"partition_index": p.get("partition_index", 0), "error_code": code_for(t, p)}
                    for p in t.get("partitions") or []]} for t in topics]}

        code = self._commit_check(gid, gen, mid, inst)
        if code != NONE:
            return answer(lambda t, p: code)
        g = self.groups.get(gid)
        now = _now_ms()
        records, entries, errors = [], {}, {}
        for t in topics:
            for p in t.get("partitions") or []:
                tp = (t.get("name"), p.get("partition_index", 0))
                md = p.get("committed_metadata")
                if md is not None and len(md.encode()) > self.metadata_max:
                    errors[tp] = OFFSET_METADATA_TOO_LARGE
                    continue
                e = OffsetEntry(p.get("committed_offset", -1), p.get("committed_leader_epoch", -1),
                                md or "", now)
                entries[tp] = e
                records.append((ot.offset_key(gid, tp[0], tp[1]),
                                ot.offset_value(e.offset, e.leader_epoch, e.metadata, e.commit_ts)))
        wcode = self._append(gid, records) if records else NONE
        if wcode == NONE:
            if g is None:
                g = self.groups[gid] = Group(gid)
            g.offsets.update(entries)
            m = g.members.get(mid)
            if m is not None:
                m.touch()  # a commit counts as a heartbeat
        return answer(lambda t, p: errors.get((t.get("name"), p.get("partition_index", 0)), wcode))

    def _commit_check(self, gid, gen, mid, inst) -> int:
        if not gid:
            return INVALID_GROUP_ID
        g = self.groups.get(gid)
        if g is None:
            return NONE if gen < 0 else ILLEGAL_GENERATION  # a simple (admin) commit creates it
        if g.is_(DEAD):
            return COORDINATOR_NOT_AVAILABLE
        if gen < 0 and g.is_(EMPTY):
            return NONE
        if inst is not None and g.static.get(inst) not in (None, mid):
            return FENCED_INSTANCE_ID
        if g.is_(COMPLETING):
            return REBALANCE_IN_PROGRESS
        if mid not in g.members:
            return UNKNOWN_MEMBER_ID
        if gen != g.generation:
            return ILLEGAL_GENERATION
        return NONE  # Stable or PreparingRebalance: commits before revocation land here

    def offset_commit_error(self, body, version, code, msg):
        return {"throttle_time_ms": 0, "topics": [
            {"name": t.get("name"), "partitions": [
                {"partition_index": p.get("partition_index", 0), "error_code": code}
                for p in t.get("partitions") or []]} for t in body.get("topics") or []]}

    def _fetch_topics(self, g: Group | None, topics) -> list:
        """OffsetFetch topics answer; topics None = every committed partition of the group."""
        def part(t, p):
            e = g.offsets.get((t, p)) if g is not None else None
            if e is None:
                return {"partition_index": p, "committed_offset": -1, "committed_leader_epoch": -1,
                        "metadata": "", "error_code": NONE}
            return {"partition_index": p, "committed_offset": e.offset, "committed_leader_epoch": e.leader_epoch,
                    "metadata": e.metadata, "error_code": NONE}

        if topics is None:
            by_topic: dict[str, list] = {}
            for (t, p) in sorted(g.offsets) if g is not None else []:
                by_topic.setdefault(t, []).append(p)
            return [{"name": t, "partitions": [part(t, p) for p in ps]} for t, ps in by_topic.items()]
        return [{"name": t.get("name"), "partitions": [part(t.get("name"), p) for p in t.get("partition_indexes") or []]}
                for t in topics]

    def offset_fetch(self, ctx, body):
        if ctx.api_version >= 8:
            groups = []
            for gq in body.get("groups") or []:
                gid = gq.get("group_id") or ""
                g = self.groups.get(gid)
                groups.append({"group_id": gid, "topics": self._fetch_topics(g, gq.get("topics")),
                               "error_code": NONE if gid else INVALID_GROUP_ID})
            return {"throttle_time_ms": 0, "groups": groups}
        gid = body.get("group_id") or ""
        g = self.groups.get(gid)
        topics = body.get("topics")
        if ctx.api_version < 2 and topics is None:
            topics = []
        return {"throttle_time_ms": 0, "topics": self._fetch_topics(g, topics),
                "error_code": NONE if gid else INVALID_GROUP_ID}

    def offset_fetch_error(self, body, version, code, msg):
        def topics(ts):
            return [{"name": t.get("name"), "partitions": [
                {"partition_index": p, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
                 "error_code": code} for p in t.get("partition_indexes") or []]} for t in ts or []]
        return {"throttle_time_ms": 0, "topics": topics(body.get("topics")), "error_code": code,
                "groups": [{"group_id": g.get("group_id"), "topics": topics(g.get("topics")), "error_code": code}
                           for g in body.get("groups") or []]}

    # ================================================================ admin
    def find_coordinator(self, ctx, body):
        s = self.broker.settings
        key_type = body.get("key_type", 0)
        keys = body.get("coordinator_keys")
        if ctx.api_version < 4:
            keys = [body.get("key") or ""]

        def one(key):
            if key_type == 1:
                return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": TXN_REFUSED,
                        "error_message": "transactions are not supported by this pylog broker"}
            if key_type != 0 or not key:
                return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": INVALID_GROUP_ID if
                        key_type == 0 else 35, "error_message": "invalid coordinator key"}
            try:
                self._ensure_topic()
            except KafkaError as e:
                return {"key": key, "node_id": -1, "host": "", "port": -1, "error_code": COORDINATOR_NOT_AVAILABLE,
                        "error_message": str(e)}
            return {"key": key, "node_id": self.broker.node_id, "host": s.advertised_host,
                    "port": s.advertised_port, "error_code": NONE, "error_message": None}

        results = [one(k) for k in keys or []]
        out = {"throttle_time_ms": 0, "coordinators": results}
        if ctx.api_version < 4:
            r = results[0]
            out.update(error_code=r["error_code"], error_message=r["error_message"], node_id=r["node_id"],
                       host=r["host"], port=r["port"])
        return out

    def find_coordinator_error(self, body, version, code, msg):
        keys = body.get("coordinator_keys") or []
        return {"throttle_time_ms": 0, "error_code": code, "error_message": msg, "node_id": -1, "host": "",
                "port": -1, "coordinators": [{"key": k, "node_id": -1, "host": "", "port": -1, "error_code": code,
                                              "error_message": msg} for k in keys]}

    def list_groups(self, ctx, body):
        states = {s.lower() for s in body.get("states_filter") or []}
        types = {t.lower() for t in body.get("types_filter") or []}
        out = []
        for g in sorted(self.groups.values(), key=lambda x: x.group_id):
            if states and g.state.lower() not in states:
                continue
            if types and "classic" not in types:
                continue
            out.append({"group_id": g.group_id, "protocol_type": g.protocol_type or "", "group_state": g.state,
                        "group_type": "classic"})
        return {"throttle_time_ms": 0, "error_code": NONE, "groups": out}

    def list_groups_error(self, body, version, code, msg):
        return {"throttle_time_ms": 0, "error_code": code, "groups": []}

    def describe_groups(self, ctx, body):
        out = []
        for gid in body.get("groups") or []:
            g = self.groups.get(gid)
            if g is None:
                code = GROUP_ID_NOT_FOUND if ctx.api_version >= 6 else NONE
                out.append({"error_code": code, "group_id": gid, "group_state": DEAD, "protocol_type": "",
                            "protocol_data": "", "members": [], "authorized_operations": AUTHORIZED_OPS_OMITTED})
                continue
            members = []
            for m in g.members.values():
                members.append({
                    "member_id": m.member_id, "group_instance_id": m.group_instance_id, "client_id": m.client_id,
                    "client_host": m.client_host,
                    # Kafka shows metadata/assignment only once the group has settled on a protocol
                    "member_metadata": m.metadata(g.protocol_name) if g.is_(STABLE) else b"",
                    "member_assignment": m.assignment if g.is_(STABLE) else b"",
                })
            out.append({"error_code": NONE, "group_id": gid, "group_state": g.state,
                        "protocol_type": g.protocol_type or "",
                        "protocol_data": (g.protocol_name or "") if g.is_(STABLE) else "",
                        "members": members, "authorized_operations": AUTHORIZED_OPS_OMITTED})
        return {"throttle_time_ms": 0, "groups": out}

    def describe_groups_error(self, body, version, code, msg):
        return {"throttle_time_ms": 0, "groups": [
            {"error_code": code, "group_id": g, "group_state": "", "protocol_type": "", "protocol_data": "",
             "members": [], "authorized_operations": AUTHORIZED_OPS_OMITTED} for g in body.get("groups") or []]}

    def delete_groups(self, ctx, body):
        results = []
        for gid in body.get("groups_names") or []:
            g = self.groups.get(gid)
            if g is None or g.is_(DEAD):
                code = GROUP_ID_NOT_FOUND
            elif not g.is_(EMPTY):
                code = NON_EMPTY_GROUP
            else:
                recs = [(ot.offset_key(gid, t, p), None) for t, p in g.offsets]
                recs.append((ot.group_key(gid), None))
                code = self._append(gid, recs)
                if code == NONE:
                    g.transition(DEAD)
                    del self.groups[gid]
            results.append({"group_id": gid, "error_code": code})
        return {"throttle_time_ms": 0, "results": results}

    def delete_groups_error(self, body, version, code, msg):
        return {"throttle_time_ms": 0, "results": [{"group_id": g, "error_code": code}
                                                   for g in body.get("groups_names") or []]}

    def offset_delete(self, ctx, body):
        gid = body.get("group_id") or ""
        topics = body.get("topics") or []
        g = self.groups.get(gid)

        def answer(top, code_for):
            return {"throttle_time_ms": 0, "error_code": top, "topics": [
                {"name": t.get("name"), "partitions": [
                    {"partition_index": p.get("partition_index", 0), "error_code": code_for(t, p)}
                    for p in t.get("partitions") or []]} for t in topics]}

        if g is None or g.is_(DEAD):
            return answer(GROUP_ID_NOT_FOUND, lambda t, p: NONE)
        subscribed = set() if g.is_(EMPTY) else g.subscribed_topics()
        if subscribed is None:
            return answer(NON_EMPTY_GROUP, lambda t, p: NONE)
        deleting = []
        for t in topics:
            if t.get("name") in subscribed:
                continue
            for p in t.get("partitions") or []:
                tp = (t.get("name"), p.get("partition_index", 0))
                if tp in g.offsets:
                    deleting.append(tp)
        code = self._append(gid, [(ot.offset_key(gid, t, p), None) for t, p in deleting]) if deleting else NONE
        if code != NONE:
            return answer(code, lambda t, p: NONE)
        for tp in deleting:
            g.offsets.pop(tp, None)
        return answer(NONE, lambda t, p: GROUP_SUBSCRIBED_TO_TOPIC if t.get("name") in subscribed else NONE)

    def offset_delete_error(self, body, version, code, msg):
        return {"throttle_time_ms": 0, "error_code": code, "topics": []}


def apis(broker) -> list[Api]:
    gc = GroupCoordinator(broker)
    broker.group_coordinator = gc
    gc.load()
    gc.start(broker.loop or asyncio.get_event_loop())
    return [
        Api(10, gc.find_coordinator, 0, 6, gc.find_coordinator_error),
        Api(16, gc.list_groups, 0, 5, gc.list_groups_error),
        Api(8, gc.offset_commit, 2, 9, gc.offset_commit_error),
        Api(9, gc.offset_fetch, 1, 9, gc.offset_fetch_error),
        Api(11, gc.join_group, 0, 9, gc.join_group_error),
        Api(12, gc.heartbeat, 0, 4, lambda body, v, code, msg: {"throttle_time_ms": 0, "error_code": code}),
        Api(13, gc.leave_group, 0, 5, gc.leave_group_error),
        Api(14, gc.sync_group, 0, 5, gc.sync_group_error),
        Api(15, gc.describe_groups, 0, 5, gc.describe_groups_error),
        Api(42, gc.delete_groups, 0, 2, gc.delete_groups_error),
        Api(47, gc.offset_delete, 0, 0, gc.offset_delete_error),
    ]
