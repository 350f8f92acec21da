"""KIP-848 in the group coordinator: ConsumerGroupHeartbeat, ConsumerGroupDescribe, timers.

Each heartbeat (1) creates or updates the member and bumps the group epoch when
membership, a subscription or the subscribed topics' metadata changed,
(2) recomputes the target assignment with the group's server-side assignor when
the group epoch is ahead of the assignment epoch, (3) moves the member one step
toward its target (consumer_group.reconcile), and answers with the member's
epoch and, when it changed or was asked for, its assignment. Every change is
appended to `__consumer_offsets` as Kafka's consumer-group records
(groups/consumer/store.py) before the answer goes out.

Groups live in the classic coordinator's `groups` map (one namespace, one
place for committed offsets): a Group whose `consumer` is set is a consumer
group. The classic ticker calls tick() to expire sessions (session timeout),
fence members that do not revoke within their rebalance timeout, and
re-resolve subscriptions when topics appear or grow (regex subscriptions).
"""
from __future__ import annotations

import logging
import re
import time
import uuid
from typing import Protocol

from pylog.broker.common.partition_logs import PartitionLogs
from pylog.broker.groups.consumer import store as cgs
from pylog.broker.groups.consumer.group import (
    LEAVE_EPOCH,
    LEAVE_STATIC_EPOCH,
    M_UNREVOKED,
    ConsumerGroup,
    ConsumerMember,
    by_topic,
    commit_epoch_error,
    from_wire,
    leave_for_now,
    reconcile,
    to_wire,
)
from pylog.broker.groups.consumer.assignors import ASSIGNORS, MemberSpec
from pylog.broker.groups.consumer.checks import HeartbeatError, check_epoch, regex, static_member_of, validate
from pylog.broker.groups.consumer.undo import Undo
from pylog.broker.groups.state import Group
from pylog.core.errors import ErrorCode

log = logging.getLogger("pylog.broker.groups")


class ProtocolChanges(Protocol):
    """Where a group changes protocol (groups/migration.py): a KIP-848 member joining a classic
    group upgrades it; the last KIP-848 member leaving may turn it classic again."""

    def can_upgrade(self, g: Group) -> bool: ...

    def upgrade(self, g: Group, records: list) -> None: ...

    def maybe_downgrade(self, g: Group, records: list) -> bool: ...


