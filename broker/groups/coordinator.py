"""The group coordinator: one owner over every group of this broker, classic and consumer.

As Kafka's group coordinator shard is one object over both protocols, this
facade holds the groups (one namespace, one place for committed offsets),
routes each request by the group's protocol, owns the timers and the offsets.
The protocols live beside it: groups/classic.py (JoinGroup, SyncGroup,
Heartbeat, LeaveGroup and rebalances), groups/consumer/coordinator.py
(KIP-848's ConsumerGroupHeartbeat), groups/migration.py (classic members of
consumer groups, online upgrade and downgrade); groups/state.py holds one
group's bookkeeping, groups/store.py the records in `__consumer_offsets`, and
api/groups.py turns requests into calls here.

Everything runs on the broker's event loop thread; a 100 ms ticker expires
sessions of both protocols.
"""
from __future__ import annotations

import asyncio
import logging
import time

from pylog.broker.common.partition_logs import PartitionLogs
from pylog.broker.groups.classic import (
    Answer,
    ClassicGroups,
    JoinRequest,
    SyncRequest,
    join_error,
    sync_answer,
)
from pylog.broker.groups.consumer.coordinator import ConsumerGroupCoordinator
from pylog.broker.groups.migration import Migration
from pylog.broker.groups.streams.coordinator import StreamsGroupCoordinator
from pylog.broker.groups.share.configs import LATER_CONFIGS, GroupConfigs
from pylog.broker.groups.share.group import ShareGroup
from pylog.broker.groups.share.coordinator import ShareCoordinator
from pylog.broker.groups.state import COMPLETING, DEAD, EMPTY, Group, OffsetEntry
from pylog.broker.groups import offsets_topic as ot
from pylog.broker.groups.store import GroupStore, now_ms
from pylog.broker.common.scheduler import Ticker
from pylog.core.errors import ErrorCode

log = logging.getLogger("pylog.broker.groups")

TICK_S = 0.1
__all__ = ["Answer", "GroupCoordinator", "JoinRequest", "SyncRequest", "join_error", "sync_answer"]


