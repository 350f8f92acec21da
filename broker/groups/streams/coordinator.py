"""Streams groups (KIP-1071) in the group coordinator: StreamsGroupHeartbeat,
StreamsGroupDescribe, StreamsGroupTopologyDescriptionUpdate, timers.

Each heartbeat (1) creates or updates the member and, on the first join, the group's
topology; the group epoch moves when a member joins, leaves or changes its metadata
(process, endpoint, tags, rack, topology epoch) and when the topics of the topology
change; (2) configures the topology against the topics (groups/streams/topology.py):
missing internal topics are created after the answer, with the topology's configs;
(3) recomputes the target assignment with the sticky task assignor when the group epoch
is ahead of the assignment epoch (not before group.streams.initial.rebalance.delay.ms
of a new group, nor within streams.assignment.interval.ms of the last one); (4) moves
the member one step toward its target (groups/streams/group.py). Every change is
appended to `__consumer_offsets` as Kafka's streams-group records before the answer.
"""
from __future__ import annotations

import logging
import time

from pylog.broker.common.partition_logs import PartitionLogs
from pylog.broker.groups.state import Group
from pylog.broker.groups.streams import assignor, store as ss
from pylog.broker.groups.streams import topology as tp
from pylog.broker.groups.streams.answers import (
    describe_error, describe_group, endpoint_map, heartbeat_error, tasks_answer,
)
from pylog.broker.groups.streams.group import (
    LEAVE_EPOCH, LEAVE_STATIC_EPOCH, M_UNREVOKED, ROLES, StreamsGroup, StreamsMember, reconcile, tasks_from_wire,
)
from pylog.core.config import TOPIC_CONFIGS
from pylog.core.errors import ErrorCode

log = logging.getLogger("pylog.broker.groups")


