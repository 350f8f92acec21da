"""The group coordinator's persistence: its records in `__consumer_offsets`.

Committed offsets and group metadata are appended through the storage engine
like any produce, one batch per write, on the group's partition
(`abs(javaHashCode(group_id)) % offsets.topic.num.partitions`, groups/offsets_topic.py
holds the record layouts). At start-up every partition is replayed to rebuild
the groups: the latest record per key wins, a tombstone removes.
"""
from __future__ import annotations

import logging
import time

from pylog.broker.common.partition_logs import PartitionLogs
from pylog.broker.groups.consumer import store as cgs
from pylog.broker.groups.streams import store as sgs
from pylog.broker.groups import offsets_topic as ot
from pylog.broker.groups.state import EMPTY, STABLE, Group, Member, OffsetEntry
from pylog.core.errors import ErrorCode, MessageTooLargeError, RecordListTooLargeError
from pylog.core.protocol.share_group_records import is_share_record
from pylog.core.records import BatchBuilder, RecordBatch
from pylog.core.records.control import COMMIT, read_control_record
from pylog.core.records.errors import TruncatedBatchError
from pylog.core.records.header import iter_headers

log = logging.getLogger("pylog.broker.groups")

READ_CHUNK = 1 << 20  # bytes read per step while replaying


def iter_log_batches(plog):
    """(header, RecordBatch, first offset still to read) of every batch of a partition, control
    batches included, read in chunks from the log start to the log end (coordinators' replay)."""
    offset = plog.log_start_offset
    end = plog.log_end_offset
    while offset < end:
        sl = plog.read(offset, READ_CHUNK, upper_bound=end)
        if not sl.length:
            break
        data = memoryview(sl.read_bytes())
        moved = False
        try:
            for pos, h in iter_headers(data, verify_crc=False):
                yield h, RecordBatch(data, pos), offset
                offset = h.last_offset + 1
                moved = True
        except TruncatedBatchError:
            pass  # the read ended inside a batch: the next read starts at it
        if not moved:
            break


def iter_keyed_records(logs, topic: str, partitions: int, first: int = 0):
    """The keyed data records of an internal topic's partitions, each partition from its log
    start to its end (control batches skipped): what a coordinator replays at load."""
    for p in range(first, partitions):
        plog = logs.get_log(topic, p)
        if plog is None:
            continue
        for h, batch, start in iter_log_batches(plog):
            if h.is_control:
                continue
            for r in batch.records():
                if r.offset >= start and r.key is not None:
                    yield r


def is_commit_marker(batch) -> bool:
    """A control batch holding a COMMIT marker."""
    for r in batch.records():
        return read_control_record(r).type == COMMIT
    return False


def now_ms() -> int:
    """Wall-clock milliseconds: commit and state timestamps in the records."""
    return int(time.time() * 1000)