class ConsumerGroupCoordinator:
    """The KIP-848 half of the group coordinator (see the module text); `groups` and `store`
    are the coordinator's, shared with classic groups."""

    def __init__(self, partitions: PartitionLogs, groups: dict[str, Group], store):
        self.partitions = partitions
        self.groups = groups
        self.store = store
        cfg = partitions.config
        self.session_ms = cfg["group.consumer.session.timeout.ms"]
        self.heartbeat_ms = cfg["group.consumer.heartbeat.interval.ms"]
        # Kafka also takes its assignor classes' names ("...assignor.UniformAssignor")
        names = [a.rsplit(".", 1)[-1].removesuffix("Assignor").lower() for a in cfg["group.consumer.assignors"]]
        self.assignors = [a for a in names if a in ASSIGNORS] or ["uniform"]
        self.max_size = cfg["group.consumer.max.size"]
        self.enabled = "consumer" in cfg["group.coordinator.rebalance.protocols"]
        # set by the group coordinator, which owns the migration
        self.migration: ProtocolChanges | None = None
        self._regexes: dict[str, re.Pattern] = {}
        self._topics_sig = None

    # ================================================================ helpers
    def _topics(self) -> dict:
        logs = self.partitions.logs
        return logs.topics if logs is not None else {}

    def topic_ids(self, partitions) -> set:
        """{(topic id, partition)} of [(topic name, [partition])], skipping unknown topics."""
        topics = self._topics()
        return {(topics[t].topic_id, p) for t, ps in partitions for p in ps if t in topics}

    def _member_topics(self, m: ConsumerMember, topics: dict) -> set:
        names = {n for n in m.subscribed_names if n in topics}
        if m.subscribed_regex:
            pat = self._regexes.get(m.subscribed_regex)
            if pat is None:
                pat = self._regexes[m.subscribed_regex] = regex(m.subscribed_regex)
            # Kafka matches every topic name (internal ones too), then keeps what the member may describe
            allowed = m.may_describe
            names.update(n for n in topics if pat.fullmatch(n) and (allowed is None or allowed(n)))
        return names

    def subscription_metadata(self, cg: ConsumerGroup) -> dict:
        """{topic name: (topic id, partitions)} of every topic the members subscribe to."""
        topics = self._topics()
        names: set = set()
        for m in cg.members.values():
            names |= self._member_topics(m, topics)
        return {n: (topics[n].topic_id, topics[n].num_partitions) for n in sorted(names)}

    def topic_name(self, topic_id) -> str:
        """The topic's name ("" for a topic id this broker does not know)."""
        info = self.partitions.topic_by_id(topic_id)
        return info.name if info is not None else ""

    def write(self, group_id: str, records: list) -> int:
        """Append the group's records to `__consumer_offsets`; an error code."""
        return self.store.append(group_id, records) if records else ErrorCode.NONE

    # ================================================================ the group's epoch and target
    def bump_epoch(self, cg: ConsumerGroup, records: list) -> None:
        """A new group epoch (membership or subscriptions changed); its record goes to `records`."""
        cg.epoch += 1
        cg.subscription_metadata = self.subscription_metadata(cg)
        records.append(cgs.group_epoch_record(cg))
        log.info("consumer group %s: epoch %d", cg.group_id, cg.epoch)

    def assign(self, cg: ConsumerGroup, records: list) -> None:
        """Recompute the target assignment with the group's assignor, at the group epoch."""
        topics = self._topics()
        meta = cg.subscription_metadata
        by_id = {tid: n for tid, n in meta.values()}
        specs = {mid: MemberSpec({meta[n][0] for n in self._member_topics(m, topics) if n in meta},
                                 set(cg.target.get(mid, ())))
                 for mid, m in cg.members.items()}
        name = cg.preferred_assignor(self.assignors[0])
        new = ASSIGNORS[name](specs, by_id)
        for mid, tps in new.items():
            if cg.target.get(mid) != tps:
                records.append(cgs.target_member_record(cg.group_id, mid, tps))
            cg.target[mid] = tps
        for mid in [x for x in cg.target if x not in cg.members]:
            del cg.target[mid]
        cg.assignment_epoch = cg.epoch
        records.append(cgs.target_epoch_record(cg))
        log.info("consumer group %s: target assignment at epoch %d by %s", cg.group_id, cg.epoch, name)

    def fence(self, g: Group, m: ConsumerMember, records: list, why: str) -> None:
        """Remove member `m` (left, expired or stuck revoking) and bump the epoch; a group left
        with only classic members may turn classic again."""
        cg = g.consumer
        cg.members.pop(m.member_id, None)
        cg.target.pop(m.member_id, None)
        records.extend(cgs.member_tombstones(cg.group_id, m.member_id))
        log.info("consumer group %s: member %s %s", cg.group_id, m.member_id, why)
        self.bump_epoch(cg, records)
        if m.classic is None:
            self.migration.maybe_downgrade(g, records)

    # ================================================================ ConsumerGroupHeartbeat
    def heartbeat(self, req: dict, version: int, client_id: str, client_host: str, may_describe=None) -> dict:
        """Answer one ConsumerGroupHeartbeat request (the response body). `may_describe(topic)`:
        the caller's DESCRIBE permission (an authorizer), which a regex subscription is filtered by."""
        self._caller_may_describe = may_describe
        try:
            return self._heartbeat(req, version, client_id, client_host)
        except HeartbeatError as e:
            return heartbeat_error(e.code, e.message)
        finally:
            self._caller_may_describe = None

    def _group(self, gid: str, create: bool, records: list) -> Group:
        g = self.groups.get(gid)
        if g is None:
            if not create:
                raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {gid} not found.")
            g = self.groups[gid] = Group(gid)
        if g.consumer is None:
            if g.members or g.pending:
                if create and self.migration.can_upgrade(g):
                    self.migration.upgrade(g, records)
                    return g
                raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group.")
            if not create:
                raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {gid} not found.")
            g.consumer = ConsumerGroup(gid)  # an empty classic group (offsets only) becomes a consumer group
        return g

    def _heartbeat(self, req: dict, version: int, client_id: str, client_host: str) -> dict:
        if not self.enabled:
            raise HeartbeatError(ErrorCode.UNSUPPORTED_VERSION, "the consumer rebalance protocol is disabled")
        validate(req, version)
        assignor = req["server_assignor"]
        if assignor is not None and assignor not in self.assignors:
            raise HeartbeatError(ErrorCode.UNSUPPORTED_ASSIGNOR,
                                 f"ServerAssignor {assignor} is not supported. Supported assignors: "
                                 f"{', '.join(self.assignors)}.")
        if req["subscribed_topic_regex"]:
            regex(req["subscribed_topic_regex"])
        gid, mid, epoch, inst = req["group_id"], req["member_id"], req["member_epoch"], req["instance_id"]
        if epoch in (LEAVE_EPOCH, LEAVE_STATIC_EPOCH):
            return self._leave(gid, mid, epoch, inst)
        undo = Undo(self.groups, gid)
        try:
            return self._join_or_beat(req, gid, mid, epoch, inst, assignor, client_id, client_host, undo)
        except HeartbeatError:
            undo.restore()
            raise

    def _join_or_beat(self, req: dict, gid: str, mid: str, epoch: int, inst, assignor, client_id: str,
                      client_host: str, undo: Undo) -> dict:
        now = time.monotonic()
        records: list = []
        g = self._group(gid, epoch == 0, records)
        cg = g.consumer
        undo.member(cg.members.get(mid))
        undo.member(cg.static_member(inst))
        owned = from_wire(req["topic_partitions"])
        is_new = False
        if not mid:
            mid = str(uuid.uuid4())  # v0: the coordinator names the member
        if inst is None:
            m = cg.members.get(mid)
            if epoch == 0:
                if m is None:
                    is_new = True
                    m = ConsumerMember(mid)
                else:  # a member that lost its state rejoins: it owns nothing now
                    m.assigned, m.pending_revocation, m.state, m.epoch, m.previous_epoch = set(), set(), 0, 0, 0
                    m.epochs = {}
            elif m is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {mid} is not a member of group {gid}.")
            else:
                check_epoch(m, epoch, owned)
        else:
            sm = cg.static_member(inst)
            if epoch == 0:
                if sm is None:
                    is_new = True
                    m = cg.members.get(mid) or ConsumerMember(mid)
                elif sm.epoch != LEAVE_STATIC_EPOCH:
                    # Kafka: an instance id held by an active member (even under this member id)
                    raise HeartbeatError(ErrorCode.UNRELEASED_INSTANCE_ID,
                                         f"Static member {mid} with instance id {inst} cannot join the group "
                                         f"because the instance id is owned by {sm.member_id} member.")
                else:
                    m = self.replace_static(cg, sm, mid, records)
            else:
                m = static_member_of(sm, mid, inst)
                check_epoch(m, epoch, owned)
        if is_new and len(cg.members) >= self.max_size:
            raise HeartbeatError(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                 f"The consumer group has reached its maximum capacity of {self.max_size} members.")
        before_sub, before_desc = m.subscription(), cgs.member_description(m)
        before_assigned = frozenset(m.assigned)
        if inst is not None:
            m.instance_id = inst
        if req["rack_id"] is not None:
            m.rack_id = req["rack_id"]
        if req["rebalance_timeout_ms"] != -1:
            m.rebalance_timeout_ms = req["rebalance_timeout_ms"]
        if assignor is not None:
            m.server_assignor = assignor
        if req["subscribed_topic_names"] is not None:
            m.subscribed_names = sorted(set(req["subscribed_topic_names"]))
        if req["subscribed_topic_regex"] is not None:
            m.subscribed_regex = req["subscribed_topic_regex"] or None
        m.client_id, m.client_host = client_id, client_host
        m.may_describe = getattr(self, "_caller_may_describe", None)
        cg.members[mid] = m
        if is_new or cgs.member_description(m) != before_desc:
            records.append(cgs.member_record(gid, m))
        # 1. the group epoch: membership, subscriptions, subscribed topics' metadata
        if is_new or m.subscription() != before_sub or self.subscription_metadata(cg) != cg.subscription_metadata:
            self.bump_epoch(cg, records)
        # 2. the target assignment
        if cg.epoch > cg.assignment_epoch:
            self.assign(cg, records)
        # 3. this member's step toward its target
        was_unrevoked = m.state == M_UNREVOKED
        if reconcile(cg, m, owned) or is_new or epoch == 0:
            records.append(cgs.current_assignment_record(gid, m))
        if m.state == M_UNREVOKED and not was_unrevoked:
            m.rebalance_deadline = now + max(m.rebalance_timeout_ms, 0) / 1000.0
        elif m.state != M_UNREVOKED:
            m.rebalance_deadline = 0.0
        m.session_deadline = now + self.session_ms / 1000.0
        if self.write(gid, records) != ErrorCode.NONE:  # the caller puts the group back as it was
            raise HeartbeatError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "cannot write the group's records")
        # a full heartbeat (after a lost answer): by topic names or by regex, with what it owns
        subscribed = req["subscribed_topic_names"] is not None or req["subscribed_topic_regex"] is not None
        full = epoch == 0 or (req["rebalance_timeout_ms"] != -1 and subscribed and owned is not None)
        answer = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "member_id": mid,
                  "member_epoch": m.epoch, "heartbeat_interval_ms": self.heartbeat_ms, "assignment": None}
        if full or frozenset(m.assigned) != before_assigned:
            answer["assignment"] = {"topic_partitions": to_wire(m.assigned)}
        return answer

    def replace_static(self, cg: ConsumerGroup, old: ConsumerMember, mid: str, records: list) -> ConsumerMember:
        """A static member came back under a new member id: it takes over the old one's
        assignment and target; nothing is rebalanced."""
        cg.members.pop(old.member_id, None)
        records.extend(cgs.member_tombstones(cg.group_id, old.member_id))
        target = cg.target.pop(old.member_id, None)
        old.member_id = mid
        old.epoch = old.previous_epoch = 0
        if target is not None:
            cg.target[mid] = target
            records.append(cgs.target_member_record(cg.group_id, mid, target))
        records.append(cgs.member_record(cg.group_id, old))
        log.info("consumer group %s: static member %s rejoins as %s", cg.group_id, old.instance_id, mid)
        return old

    def _leave(self, gid: str, mid: str, epoch: int, inst: str | None) -> dict:
        g = self.groups.get(gid)
        if g is None or g.consumer is None:
            raise HeartbeatError(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {gid} not found.")
        cg = g.consumer
        records: list = []
        undo = Undo(self.groups, gid)
        undo.member(cg.static_member(inst))
        if inst is None:
            m = cg.members.get(mid)
            if m is None:
                raise HeartbeatError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {mid} is not a member of group {gid}.")
            self.fence(g, m, records, "left")
        else:
            m = static_member_of(cg.static_member(inst), mid, inst)
            if epoch == LEAVE_STATIC_EPOCH:
                # it will be back: keep its partitions (and the group's epoch) until its session
                # expires; what it was revoking goes to the members waiting for it now
                leave_for_now(m, LEAVE_STATIC_EPOCH)
                records.append(cgs.current_assignment_record(gid, m))
                log.info("consumer group %s: static member %s (%s) left for now", gid, mid, inst)
            else:
                self.fence(g, m, records, "left")
        # a downgrade to classic has written its own records
        if g.consumer is not None and self.write(gid, records) != ErrorCode.NONE:
            undo.restore()
            raise HeartbeatError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "cannot write the group's records")
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "member_id": mid,
                "member_epoch": epoch, "heartbeat_interval_ms": 0, "assignment": None}

    # ================================================================ timers
    def tick(self, now: float) -> None:
        """Expire sessions, fence members stuck revoking, follow topic changes."""
        topics = self._topics()
        sig = tuple((n, t.topic_id, t.num_partitions) for n, t in topics.items())
        topics_changed = sig != self._topics_sig
        self._topics_sig = sig
        for g in list(self.groups.values()):
            cg = g.consumer
            if cg is None or not cg.members:
                continue
            records: list = []
            undo = Undo(self.groups, g.group_id)
            for m in list(cg.members.values()):
                if g.consumer is None:
                    break  # downgraded to a classic group
                if now >= m.session_deadline:
                    self.fence(g, m, records, "session expired")
                elif m.state == M_UNREVOKED and m.rebalance_deadline and now >= m.rebalance_deadline:
                    self.fence(g, m, records, "did not revoke within its rebalance timeout")
            if topics_changed and g.consumer is not None and cg.members \
                    and self.subscription_metadata(cg) != cg.subscription_metadata:
                self.bump_epoch(cg, records)  # e.g. a new topic matches a regex subscription
            if self.write(g.group_id, records) != ErrorCode.NONE and g.consumer is not None:
                undo.restore()  # as it was: the next tick tries again
                self._topics_sig = None

    def after_load(self, now: float) -> None:
        """Members replayed from `__consumer_offsets` get a full session to come back."""
        for g in self.groups.values():
            cg = g.consumer
            if cg is None:
                continue
            cg.subscription_metadata = self.subscription_metadata(cg)
            for m in cg.members.values():
                m.session_deadline = now + self.session_ms / 1000.0
                if m.state == M_UNREVOKED:
                    m.rebalance_deadline = now + max(m.rebalance_timeout_ms, 0) / 1000.0

    # ================================================================ offsets and admin
    @staticmethod
    def offset_check(cg: ConsumerGroup, member_id: str | None, epoch: int, fetch: bool = False) -> int:
        """OffsetCommit/OffsetFetch from a member: its id and current epoch. Without a member
        (epoch < 0: an admin or a consumer without group management) a fetch is always
        allowed and a commit only to an empty group, as Kafka does."""
        if epoch < 0 and (not member_id if fetch else not cg.members):
            return ErrorCode.NONE
        m = cg.members.get(member_id or "")
        if m is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if epoch != m.epoch:
            return ErrorCode.ILLEGAL_GENERATION if m.classic is not None else ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    def commit_check(self, cg: ConsumerGroup, member_id: str | None, epoch: int, partitions) -> int:
        """OffsetCommit/TxnOffsetCommit of [(topic, partition)] from a member. An epoch older
        than the member's is accepted for partitions it has owned (or is revoking) since that
        epoch, as Kafka checks each partition's assignment epoch: a commit sent just before a
        rebalance bumped the member's epoch still lands."""
        code = self.offset_check(cg, member_id, epoch)
        m = cg.members.get(member_id or "")
        if code == ErrorCode.NONE or m is None or epoch > m.epoch:
            return code
        topics = self._topics()
        tps = [(topics[t].topic_id, p) for t, p in partitions if t in topics]
        return code if commit_epoch_error(m, epoch, tps) else ErrorCode.NONE

    def subscribed_topic_names(self, cg: ConsumerGroup) -> set:
        """Topics the group's members subscribe to (by name or regex)."""
        if not cg.members:
            return set()
        return set(cg.subscription_metadata) | {n for m in cg.members.values() for n in m.subscribed_names}

    def delete(self, g: Group) -> list:
        """Tombstones for an empty consumer group's own records (offsets are the caller's)."""
        return cgs.group_tombstones(g.consumer) if g.consumer is not None else []

    # ================================================================ ConsumerGroupDescribe
    def describe(self, group_ids: list) -> list:
        """One ConsumerGroupDescribe answer per group id."""
        out = []
        for gid in group_ids:
            g = self.groups.get(gid)
            if g is None or g.consumer is None:
                msg = f"Group {gid} not found." if g is None else f"Group {gid} is not a consumer group."
                out.append(describe_error(gid, ErrorCode.GROUP_ID_NOT_FOUND, msg))
                continue
            cg = g.consumer
            out.append({
                "error_code": ErrorCode.NONE, "error_message": None, "group_id": gid, "group_state": cg.state,
                "group_epoch": cg.epoch, "assignment_epoch": cg.assignment_epoch,
                "assignor_name": cg.preferred_assignor(self.assignors[0]),
                "members": [self._described_member(cg, m) for m in cg.members.values()],
                "authorized_operations": -2147483648,
            })
        return out

    def _described(self, tps) -> dict:
        return {"topic_partitions": [{"topic_id": t, "topic_name": self.topic_name(t), "partitions": ps}
                                     for t, ps in sorted(by_topic(tps).items(), key=lambda kv: str(kv[0]))]}

    def _described_member(self, cg: ConsumerGroup, m: ConsumerMember) -> dict:
        return {"member_id": m.member_id, "instance_id": m.instance_id, "rack_id": m.rack_id,
                "member_epoch": m.epoch, "client_id": m.client_id, "client_host": m.client_host,
                "subscribed_topic_names": list(m.subscribed_names),
                # Kafka describes a member without a regex with an empty one
                "subscribed_topic_regex": m.subscribed_regex or "",
                "assignment": self._described(m.assigned),
                "target_assignment": self._described(cg.target.get(m.member_id, ())),
                "member_type": 0 if m.classic is not None else 1}  # KIP-1099: 0 classic, 1 consumer


def heartbeat_error(code: int, message: str | None = None) -> dict:
    """A ConsumerGroupHeartbeat answer carrying only an error."""
    # the other fields at their schema defaults, as Kafka leaves them
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "member_id": None,
            "member_epoch": 0, "heartbeat_interval_ms": 0, "assignment": None}


def describe_error(group_id: str, code: int, message: str | None = None) -> dict:
    """A ConsumerGroupDescribe group entry carrying only an error."""
    return {"error_code": code, "error_message": message, "group_id": group_id, "group_state": "",
            "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": [],
            "authorized_operations": -2147483648}
