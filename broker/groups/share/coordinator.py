"""Share groups (KIP-932) on one node: membership, share-partitions, share sessions, timers.

ShareGroupHeartbeat joins, keeps alive or removes members; a change of
membership, subscriptions or the subscribed topics' partitions bumps the group
epoch and reassigns with the simple assignor, and every newly assigned
share-partition is initialized (its start offset from share.auto.offset.reset)
and persisted. ShareFetch and ShareAcknowledge (api/share.py) work on the
share-partitions held here through share sessions keyed by (group, member).
A 100 ms ticker expires members past share.session.timeout.ms (their records
are released) and acquisition locks past share.record.lock.duration.ms.
"""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Callable, Protocol

from pylog.broker.common.partition_logs import PartitionLogs
from pylog.broker.groups.share.assignor import AssignorError
from pylog.broker.groups.share.configs import GroupConfigs, parse_duration_ms
from pylog.broker.groups.share.dead_letters import DeadLetters
from pylog.broker.groups.share.group import ASSIGNOR, ShareGroup, ShareMember, simple_assign
from pylog.broker.groups.share.members import ShareGroupRecords, metadata_hash
from pylog.broker.groups.share.partition import SharePartition
from pylog.broker.groups.share.store import ShareStateStore, expand
from pylog.broker.groups.store import now_ms
from pylog.core.errors import ErrorCode

log = logging.getLogger("pylog.broker.share")
TICK_S = 0.1
LEAVE_EPOCH = -1
INT_MAX = 0x7FFFFFFF


class ShareSession:
    """A member's share session: its epoch and the partitions it fetches."""

    __slots__ = ("epoch", "parts", "conn")

    def __init__(self, conn=None):
        self.epoch = 1
        self.parts: dict[tuple, None] = {}  # (topic id, partition), in order
        self.conn = conn  # the connection that opened it: the session ends when it closes


def heartbeat_error(code: int, msg: str | None = None) -> dict:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": msg, "member_id": None,
            "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}


class GroupFacade(Protocol):
    """What share groups use of the group coordinator: the group ids classic and consumer groups
    hold, and `__consumer_offsets`, where share groups' membership records live too."""

    def group(self, group_id: str): ...

    def append_records(self, group_id: str, records: list) -> int: ...

    def take_share_records(self) -> list: ...