class GroupStore:
    """Reads and writes the coordinator's records; owns nothing but the topic's partition count."""

    def __init__(self, partitions: PartitionLogs):
        self.partitions = partitions
        self.config = partitions.config
        self.num_partitions = self.config["offsets.topic.num.partitions"]
        self.loaded_records = 0
        self.share_records: list = []  # share-group records met at load, for the share coordinator

    # ---- start-up ------------------------------------------------------------
    def load(self, groups: dict[str, Group], txn_offsets: dict | None = None) -> None:
        """Replay `__consumer_offsets` into `groups` (before the broker listens). Offsets committed in
        a transaction apply at its COMMIT marker; those of transactions still open at the end go to
        `txn_offsets` ({producer id: [(key, value)]})."""
        logs = self.partitions.logs
        info = logs.topics.get(ot.TOPIC) if logs is not None else None
        if info is None:
            return
        self.num_partitions = info.num_partitions  # the topic as created wins over the config
        t0 = time.monotonic()
        for p in range(info.num_partitions):
            plog = logs.get_log(ot.TOPIC, p)
            if plog is not None:
                pending: dict[int, list] = {}
                self._replay(plog, groups, pending)
                if txn_offsets is not None:
                    for pid, recs in pending.items():
                        txn_offsets.setdefault(pid, []).extend(recs)
        now = time.monotonic()
        for g in groups.values():
            for m in g.members.values():
                m.touch(now)
        log.info("loaded %d groups from %d %s records in %.2fs", len(groups), self.loaded_records,
                 ot.TOPIC, time.monotonic() - t0)

    def _replay(self, plog, groups: dict[str, Group], pending: dict[int, list]) -> None:
        for h, batch, start in iter_log_batches(plog):
            if h.is_control:
                recs = pending.pop(h.producer_id, None)
                if recs and h.is_transactional and is_commit_marker(batch):
                    for k, v in recs:
                        self._apply(groups, k, v)
                continue
            records = [(r.key, r.value) for r in batch.records() if r.offset >= start]
            if h.is_transactional:
                pending.setdefault(h.producer_id, []).extend(records)
                continue
            for k, v in records:
                self._apply(groups, k, v)

    def _apply(self, groups: dict[str, Group], key, value) -> None:
        if key is None:
            return
        if is_share_record(key):
            self.share_records.append((bytes(key), None if value is None else bytes(value)))
            return
        try:
            if cgs.is_consumer_record(key):
                self.loaded_records += 1
                cgs.apply(groups, bytes(key), None if value is None else bytes(value))
                return
            if sgs.is_streams_record(key):
                self.loaded_records += 1
                sgs.apply(groups, bytes(key), None if value is None else bytes(value))
                return
            rec = ot.parse_record(bytes(key), None if value is None else bytes(value))
        except Exception as e:  # noqa: BLE001 - one bad record must not stop the load
            log.warning("skipping unreadable %s record: %s", ot.TOPIC, e)
            return
        self.loaded_records += 1
        if isinstance(rec, ot.OffsetRecord):
            g = groups.get(rec.group)
            if rec.value is None:
                if g is not None:
                    g.offsets.pop((rec.topic, rec.partition), None)
                return
            if g is None:
                g = groups[rec.group] = Group(rec.group)
            g.offsets[(rec.topic, rec.partition)] = OffsetEntry(*rec.value)
            return
        if rec.value is None:
            groups.pop(rec.group, None)
            return
        g = groups.get(rec.group)
        if g is None:
            g = groups[rec.group] = Group(rec.group)
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

    # ---- writes --------------------------------------------------------------
    def ensure_topic(self) -> None:
        """Create `__consumer_offsets` (compacted) on first use, as Kafka does."""
        logs = self.partitions.logs
        if ot.TOPIC in logs.topics:
            return
        logs.create_topic(ot.TOPIC, self.num_partitions, {
            "cleanup.policy": "compact",
            "segment.bytes": str(self.config["offsets.topic.segment.bytes"]),
            "compression.type": "producer",
        })
        log.info("created %s with %d partitions", ot.TOPIC, self.num_partitions)

    def append(self, group_id: str, records: list, producer: tuple[int, int] | None = None) -> int:
        """Append [(key, value)] as one batch to the group's partition; a Kafka error code.
        producer=(id, epoch): a transactional batch (TxnOffsetCommit), decided by the marker."""
        try:
            self.ensure_topic()
            p = ot.partition_for(group_id, self.num_partitions)
            plog = self.partitions.logs.get_log(ot.TOPIC, p)
            if plog is None:
                return ErrorCode.COORDINATOR_NOT_AVAILABLE
            now = now_ms()
            if producer is None:
                b = BatchBuilder()
            else:
                b = BatchBuilder(producer_id=producer[0], producer_epoch=producer[1], is_transactional=True)
            for k, v in records:
                b.append(now, k, v)
            if producer is None:
                plog.append_as_leader(bytearray(b.build()), self.partitions.leader_epoch(plog), now_ms=now)
            else:
                plog.append_internal(bytearray(b.build()), self.partitions.leader_epoch(plog), now_ms=now)
            self.partitions.wake(ot.TOPIC, p)
            return ErrorCode.NONE
        except (MessageTooLargeError, RecordListTooLargeError):
            return ErrorCode.INVALID_COMMIT_OFFSET_SIZE
        except Exception as e:  # noqa: BLE001 - storage failure: the client retries elsewhere/later
            log.error("cannot write to %s: %s", ot.TOPIC, e)
            return ErrorCode.COORDINATOR_NOT_AVAILABLE

    def store_group(self, g: Group) -> int:
        """Write the group's metadata (generation, protocol, members and assignments)."""
        members = [ot.StoredMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                                   m.rebalance_timeout_ms, m.session_timeout_ms,
                                   m.metadata(g.protocol_name or ""), m.assignment)
                   for m in g.members.values()]
        value = ot.group_value(ot.StoredGroup(g.protocol_type or "", g.generation, g.protocol_name,
                                              g.leader_id if g.members else None, g.state_ts, members))
        return self.append(g.group_id, [(ot.group_key(g.group_id), value)])

    def store_offsets(self, group_id: str, entries: list, producer: tuple[int, int] | None = None) -> int:
        """Write committed offsets: [((topic, partition), OffsetEntry)] (producer: in a transaction)."""
        return self.append(group_id, [
            (ot.offset_key(group_id, t, p), ot.offset_value(e.offset, e.leader_epoch, e.metadata, e.commit_ts))
            for (t, p), e in entries], producer)

    def delete(self, group_id: str, partitions, *, group: bool = False, extra=()) -> int:
        """Tombstones for the group's offsets of `partitions` (and, with group=True, its metadata),
        after `extra` records (a consumer group's own tombstones)."""
        records = list(extra) + [(ot.offset_key(group_id, t, p), None) for t, p in partitions]
        if group:
            records.append((ot.group_key(group_id), None))
        return self.append(group_id, records)