class StreamsGroupCoordinator:
    """The streams half of the group coordinator; `groups` and `store` are the coordinator's.
    `group_config(group_id, name)` gives a group's effective `streams.*` config."""

    def __init__(self, partitions: PartitionLogs, groups: dict[str, Group], store, group_config):
        self.partitions = partitions
        self.groups = groups
        self.store = store
        self.config = group_config
        cfg = partitions.config
        self.max_size = cfg["group.streams.max.size"]
        self.enabled = "streams" in cfg["group.coordinator.rebalance.protocols"]
        self._shutdown: set = set()  # groups a member asked to shut down

    # ================================================================ helpers
    def _topics(self) -> dict:
        logs = self.partitions.logs
        return logs.topics if logs is not None else {}

    def write(self, group_id: str, records: list) -> int:
        return self.store.append(group_id, records) if records else ErrorCode.NONE

    def bump_epoch(self, sg: StreamsGroup, records: list) -> None:
        sg.epoch += 1
        records.append(ss.group_epoch_record(sg))
        log.info("streams group %s: epoch %d", sg.group_id, sg.epoch)

    def configure(self, sg: StreamsGroup) -> None:
        """Configure the topology against the topics as they are (in memory only)."""
        if sg.topology is None:
            return
        topics = self._topics()
        c = tp.configure(sg.topology, {n: t.num_partitions for n, t in topics.items()})
        sg.partitions, sg.stateful = c.partitions, c.stateful
        sg.missing_sources, sg.missing_topics = c.missing_sources, c.missing_internal

    def _assign_due(self, sg: StreamsGroup, now: float) -> bool:
        delay = self.config(sg.group_id, "streams.initial.rebalance.delay.ms") / 1000.0
        interval = self.config(sg.group_id, "streams.assignment.interval.ms") / 1000.0
        if sg.assignment_epoch == 0 and now < sg.created_at + delay:
            return False
        return now >= sg.last_assigned_at + interval or sg.last_assigned_at == 0.0

    def assign(self, sg: StreamsGroup, records: list, now: float) -> None:
        """Recompute the target assignment at the group epoch (empty while not ready)."""
        standbys = self.config(sg.group_id, "streams.num.standby.replicas")
        specs = {mid: assignor.MemberSpec(m.process_id, set((sg.target.get(mid) or {}).get("active", ())),
                                          set((sg.target.get(mid) or {}).get("standby", ())),
                                          dict(m.task_offsets))
                 for mid, m in sg.members.items()}
        parts = sg.partitions if sg.ready else {}
        new = assignor.assign(specs, parts, sg.stateful, standbys)
        for mid, tasks in new.items():
            if sg.target.get(mid) != tasks:
                records.append(ss.target_member_record(sg.group_id, mid, tasks))
            sg.target[mid] = tasks
        for mid in [x for x in sg.target if x not in sg.members]:
            del sg.target[mid]
        sg.assignment_epoch = sg.epoch
        sg.last_assigned_at = now
        records.append(ss.target_epoch_record(sg, int(time.time() * 1000)))
        log.info("streams group %s: target assignment at epoch %d", sg.group_id, sg.epoch)

    def remove(self, sg: StreamsGroup, m: StreamsMember, records: list, why: str) -> None:
        sg.members.pop(m.member_id, None)
        sg.target.pop(m.member_id, None)
        records.extend(ss.member_tombstones(sg.group_id, m.member_id))
        log.info("streams group %s: member %s %s", sg.group_id, m.member_id, why)
        self.bump_epoch(sg, records)

    def _assignment_configs(self, gid: str) -> dict:
        """What the target assignment depends on besides members and topics (a change moves the epoch)."""
        return {"num.standby.replicas": str(self.config(gid, "streams.num.standby.replicas"))}

    def _session_s(self, gid: str) -> float:
        return self.config(gid, "streams.session.timeout.ms") / 1000.0

    # ================================================================ StreamsGroupHeartbeat
    def heartbeat(self, req: dict, version: int, client_id: str, client_host: str) -> dict:
        """Answer one StreamsGroupHeartbeat request (the response body)."""
        invalid = _invalid(req)
        if invalid:
            return heartbeat_error(ErrorCode.INVALID_REQUEST, invalid)
        gid, mid, epoch = req["group_id"], req["member_id"], req["member_epoch"]
        g = self.groups.get(gid)
        if g is not None and g.streams is None and (g.members or g.consumer is not None):
            return heartbeat_error(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} is not a streams group.")
        if epoch in (LEAVE_EPOCH, LEAVE_STATIC_EPOCH):
            return self._leave(g, req)
        if g is None or g.streams is None:
            if epoch != 0:
                return heartbeat_error(ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {gid} not found.")
            g = self.groups.get(gid) or Group(gid)
            # Kafka 4.4 starts a streams group at epoch 1: the first member's join makes it 2
            g.streams = StreamsGroup(gid, epoch=1, created_at=time.monotonic())
            self.groups[gid] = g
        now = time.monotonic()
        sg = g.streams
        records: list = []
        m, err = self._member(sg, req, records)
        if err is not None:
            return err
        bump = self._update_member(sg, m, req, client_id, client_host, records)
        if sg.topology is None and req["topology"] is not None:
            sg.topology = {"epoch": req["topology"]["epoch"], "subtopologies": req["topology"]["subtopologies"]}
            records.append(ss.topology_record(sg))
            bump = True
        self.configure(sg)
        h = tp.metadata_hash(sg.topology, self._topics())
        if h != sg.metadata_hash:
            sg.metadata_hash = h
            bump = True
        validated = sg.topology["epoch"] if sg.ready else -1
        if validated != sg.validated_topology_epoch:  # a newly validated topology may move tasks
            sg.validated_topology_epoch = validated
            bump = True
        configs = self._assignment_configs(gid)
        if bump or configs != sg.last_assignment_configs:  # so do new assignment configs
            sg.last_assignment_configs = configs
            self.bump_epoch(sg, records)
        delayed = False
        if sg.epoch > sg.assignment_epoch:
            if self._assign_due(sg, now):
                self.assign(sg, records, now)
            else:
                delayed = True
        owned = None if req["active_tasks"] is None else {
            r: tasks_from_wire(req[f"{r}_tasks"]) for r in ROLES}
        changed = reconcile(sg, m, owned, now)
        if changed:
            records.append(ss.current_assignment_record(gid, m))
        send_tasks = changed or epoch == 0
        if send_tasks and m.user_endpoint is not None:
            sg.endpoint_epoch += 1
        m.session_deadline = now + self._session_s(gid)
        if req["shutdown_application"]:
            self._shutdown.add(gid)
        code = self.write(gid, records)
        if code != ErrorCode.NONE:
            return heartbeat_error(code, None)
        answer = self._answer(sg, m, req, version, delayed)
        if send_tasks:
            answer.update(tasks_answer(m))
        self._create_missing(sg)
        return answer

    def _member(self, sg: StreamsGroup, req: dict, records: list):
        """(member, None) or (None, error answer): the heartbeat's epoch checked against the member's."""
        mid, epoch, inst = req["member_id"], req["member_epoch"], req["instance_id"]
        m = sg.members.get(mid)
        if epoch == 0:
            if m is not None:
                return m, None
            if len(sg.members) >= self.max_size:
                return None, heartbeat_error(ErrorCode.GROUP_MAX_SIZE_REACHED,
                                             f"The streams group has reached its maximum capacity of "
                                             f"{self.max_size} members.")
            invalid = _invalid_join(req)
            if invalid:
                return None, heartbeat_error(ErrorCode.INVALID_REQUEST, invalid)
            old = sg.static_member(inst)
            if old is not None:
                if old.epoch != LEAVE_STATIC_EPOCH:
                    return None, heartbeat_error(ErrorCode.UNRELEASED_INSTANCE_ID,
                                                 f"Static member {old.member_id} with instance id {inst} "
                                                 "is not released yet.")
                return self._replace_static(sg, old, mid, records), None
            m = sg.members[mid] = StreamsMember(mid)
            return m, None
        if m is None:
            return None, heartbeat_error(ErrorCode.UNKNOWN_MEMBER_ID,
                                         f"Member {mid} is not a member of group {sg.group_id}.")
        if epoch > m.epoch or (epoch < m.epoch and epoch != m.previous_epoch):
            return None, heartbeat_error(ErrorCode.FENCED_MEMBER_EPOCH,
                                         f"The streams group member has a smaller member epoch ({epoch}) than "
                                         f"the one known by the group coordinator ({m.epoch}). The member must "
                                         "abandon all its partitions and rejoin." if epoch < m.epoch else
                                         f"The streams group member has a greater member epoch ({epoch}) than "
                                         f"the one known by the group coordinator ({m.epoch}). The member must "
                                         "abandon all its partitions and rejoin.")
        return m, None

    def _replace_static(self, sg: StreamsGroup, old: StreamsMember, mid: str, records: list) -> StreamsMember:
        """A static member came back with a new member id: it takes the old one's place and target."""
        records.extend(ss.member_tombstones(sg.group_id, old.member_id))
        del sg.members[old.member_id]
        target = sg.target.pop(old.member_id, None)
        old.member_id = mid
        old.epoch, old.previous_epoch = 0, 0
        old.assigned = {r: set() for r in ROLES}
        old.pending_revocation = {r: set() for r in ROLES}
        sg.members[mid] = old
        if target is not None:
            sg.target[mid] = target
            records.append(ss.target_member_record(sg.group_id, mid, target))
        records.append(ss.member_record(sg.group_id, old))
        log.info("streams group %s: static member %s came back as %s", sg.group_id, old.instance_id, mid)
        return old

    @staticmethod
    def _update_member(sg, m: StreamsMember, req: dict, client_id: str, client_host: str, records: list) -> bool:
        """Apply the heartbeat's non-null fields; True when the group epoch must move."""
        new = m.epoch == 0 and not m.process_id
        before, before_epoch_view = m.description(), m.metadata_for_epoch()
        if req["instance_id"] is not None:
            m.instance_id = req["instance_id"]
        if req["rack_id"] is not None:
            m.rack_id = req["rack_id"]
        if req["rebalance_timeout_ms"] != -1:
            m.rebalance_timeout_ms = req["rebalance_timeout_ms"]
        if req["process_id"] is not None:
            m.process_id = req["process_id"]
        if req["user_endpoint"] is not None:
            m.user_endpoint = (req["user_endpoint"]["host"], req["user_endpoint"]["port"])
        if req["client_tags"] is not None:
            m.client_tags = {kv["key"]: kv["value"] for kv in req["client_tags"]}
        if req["topology"] is not None:
            m.topology_epoch = req["topology"]["epoch"]
        for key in ("task_offsets", "task_end_offsets"):
            if req[key] is not None:
                setattr(m, key, {(o["subtopology_id"], o["partition"]): o["offset"] for o in req[key]})
        m.client_id, m.client_host = client_id, client_host
        if m.description() != before or new:
            records.append(ss.member_record(sg.group_id, m))
        return new or m.metadata_for_epoch() != before_epoch_view

    def _answer(self, sg: StreamsGroup, m: StreamsMember, req: dict, version: int, delayed: bool) -> dict:
        gid = sg.group_id
        lag = self.config(gid, "streams.acceptable.recovery.lag")
        status = []
        if sg.missing_sources:
            status.append({"status_code": tp.MISSING_SOURCE_TOPICS,
                           "status_detail": f"Source topics {', '.join(sg.missing_sources)} are missing."})
        if sg.missing_topics:
            detail = f"Internal topics are missing: [{', '.join(sorted(sg.missing_topics))}]"
            if sg.creation_errors:
                detail += "; Unable to create topics: " + "; ".join(
                    f"{t}: {e}" for t, e in sorted(sg.creation_errors.items()))
            status.append({"status_code": tp.MISSING_INTERNAL_TOPICS, "status_detail": detail})
        if gid in self._shutdown:
            status.append({"status_code": tp.SHUTDOWN_APPLICATION,
                           "status_detail": "A KafkaStreams instance encountered a fatal error and requested "
                                            "a shutdown for the entire application."})
        if delayed:
            status.append({"status_code": tp.ASSIGNMENT_DELAYED,
                           "status_detail": "Assignment delayed due to the configured initial rebalance delay."})
        body = {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
                "member_id": m.member_id, "member_epoch": m.epoch,
                "heartbeat_interval_ms": self.config(gid, "streams.heartbeat.interval.ms"),
                "acceptable_recovery_lag_legacy": min(lag, 2**31 - 1), "acceptable_recovery_lag": lag,
                "task_offset_interval_ms": self.config(gid, "streams.task.offset.interval.ms"),
                "status": status, "endpoint_information_epoch": sg.endpoint_epoch}
        if req["endpoint_information_epoch"] != sg.endpoint_epoch and any(
                x.user_endpoint is not None for x in sg.members.values()):
            body["partitions_by_user_endpoint"] = endpoint_map(sg)
        return body

    def _create_missing(self, sg: StreamsGroup) -> None:
        """Create the topology's missing internal topics (errors shown in the next heartbeats)."""
        logs = self.partitions.logs
        for name, (n, configs, _rf) in sorted(sg.missing_topics.items()):
            if name in logs.topics:
                continue
            try:
                TOPIC_CONFIGS.parse(configs)
                logs.create_topic(name, n, configs or None)
                sg.creation_errors.pop(name, None)
                log.info("streams group %s: created internal topic %s with %d partitions", sg.group_id, name, n)
            except Exception as e:  # noqa: BLE001 - reported in the heartbeat's status
                sg.creation_errors[name] = str(e)

    def _leave(self, g: Group | None, req: dict) -> dict:
        mid, epoch = req["member_id"], req["member_epoch"]
        sg = None if g is None else g.streams
        m = None if sg is None else sg.members.get(mid)
        if m is None:
            return heartbeat_error(ErrorCode.UNKNOWN_MEMBER_ID,
                                   f"Member {mid} is not a member of group {req['group_id']}.")
        records: list = []
        if epoch == LEAVE_STATIC_EPOCH and m.instance_id is not None:
            m.epoch = LEAVE_STATIC_EPOCH
            records.append(ss.current_assignment_record(sg.group_id, m))
        else:
            self.remove(sg, m, records, "left")
        code = self.write(sg.group_id, records)
        if code != ErrorCode.NONE:
            return heartbeat_error(code, None)
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "member_id": mid,
                "member_epoch": epoch, "heartbeat_interval_ms": 0, "task_offset_interval_ms": 0,
                "status": None, "endpoint_information_epoch": 0}

    # ================================================================ timers
    def tick(self, now: float) -> None:
        """Expire sessions, fence members stuck revoking, run deferred assignments."""
        for g in list(self.groups.values()):
            sg = g.streams
            if sg is None or not sg.members:
                continue
            records: list = []
            for m in list(sg.members.values()):
                if now >= m.session_deadline:
                    self.remove(sg, m, records, "expired")
                elif m.state == M_UNREVOKED and now >= m.rebalance_deadline:
                    self.remove(sg, m, records, "did not revoke its tasks in time")
            if sg.epoch > sg.assignment_epoch and self._assign_due(sg, now):
                self.configure(sg)
                self.assign(sg, records, now)
            self.write(sg.group_id, records)

    def after_load(self, now: float) -> None:
        """Members replayed from `__consumer_offsets` get a full session to come back."""
        for g in self.groups.values():
            sg = g.streams
            if sg is None:
                continue
            sg.created_at = now - 3600.0  # not a new group: no initial delay
            self.configure(sg)
            for m in sg.members.values():
                m.session_deadline = now + self._session_s(g.group_id)
                if m.state == M_UNREVOKED:
                    m.rebalance_deadline = now + max(m.rebalance_timeout_ms, 0) / 1000.0

    # ================================================================ offsets and admin
    @staticmethod
    def offset_check(sg: StreamsGroup, member_id: str | None, epoch: int, fetch: bool = False) -> int:
        """OffsetCommit/TxnOffsetCommit/OffsetFetch from a member: its id and an epoch it has had.
        Without a member a fetch is always allowed and a commit only to an empty group."""
        if epoch < 0 and (not member_id if fetch else not sg.members):
            return ErrorCode.NONE
        m = sg.members.get(member_id or "")
        if m is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if epoch > m.epoch or (fetch and epoch != m.epoch):
            return ErrorCode.STALE_MEMBER_EPOCH
        return ErrorCode.NONE

    def delete(self, g: Group) -> list:
        """Tombstones for an empty streams group's own records (offsets are the caller's)."""
        return ss.group_tombstones(g.streams) if g.streams is not None else []

    def source_topics(self, sg: StreamsGroup) -> set:
        """The topics a non-empty group reads (OffsetDelete refuses them)."""
        if not sg.members or sg.topology is None:
            return set()
        return {t for s in sg.topology["subtopologies"] for t in s["source_topics"]} | {
            t["name"] for s in sg.topology["subtopologies"] for t in s["repartition_source_topics"]}

    # ================================================================ describe
    def describe(self, group_ids: list, include_description: bool) -> list:
        """One StreamsGroupDescribe answer per group id."""
        out = []
        for gid in group_ids:
            g = self.groups.get(gid)
            if g is None or g.streams is None:
                msg = f"Group {gid} not found." if g is None else f"Group {gid} is not a streams group."
                out.append(describe_error(gid, ErrorCode.GROUP_ID_NOT_FOUND, msg))
                continue
            out.append(describe_group(g.streams, include_description))
        return out

    def update_description(self, req: dict) -> tuple[int, str | None]:
        """StreamsGroupTopologyDescriptionUpdate: keep a member's topology description."""
        g = self.groups.get(req["group_id"])
        sg = None if g is None else g.streams
        if sg is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, f"Streams group {req['group_id']} not found."
        if req["member_id"] not in sg.members:
            return ErrorCode.UNKNOWN_MEMBER_ID, f"Member {req['member_id']} is not a member of the group."
        sg.description, sg.description_epoch = req["topology_description"], req["topology_epoch"]
        return ErrorCode.NONE, None


def _invalid(req: dict) -> str | None:
    """Kafka's checks of a StreamsGroupHeartbeat request before it looks at the group."""
    if not req["group_id"]:
        return "GroupId can't be empty."
    if not req["member_id"]:
        return "MemberId can't be empty."
    epoch = req["member_epoch"]
    if epoch < LEAVE_STATIC_EPOCH:
        return f"MemberEpoch is {epoch}, but must be greater than or equal to -2."
    if epoch == LEAVE_STATIC_EPOCH and req["instance_id"] is None:
        return "InstanceId can't be null when MemberEpoch is -2."
    return None


def _invalid_join(req: dict) -> str | None:
    """What a member joining anew must send."""
    if req["rebalance_timeout_ms"] == -1:
        return "RebalanceTimeoutMs must be provided when joining the group."
    if req["topology"] is None:
        return "Topology must be non-null when joining the group."
    if req["process_id"] is None:
        return "ProcessId can't be null when joining the group."
    for r in ROLES:
        if req[f"{r}_tasks"] is None or req[f"{r}_tasks"]:
            return f"{r.capitalize()}Tasks must be empty when (re-)joining."
    return None