class ShareCoordinator:
    """Every share group of this broker and the state of its share-partitions."""

    def __init__(self, partitions: PartitionLogs, groups: GroupFacade, log_dir: str, stopping: Callable[[], bool]):
        self.partitions = partitions
        self.group_coordinator = groups  # classic and consumer groups: the id space and `__consumer_offsets`
        self._stopping = stopping
        self.groups: dict[str, ShareGroup] = {}
        self.parts: dict[tuple, SharePartition] = {}  # (group, topic id, partition)
        self.sessions: dict[tuple, ShareSession] = {}  # (group, member)
        self.configs = GroupConfigs(log_dir, partitions.config)
        self.store = ShareStateStore(partitions)
        self.dead_letters = DeadLetters(self)
        self.records = ShareGroupRecords(self)
        self.loop = None
        self._ticker = None
        self.persist_failures = 0
        self._next_prune = time.monotonic() + partitions.config["share.coordinator.state.topic.prune.interval.ms"] / 1000
        self.stats = {"acks": {}, "acquired": 0}  # for /metrics (ops/share_metrics.py)

    # ---- lifecycle -------------------------------------------------------------
    def load(self) -> None:
        """Replay `__share_group_state` into share-partitions (before the broker listens)."""
        for (gid, tid, p), st in self.store.load().items():
            info = self.partitions.topic_by_id(tid)
            if info is None:
                continue
            sp = SharePartition(gid, info.name, tid, p, st["start"], st["created"])
            limit = self.delivery_limit(gid)
            sp.load_batches(st["start"], st["batches"], limit, replace=True)
            for start, batches in st["updates"]:
                sp.load_batches(start, batches, limit, replace=False)
            sp.state_epoch, sp.snapshot_epoch = st["state_epoch"], st["snapshot_epoch"]
            sp.persisted = (sp.start, sp.state_epoch, expand(sp.state_batches()))
            sp.updates_since_snapshot = len(st["updates"])
            sp.reload_pending = True  # its acquired batches: the stored (coalesced) state batches
            self.parts[(gid, tid, p)] = sp
            self.groups.setdefault(gid, ShareGroup(gid))
        for gid, g in self.records.replay(self.group_coordinator.take_share_records()).items():
            topology = self._topology(g)
            g.topology = topology if metadata_hash(topology) == g.metadata_hash else ()
            self.groups[gid] = g

    def start(self, loop) -> None:
        self.loop = loop
        self._ticker = loop.call_later(TICK_S, self._tick)

    def stop(self) -> None:
        if self._ticker is not None:
            self._ticker.cancel()
            self._ticker = None

    # ---- configs -----------------------------------------------------------------
    def lock_ms(self, gid: str) -> int:
        return self.configs.value(gid, "share.record.lock.duration.ms")

    def delivery_limit(self, gid: str) -> int:
        return self.configs.value(gid, "share.delivery.count.limit")

    def max_locks(self, gid: str) -> int:
        return self.configs.value(gid, "share.partition.max.record.locks")

    def renew_enabled(self, gid: str) -> bool:
        return str(self.configs.value(gid, "share.renew.acknowledge.enable")).lower() != "false"

    def read_committed(self, gid: str) -> bool:
        return self.configs.value(gid, "share.isolation.level") == "read_committed"

    # ---- share-partitions ------------------------------------------------------------
    def partition(self, gid: str, topic_id, p: int, create: bool = True) -> SharePartition | None:
        """The share-partition, initialized from share.auto.offset.reset on first use; None when the
        topic or partition does not exist."""
        key = (gid, topic_id, p)
        sp = self.parts.get(key)
        if sp is not None or not create:
            return sp
        info = self.partitions.topic_by_id(topic_id)
        plog = self.partitions.logs.get_log(info.name, p) if info is not None else None
        if plog is None:
            return None
        sp = SharePartition(gid, info.name, topic_id, p, self._initial_offset(gid, plog), now_ms())
        self.parts[key] = sp
        self.persist([sp])
        return sp

    def initialize_partition(self, gid: str, topic_id, p: int, start: int) -> SharePartition:
        """InitializeShareGroupState: the share-partition at `start`, nothing in flight (the caller
        persists it)."""
        sp = self.parts.get((gid, topic_id, p))
        if sp is None:
            name = self.partitions.topic_by_id(topic_id).name
            sp = self.parts[(gid, topic_id, p)] = SharePartition(gid, name, topic_id, p, start, now_ms())
        else:
            sp.reset(start)
        return sp

    def forget(self, gid: str, pairs) -> list:
        """Drop the state of a group's (topic id, partition)s: a tombstone each for those it had."""
        gone = [(tid, p) for tid, p in pairs if self.parts.pop((gid, tid, p), None) is not None]
        if gone:
            self.store.delete(gid, gone)
        return gone

    def all_partitions(self) -> list[tuple[tuple, SharePartition]]:
        """[((group, topic id, partition), share-partition)] of every group (a copy)."""
        return list(self.parts.items())

    def _initial_offset(self, gid: str, plog) -> int:
        reset = self.configs.value(gid, "share.auto.offset.reset")
        if reset == "earliest":
            return plog.log_start_offset
        if reset.startswith("by_duration:"):
            found = plog.offset_for_timestamp(now_ms() - parse_duration_ms(reset[len("by_duration:"):]))
            return found[0] if found is not None else plog.high_watermark
        return plog.high_watermark

    def persist(self, parts) -> None:
        """Write the state of changed share-partitions (before the request is answered)."""
        try:
            self.store.write(parts)
        except Exception as e:  # noqa: BLE001 - storage failure: the state stays in memory
            self.persist_failures += 1
            log.error("cannot write %s: %s", self.store.__class__.__name__, e)
            raise
        self.dead_letters.drain(parts)

    def count_acks(self, batches: list) -> None:
        """Acknowledgements by type, for the metrics."""
        acks = self.stats["acks"]
        for b in batches:
            types = b["acknowledge_types"]
            if len(types) == 1:
                acks[types[0]] = acks.get(types[0], 0) + b["last_offset"] - b["first_offset"] + 1
            else:
                for t in types:
                    acks[t] = acks.get(t, 0) + 1

    def wake(self, sp: SharePartition) -> None:
        """Records of `sp` became available: parked share fetches read again."""
        self.partitions.wake(sp.topic, sp.partition)

    # ---- ShareGroupHeartbeat -------------------------------------------------------------
    def heartbeat(self, req: dict, client_id: str, client_host: str) -> dict:
        gid, mid, epoch = req["group_id"], req["member_id"], req["member_epoch"]
        if not gid:
            return heartbeat_error(ErrorCode.INVALID_REQUEST, "GroupId can't be empty.")
        if not mid:
            return heartbeat_error(ErrorCode.INVALID_REQUEST, "MemberId can't be empty.")
        if req["rack_id"] == "":
            return heartbeat_error(ErrorCode.INVALID_REQUEST, "RackId can't be empty.")
        other = self.group_coordinator.group(gid)
        if other is not None and (other.members or other.offsets or getattr(other, "consumer", None)):
            return heartbeat_error(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} is not a share group.")
        g = self.groups.get(gid)
        if epoch == LEAVE_EPOCH:
            if g is not None and mid in g.members:
                self._remove(g, mid)
            return {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": mid,
                    "member_epoch": LEAVE_EPOCH, "heartbeat_interval_ms": 0, "assignment": None}
        if epoch < 0:
            return heartbeat_error(ErrorCode.INVALID_REQUEST, "MemberEpoch is invalid.")
        if g is None:
            if epoch != 0:
                return heartbeat_error(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {mid} is not a member of group {gid}.")
            g = self.groups[gid] = ShareGroup(gid)
        m = g.members.get(mid)
        undo = (g.epoch, g.assignment_epoch, g.assignment_ms, g.topology, dict(g.members),
                None if m is None else (m.subscribed, m.rack_id), g.members == {} and g.epoch == 0)
        changed = False
        before = (g.epoch, g.assignment_epoch, m.epoch if m is not None else None,
                  (m.rack_id, m.subscribed) if m is not None else None)
        if m is None:
            if epoch != 0:
                return heartbeat_error(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {mid} is not a member of group {gid}.")
            if not req["subscribed_topic_names"]:
                return heartbeat_error(ErrorCode.INVALID_REQUEST, "SubscribedTopicNames must be set in first request.")
            if len(g.members) >= self.partitions.config["group.share.max.size"]:
                return heartbeat_error(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                       f"The share group has reached its maximum capacity of "
                                       f"{self.partitions.config['group.share.max.size']} members.")
            m = g.members[mid] = ShareMember(mid, client_id, client_host, req["rack_id"],
                                             sorted(set(req["subscribed_topic_names"])))
            changed = True
        elif epoch > m.epoch:  # an older epoch is a member that has not seen its newest: answered
            return heartbeat_error(ErrorCode.FENCED_MEMBER_EPOCH,
                                   f"The share group member has a larger member epoch ({epoch}) than the "
                                   f"one known by the group coordinator ({m.epoch}).")
        if req["subscribed_topic_names"] is not None and sorted(set(req["subscribed_topic_names"])) != m.subscribed:
            m.subscribed = sorted(set(req["subscribed_topic_names"]))
            changed = True
        if req["rack_id"] is not None:
            m.rack_id = req["rack_id"]
        m.last_seen = time.monotonic()
        try:
            self._advance(g, changed)
        except AssignorError as e:
            return self._assignor_failed(g, m, undo, e)
        if m.epoch != g.assignment_epoch:  # the member moves to the target assignment as it heartbeats
            m.epoch = g.assignment_epoch
            m.assignment = g.target.get(mid, {})
        self._record(g, m, before)
        answer = {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": mid,
                  "member_epoch": m.epoch, "assignment": None,
                  "heartbeat_interval_ms": self.configs.value(gid, "share.heartbeat.interval.ms")}
        if epoch == 0 or m.sent_assignment != m.assignment:
            answer["assignment"] = {"topic_partitions": [
                {"topic_id": tid, "partitions": ps} for tid, ps in sorted(m.assignment.items(), key=str)]}
            m.sent_assignment = m.assignment
        return answer

    def _assignor_failed(self, g: ShareGroup, m: ShareMember, undo: tuple, e: Exception) -> dict:
        """Kafka's heartbeat fails with UNKNOWN_SERVER_ERROR (no message) when its assignor throws,
        and nothing the heartbeat changed is kept (the coordinator's write is rolled back)."""
        log.error("[GroupId %s] Failed to compute a new target assignment for epoch %d: %s.", g.group_id, g.epoch, e)
        g.epoch, g.assignment_epoch, g.assignment_ms, g.topology, g.members, member, new_group = undo
        if member is not None:
            m.subscribed, m.rack_id = member
        if new_group:
            self.groups.pop(g.group_id, None)
        return heartbeat_error(ErrorCode.UNKNOWN_SERVER_ERROR)

    def _topology(self, g: ShareGroup) -> tuple:
        topics = self.partitions.logs.topics
        return tuple((n, topics[n].topic_id, topics[n].num_partitions) for n in g.subscribed_topics() if n in topics)

    def _advance(self, g: ShareGroup, changed: bool) -> None:
        """Kafka's group epoch steps: a change of members, subscriptions or the subscribed topics'
        partitions bumps it (a group's first bump counts twice, as its subscription metadata is
        recorded too); share-partitions not yet initialized for the group are initialized and that
        bumps it again; the target assignment follows the group epoch at the next heartbeat."""
        topology = self._topology(g)
        if changed or topology != g.topology:
            g.epoch += 2 if g.epoch == 0 else 1
            g.topology = topology
            fresh = [(tid, p) for _, tid, n in topology for p in range(n) if (g.group_id, tid, p) not in self.parts]
            for tid, p in fresh:
                self.partition(g.group_id, tid, p)
            if fresh:
                g.epoch += 1
        if g.assignment_epoch != g.epoch and self._may_assign(g):
            g.assignment_epoch = g.epoch
            g.assignment_ms = int(time.time() * 1000)
            old = g.target
            g.target = simple_assign(g, {n: (tid, np) for n, tid, np in g.topology})
            g.target_changed = [mid for mid, a in g.target.items() if old.get(mid) != a or mid not in old]

    def _may_assign(self, g: ShareGroup) -> bool:
        """Kafka's canComputeNextTargetAssignment: at most one new target assignment per
        share.assignment.interval.ms (a heartbeat before then keeps the last one)."""
        interval = self.configs.value(g.group_id, "share.assignment.interval.ms")
        return g.assignment_ms == 0 or interval == 0 or time.time() * 1000 >= g.assignment_ms + interval

    def _record(self, g: ShareGroup, m: ShareMember, before: tuple) -> None:
        """Write what the heartbeat changed to `__consumer_offsets`, in Kafka's order."""
        epoch, assignment_epoch, member_epoch, member = before
        rs = self.records
        out = []
        if member != (m.rack_id, m.subscribed):
            out.append(rs.member(g.group_id, m))
        if epoch != g.epoch:
            out += [rs.epoch(g), rs.initialized(g)]
        if assignment_epoch != g.assignment_epoch:
            out += rs.target(g, g.target_changed)
        if member_epoch != m.epoch:
            out.append(rs.current(g.group_id, m, member_epoch or 0))
        rs.write(g.group_id, out)

    def _remove(self, g: ShareGroup, mid: str, release: bool = False) -> None:
        # a member leaving on its own may still acknowledge (its session closes after the leave
        # heartbeat); one whose session timed out is gone, and its records are released at once
        g.members.pop(mid, None)
        g.target.pop(mid, None)
        g.target_java.pop(mid, None)
        if release:
            self.release_member(g.group_id, mid)
        g.epoch += 1  # the new target assignment is computed at the next heartbeat, as on Kafka
        out = self.records.member_gone(g.group_id, mid) + [self.records.epoch(g)]
        if not g.members:
            g.assignment_epoch = g.epoch
            g.target, g.target_java = {}, {}
            out += self.records.target(g, [])
        if not any((g.group_id, other) in self.sessions for other in g.members):
            for key, sp in self.parts.items():  # Kafka loads them again from their stored state
                if key[0] == g.group_id:
                    sp.reload_pending = True
        self.records.write(g.group_id, out)

    def release_member(self, gid: str, mid: str, only=None) -> None:
        """Release the records `mid` holds (in the partitions `only`, or all), persist, wake fetches."""
        limit = self.delivery_limit(gid)
        changed = [sp for key, sp in self.parts.items() if key[0] == gid and (only is None or key[1:] in only)
                   and sp.release_member(mid, limit)]
        if changed:
            try:
                self.persist(changed)
            except Exception:  # noqa: BLE001 - logged; memory still right
                pass
            for sp in changed:
                self.wake(sp)

    # ---- share sessions -----------------------------------------------------------------
    def session(self, gid: str, mid: str, epoch: int, conn=None):
        """(session, error code) for a request at `epoch`; moves the session to its next epoch."""
        key = (gid, mid)
        if epoch == 0:
            if key not in self.sessions and len(self.sessions) >= self.partitions.config["group.share.max.share.sessions"]:
                return None, ErrorCode.SHARE_SESSION_LIMIT_REACHED
            s = self.sessions[key] = ShareSession(conn)
            if conn is not None:
                opened = getattr(conn, "share_sessions", None)
                if opened is None:
                    opened = conn.share_sessions = {}
                    conn.close_hooks = list(getattr(conn, "close_hooks", ())) + [
                        lambda: self._connection_closed(opened)]
                opened[key] = s
            return s, ErrorCode.NONE
        s = self.sessions.get(key)
        if s is None:
            return None, ErrorCode.SHARE_SESSION_NOT_FOUND
        if epoch == -1:
            return s, ErrorCode.NONE
        if epoch != s.epoch:
            return None, ErrorCode.INVALID_SHARE_SESSION_EPOCH
        s.epoch = 1 if s.epoch >= INT_MAX else s.epoch + 1
        return s, ErrorCode.NONE

    def current_session(self, gid: str, mid: str) -> ShareSession | None:
        return self.sessions.get((gid, mid))

    def _connection_closed(self, opened: dict) -> None:
        # as Kafka does: a consumer whose connection is gone gives its records back at once
        if self._stopping():
            return
        for (gid, mid), s in opened.items():
            if self.sessions.get((gid, mid)) is s:
                self.close_session(gid, mid)

    def close_session(self, gid: str, mid: str) -> None:
        """The final epoch: the session ends and the member's records in it are released."""
        s = self.sessions.pop((gid, mid), None)
        if s is not None:
            self.release_member(gid, mid, set(s.parts))

    # ---- timers ---------------------------------------------------------------------
    def _tick(self) -> None:
        self._ticker = None
        try:
            self.tick()
        except Exception:  # noqa: BLE001 - a bug here must not stop the timers
            log.exception("share coordinator tick failed")
        if self.loop is not None and not self._stopping():
            self._ticker = self.loop.call_later(TICK_S, self._tick)

    def tick(self) -> None:
        now = time.monotonic()
        for g in list(self.groups.values()):
            timeout = self.configs.value(g.group_id, "share.session.timeout.ms") / 1000.0
            for mid in [mid for mid, m in g.members.items() if now - m.last_seen > timeout]:
                log.info("share group %s: member %s left (session timeout)", g.group_id, mid)
                self._remove(g, mid, release=True)
        ms = now_ms()
        expired = []
        for sp in self.parts.values():
            if sp.acquired and sp.expire_locks(ms, self.delivery_limit(sp.group_id)):
                expired.append(sp)
        if expired:
            try:
                self.persist(expired)
            except Exception:  # noqa: BLE001 - logged
                pass
            for sp in expired:
                self.wake(sp)
        if now >= self._next_prune:
            self._next_prune = now + self.partitions.config["share.coordinator.state.topic.prune.interval.ms"] / 1000
            self.store.prune()

    # ---- describe / list / delete ---------------------------------------------------------
    def group(self, gid: str) -> ShareGroup | None:
        return self.groups.get(gid)

    def ensure_group(self, gid: str) -> ShareGroup:
        """The share group, new and empty if there was none (AlterShareGroupOffsets)."""
        return self.groups.setdefault(gid, ShareGroup(gid))

    def all_groups(self) -> list[ShareGroup]:
        return list(self.groups.values())

    def describe(self, gid: str) -> dict:
        """A ShareGroupDescribe group entry."""
        g = self.groups.get(gid)
        if g is None:
            return {"error_code": ErrorCode.GROUP_ID_NOT_FOUND, "error_message": f"Group {gid} not found.",
                    "group_id": gid, "group_state": "Dead", "group_epoch": 0, "assignment_epoch": 0,
                    "assignor_name": "", "members": []}
        names = {info.topic_id: n for n, info in self.partitions.logs.topics.items()}
        members = [{
            "member_id": m.member_id, "rack_id": m.rack_id, "member_epoch": m.epoch, "client_id": m.client_id,
            "client_host": m.client_host, "subscribed_topic_names": list(m.subscribed),
            "assignment": {"topic_partitions": [
                {"topic_id": tid, "topic_name": names.get(tid, ""), "partitions": ps}
                for tid, ps in m.assignment.items()]},
        } for m in g.members.values()]
        return {"error_code": 0, "error_message": None, "group_id": gid, "group_state": g.state,
                "group_epoch": g.epoch, "assignment_epoch": g.assignment_epoch, "assignor_name": ASSIGNOR,
                "members": members}

    def delete_group(self, gid: str) -> int:
        """DeleteGroups on a share group: only an empty one; its state records get tombstones."""
        g = self.groups.get(gid)
        if g is None:
            return ErrorCode.GROUP_ID_NOT_FOUND
        if g.members:
            return ErrorCode.NON_EMPTY_GROUP
        keys = [(tid, p) for g_, tid, p in self.parts if g_ == gid]
        self.records.write(gid, self.records.group_gone(g))
        self.forget(gid, keys)
        del self.groups[gid]
        self.configs.set(gid, {}) if gid in self.configs.overrides else None
        return ErrorCode.NONE