class GroupCoordinator:
    """Every consumer group of this broker: membership, rebalances and committed offsets.

    Lifecycle (driven by Broker): load() replays `__consumer_offsets`, start(loop)
    starts the session/rebalance ticker and offset expiration, stop() cancels them.
    """

    def __init__(self, partitions: PartitionLogs):
        self.partitions = partitions
        cfg = partitions.config
        self.groups: dict[str, Group] = {}
        self.store = GroupStore(partitions)
        self.min_session = cfg["group.min.session.timeout.ms"]
        self.max_session = cfg["group.max.session.timeout.ms"]
        self.retention_ms = cfg["offsets.retention.minutes"] * 60000
        self.retention_check_s = cfg["offsets.retention.check.interval.ms"] / 1000.0
        self.metadata_max = cfg["offset.metadata.max.bytes"]
        self.loop: asyncio.AbstractEventLoop | None = None
        self._ticker: Ticker | None = None
        self._retention_timer: Ticker | None = None
        self.classic = ClassicGroups(self.groups, self.store, cfg)
        self.consumer = ConsumerGroupCoordinator(partitions, self.groups, self.store)  # KIP-848
        self.migration = Migration(self.classic, self.consumer, self.store, cfg["group.consumer.migration.policy"])
        self.consumer.migration = self.migration  # a heartbeat upgrades, a fence downgrades
        self.streams = StreamsGroupCoordinator(partitions, self.groups, self.store, self.group_config)  # KIP-1071
        # offsets of open transactions (TxnOffsetCommit): producer id -> group -> {(topic, p): OffsetEntry}
        self.txn_offsets: dict[int, dict[str, dict]] = {}
        self.share: ShareCoordinator | None = None  # share groups, once attach_share() is called

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
        self.streams.after_load(time.monotonic())

    def start(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start the session/rebalance ticker and the offset-expiration timer."""
        self.loop = self.classic.loop = loop
        self._ticker = Ticker(loop, TICK_S, lambda: self.tick(time.monotonic()), "group coordinator tick", log)
        self._retention_timer = Ticker(loop, self.retention_check_s, lambda: self.expire_offsets(now_ms()),
                                       "offset expiration", log)

    def stop(self) -> None:
        """Cancel the timers; parked JoinGroup/SyncGroup answers go with their connections."""
        for t in (self._ticker, self._retention_timer):
            if t is not None:
                t.cancel()

    def group_config(self, group_id: str, name: str):
        """A group's effective group config (`streams.*`, ...): its override, else the broker's default."""
        if self.share is not None:
            return self.share.configs.value(group_id, name)
        return self.partitions.config[LATER_CONFIGS[name][0]]

    def attach_share(self, share: ShareCoordinator) -> None:
        """The share coordinator (built after this one and the transaction coordinator): its group
        configs are every group's, and its share groups are reached through this facade."""
        self.share = share

    def ensure_topic(self) -> None:
        """FindCoordinator creates `__consumer_offsets` on first use (raises KafkaError)."""
        self.store.ensure_topic()

    # ================================================================ the facade's reads and writes
    # what the handlers, the share coordinator and the transaction coordinator use: nothing
    # outside groups/ reaches the store or the group table itself
    def group(self, group_id: str) -> Group | None:
        """The classic or consumer group of that id, if any."""
        return self.groups.get(group_id)

    def all_groups(self) -> list[Group]:
        """Every classic and consumer group, in no particular order."""
        return list(self.groups.values())

    def offsets_partition(self, group_id: str) -> int:
        """The `__consumer_offsets` partition of a group (created on first use)."""
        self.store.ensure_topic()
        return ot.partition_for(group_id, self.store.num_partitions)

    def append_records(self, group_id: str, records: list) -> int:
        """Append [(key, value)] records of another group type (share groups' membership) to the
        group's `__consumer_offsets` partition; the error code."""
        return self.store.append(group_id, records)

    def any_txn_offsets(self) -> bool:
        """Some open transaction holds offsets of some group (TxnOffsetCommit, not yet ended)."""
        return bool(self.txn_offsets)

    # share groups behind the same facade: the group-wide requests (ListGroups, DeleteGroups,
    # FindCoordinator for a share-partition, group configs) reach them through these
    def share_groups(self) -> list[ShareGroup]:
        """Every share group (none before the share coordinator is attached)."""
        return self.share.all_groups() if self.share is not None else []

    def delete_any_group(self, group_id: str) -> int:
        """DeleteGroups: a share group through the share coordinator, any other here."""
        if self.share is not None and self.share.group(group_id) is not None:
            return self.share.delete_group(group_id)
        return self.delete_group(group_id)

    def group_config_store(self) -> GroupConfigs | None:
        """The groups' dynamic configs (DescribeConfigs, IncrementalAlterConfigs of a GROUP)."""
        return self.share.configs if self.share is not None else None

    def ensure_share_state_topic(self) -> None:
        """FindCoordinator for a share-partition creates `__share_group_state` (raises KafkaError)."""
        self.share.store.ensure_topic()

    def take_share_records(self) -> list:
        """The share-group records the load met in `__consumer_offsets` (handed over once)."""
        records, self.store.share_records = self.store.share_records, []
        return records

    # ================================================================ timers
    def tick(self, now: float) -> None:
        """Expire sessions and pending member ids; give up on slow joins and syncs."""
        self.consumer.tick(now)
        self.streams.tick(now)
        self.classic.tick(now)

    def expire_offsets(self, now: int) -> int:
        """offsets.retention.minutes: an Empty group's offsets expire that long after it became
        empty (a group never used for membership: after each offset's commit); a group with
        nothing left is removed. Returns the number of offsets expired."""
        n = 0
        for g in list(self.groups.values()):
            if not g.is_(EMPTY) or (g.consumer is not None and g.consumer.members) or \
                    (g.streams is not None and g.streams.members):
                continue
            if g.protocol_type:
                expired = list(g.offsets) if now - g.state_ts >= self.retention_ms else []
            else:
                expired = [tp for tp, e in g.offsets.items() if now - e.commit_ts >= self.retention_ms]
            if not expired and g.offsets:
                continue
            whole = not g.offsets or len(expired) == len(g.offsets)
            if self.store.delete(g.group_id, expired, group=whole,
                                 extra=self.consumer.delete(g) + self.streams.delete(g) if whole else ()) \
                    != ErrorCode.NONE:
                continue
            for tp in expired:
                del g.offsets[tp]
            n += len(expired)
            if not g.offsets:
                g.transition(DEAD)
                del self.groups[g.group_id]
                log.info("group %s expired", g.group_id)
        return n
    # ================================================================ membership, routed by protocol
    def join(self, req: JoinRequest) -> Answer:
        """JoinGroup: add or re-add a member; the answer comes when the rebalance completes."""
        gid, member_id, session = req.group_id, req.member_id, req.session_timeout_ms
        log.debug("JoinGroup v%d group=%s member=%s instance=%s", req.version, gid, member_id,
                  req.group_instance_id)
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
                return self.migration.join(g, req)
            if self.store.append(gid, self.consumer.delete(g)) != ErrorCode.NONE:
                return join_error(member_id, ErrorCode.COORDINATOR_NOT_AVAILABLE)
            g.consumer = None  # an empty consumer group becomes a classic one
        return self.classic.join(g, req, now)

    def sync(self, req: SyncRequest) -> Answer:
        """SyncGroup: hand out the leader's assignment."""
        g = self.groups.get(req.group_id)
        log.debug("SyncGroup group=%s member=%s generation=%s state=%s", req.group_id, req.member_id,
                  req.generation, g.state if g else None)
        if g is None or g.is_(DEAD):
            return sync_answer(None, ErrorCode.UNKNOWN_MEMBER_ID if g is None else ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if g.consumer is not None:
            return self.migration.sync(g, req)
        return self.classic.sync(g, req)

    def heartbeat(self, group_id: str, member_id: str, instance_id: str | None, generation: int) -> int:
        """Heartbeat: keep a member's session alive; the error code tells it to rejoin or stop."""
        g = self.groups.get(group_id)
        if g is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if g.is_(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if g.consumer is not None:
            return self.migration.heartbeat(g, member_id, instance_id, generation)
        return self.classic.heartbeat(g, member_id, instance_id, generation)

    def leave(self, group_id: str, member_id: str, instance_id: str | None) -> tuple[str, int]:
        """LeaveGroup: remove one member (by member id, or by instance id for static members).
        Returns the member id it concerned and an error code."""
        g = self.groups.get(group_id)
        if g is None or g.is_(DEAD):
            return member_id, ErrorCode.UNKNOWN_MEMBER_ID if g is None else ErrorCode.COORDINATOR_NOT_AVAILABLE
        if g.consumer is not None:
            return self.migration.leave(g, member_id, instance_id)
        return self.classic.leave(g, member_id, instance_id)

    def consumer_heartbeat(self, req: dict, version: int, client_id: str, client_host: str,
                           may_describe=None) -> dict:
        """ConsumerGroupHeartbeat (KIP-848): the response body; `may_describe(topic)` filters a
        regex subscription (the caller's DESCRIBE permission under an authorizer)."""
        return self.consumer.heartbeat(req, version, client_id, client_host, may_describe)

    def describe_consumer_groups(self, group_ids: list) -> list:
        """ConsumerGroupDescribe: one answer per group id."""
        return self.consumer.describe(group_ids)

    def fetch_check(self, g: Group, member_id: str | None, member_epoch: int) -> int:
        """OffsetFetch v9+ from a member of consumer or streams group `g`: its id and current epoch."""
        if g.streams is not None:
            return self.streams.offset_check(g.streams, member_id, member_epoch, fetch=True)
        return self.consumer.offset_check(g.consumer, member_id, member_epoch, fetch=True)

    def streams_heartbeat(self, req: dict, version: int, client_id: str, client_host: str) -> dict:
        """StreamsGroupHeartbeat (KIP-1071): the response body."""
        return self.streams.heartbeat(req, version, client_id, client_host)

    def describe_streams_groups(self, group_ids: list, include_description: bool = False) -> list:
        """StreamsGroupDescribe: one answer per group id."""
        return self.streams.describe(group_ids, include_description)

    def update_topology_description(self, req: dict) -> tuple[int, str | None]:
        """StreamsGroupTopologyDescriptionUpdate: (error code, message)."""
        return self.streams.update_description(req)


    # ================================================================ offsets
    def commit_offsets(self, group_id: str, generation: int, member_id: str, instance_id: str | None,
                       offsets: list) -> list[int]:
        """Commit [((topic, partition), offset, leader_epoch, metadata)]; an error code for each."""
        code = self._commit_check(group_id, generation, member_id, instance_id, [tp for tp, *_ in offsets])
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
                           member_id: str, instance_id: str | None, offsets: list,
                           stale_epoch_error: bool = False) -> list[int]:
        """TxnOffsetCommit: write [((topic, partition), offset, leader_epoch, metadata)] in the
        producer's transaction; they become the group's offsets when its COMMIT marker is written.
        A member's stale epoch is ILLEGAL_GENERATION unless the request version knows
        STALE_MEMBER_EPOCH (`stale_epoch_error`, v6), as Kafka answers older clients."""
        code = self._commit_check(group_id, generation, member_id or "", instance_id, [tp for tp, *_ in offsets]) \
            if generation >= 0 or member_id else (ErrorCode.NONE if group_id else ErrorCode.INVALID_GROUP_ID)
        if code == ErrorCode.STALE_MEMBER_EPOCH and not stale_epoch_error:
            code = ErrorCode.ILLEGAL_GENERATION
        elif code == ErrorCode.ILLEGAL_GENERATION and stale_epoch_error and group_id not in self.groups:
            code = ErrorCode.GROUP_ID_NOT_FOUND  # v6 names an unknown group as such
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

    def _commit_check(self, gid: str, gen: int, mid: str, inst: str | None, partitions: list) -> int:
        if not gid:
            return ErrorCode.INVALID_GROUP_ID
        g = self.groups.get(gid)
        if g is None:  # a simple (admin) commit creates it
            return ErrorCode.NONE if gen < 0 else ErrorCode.ILLEGAL_GENERATION
        if g.is_(DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if g.consumer is not None:
            return self.consumer.commit_check(g.consumer, mid, gen, partitions)
        if g.streams is not None:
            return self.streams.offset_check(g.streams, mid, gen)
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
        elif g.streams is not None:
            subscribed = self.streams.source_topics(g.streams)
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
        if not g.is_(EMPTY) or (g.consumer is not None and g.consumer.members) or \
                (g.streams is not None and g.streams.members):
            return ErrorCode.NON_EMPTY_GROUP
        code = self.store.delete(group_id, list(g.offsets), group=True,
                                 extra=self.consumer.delete(g) + self.streams.delete(g))
        if code == ErrorCode.NONE:
            g.transition(DEAD)
            del self.groups[group_id]
        return code
