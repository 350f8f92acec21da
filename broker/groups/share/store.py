"""Share-partition state in `__share_group_state`, in Kafka's record format.

Each change of a share-partition is appended before the request that made it
is answered, as Kafka 4.4's share coordinator writes it: a ShareSnapshot record
(the partition's whole state: start offset, state epoch, the in-flight records
as state batches) when the partition has none yet, when its state epoch changed
or after `share.coordinator.snapshot.update.records.per.snapshot` ShareUpdate
records; otherwise a ShareUpdate record with the snapshot's epoch, the start
offset and only the batches that changed since the last write. Acquired records
are stored as available with their delivery count, so after a crash they come
back available and a poison record keeps counting toward the delivery limit.
Replay at start-up merges the updates into the latest snapshot. The topic has
`cleanup.policy=delete` and `retention.ms=-1` as Kafka's; every
`share.coordinator.state.topic.prune.interval.ms` the records before the
earliest latest-snapshot of a live share-partition are deleted (Kafka's
ShareCoordinatorOffsetsManager and its write-state-record-prune job). The
partition of a key is Kafka's: abs(hash("group:topicId:partition")) % n.
"""
from __future__ import annotations

import logging
import time

from pylog.broker.common.partition_logs import PartitionLogs
from pylog.broker.groups.offsets_topic import java_string_hash
from pylog.broker.groups.share.partition import coalesce
from pylog.broker.groups.store import iter_keyed_records, now_ms
from pylog.core.protocol import share_state_records as ssr
from pylog.core.records import BatchBuilder
from pylog.core.records.kafka_types import uuid_text

log = logging.getLogger("pylog.broker.share")
TOPIC = ssr.TOPIC


def key_string(group_id: str, topic_id, partition: int) -> str:
    """Kafka's SharePartitionKey coordinator key."""
    return f"{group_id}:{uuid_text(topic_id)}:{partition}"


def partition_for(group_id: str, topic_id, partition: int, n: int) -> int:
    """The `__share_group_state` partition holding a share-partition's state."""
    h = java_string_hash(key_string(group_id, topic_id, partition))
    h = 0 if h == -(1 << 31) else abs(h)
    return h % n


class ShareStateStore:
    """Reads and writes share-partition state records."""

    def __init__(self, partitions: PartitionLogs):
        self.partitions = partitions
        self.num_partitions = partitions.config["share.coordinator.state.topic.num.partitions"]
        self.per_snapshot = partitions.config["share.coordinator.snapshot.update.records.per.snapshot"]
        self.loaded_records = 0
        self.written = 0
        self.snapshots = self.updates = 0
        # {state partition: {share-partition key: offset of its latest ShareSnapshot}} (Kafka's offsets manager)
        self.snapshot_offsets: dict[int, dict] = {}
        self.redundant: dict[int, int] = {}  # {state partition: offset before which no record is needed}

    def ensure_topic(self) -> None:
        logs = self.partitions.logs
        if TOPIC in logs.topics:
            return
        logs.create_topic(TOPIC, self.num_partitions, {
            "cleanup.policy": "delete",
            "compression.type": "producer",
            "segment.bytes": str(self.partitions.config["share.coordinator.state.topic.segment.bytes"]),
            "retention.ms": "-1",
        })
        log.info("created %s with %d partitions", TOPIC, self.num_partitions)

    def load(self) -> dict:
        """{(group, topic id, partition): {"start", "state_epoch", "batches": [...], "created"}} replayed."""
        logs = self.partitions.logs
        info = logs.topics.get(TOPIC) if logs is not None else None
        out: dict = {}
        if info is None:
            return out
        self.num_partitions = info.num_partitions
        t0 = time.monotonic()
        for p in range(info.num_partitions):
            for r in iter_keyed_records(logs, TOPIC, p + 1, first=p):
                self._apply(out, r.key, r.value, p, r.offset)
        log.info("loaded %d share-partitions from %d %s records in %.2fs", len(out), self.loaded_records, TOPIC,
                 time.monotonic() - t0)
        return out

    def _apply(self, out: dict, key, value, p: int, offset: int) -> None:
        try:
            rtype, k, v = ssr.decode(bytes(key), None if value is None else bytes(value))
        except Exception as e:  # noqa: BLE001 - one bad record must not stop the load
            log.warning("skipping unreadable %s record: %s", TOPIC, e)
            return
        self.loaded_records += 1
        sk = (k["group_id"], k["topic_id"], k["partition"])
        if v is None:
            out.pop(sk, None)
            self._track(p, sk, offset, gone=True)
            return
        if rtype == ssr.SNAPSHOT:
            out[sk] = {"start": v["start_offset"], "state_epoch": v["state_epoch"], "created": v["create_timestamp"],
                       "snapshot_epoch": v["snapshot_epoch"], "updates": [], "batches": v["state_batches"]}
            self._track(p, sk, offset)
        else:
            cur = out.get(sk)
            if cur is not None:
                cur["updates"].append((v["start_offset"], v["state_batches"]))

    def _track(self, p: int, sk, offset: int, gone: bool = False) -> None:
        """Kafka's ShareCoordinatorOffsetsManager.updateState: the earliest offset still needed."""
        offsets = self.snapshot_offsets.setdefault(p, {})
        offsets[sk] = offset
        self.redundant[p] = min(offsets.values())
        if gone:
            del offsets[sk]

    def write(self, parts) -> None:
        """One ShareSnapshot or ShareUpdate per share-partition in `parts`, one batch per state
        partition; raises on a storage failure (the request then fails and the client retries)."""
        if not parts:
            return
        self.ensure_topic()
        now = now_ms()
        by_p: dict[int, list] = {}
        for sp in parts:
            rtype, value = self._record(sp, now)
            key = ssr.encode_key(rtype, sp.group_id, sp.topic_id, sp.partition)
            by_p.setdefault(partition_for(sp.group_id, sp.topic_id, sp.partition, self.num_partitions),
                            []).append((key, value, sp if rtype == ssr.SNAPSHOT else None))
        for p, records in by_p.items():
            first = self._append(p, [(k, v) for k, v, _ in records], now)
            for i, (_, _, sp) in enumerate(records):
                if sp is not None:
                    self._track(p, (sp.group_id, sp.topic_id, sp.partition), first + i)
        for sp in parts:
            sp.written()

    def _record(self, sp, now: int) -> tuple[int, bytes]:
        """Kafka's ShareCoordinatorShard.generateShareStateRecord for the share-partition's change."""
        batches = sp.state_batches()
        state = expand(batches)
        last = sp.persisted
        if last is None or sp.updates_since_snapshot >= self.per_snapshot or not delta_ok(sp, last, state):
            sp.snapshot_epoch += 1
            sp.updates_since_snapshot = 0
            sp.persisted = (sp.start, sp.state_epoch, state)
            self.snapshots += 1
            return ssr.SNAPSHOT, ssr.encode_value(ssr.SNAPSHOT, {
                "snapshot_epoch": sp.snapshot_epoch, "state_epoch": sp.state_epoch, "leader_epoch": 0,
                "start_offset": sp.start, "delivery_complete_count": sp.delivery_complete_count(),
                "create_timestamp": sp.created_ms, "write_timestamp": now, "state_batches": batches})
        changed = {off: sc for off, sc in state.items() if last[2].get(off) != sc}
        sp.updates_since_snapshot += 1
        sp.persisted = (sp.start, sp.state_epoch, state)
        self.updates += 1
        return ssr.UPDATE, ssr.encode_value(ssr.UPDATE, {
            "snapshot_epoch": sp.snapshot_epoch, "leader_epoch": 0, "start_offset": sp.start,
            "delivery_complete_count": sp.delivery_complete_count(), "state_batches": coalesce(changed)})

    def prune(self) -> int:
        """Delete the records before the earliest offset still needed in each state partition (Kafka's
        write-state-record-prune job); returns the number of partitions whose log start moved."""
        moved = 0
        for p, offset in list(self.redundant.items()):
            plog = self.partitions.logs.get_log(TOPIC, p)
            if plog is None or offset <= plog.log_start_offset or offset > plog.high_watermark:
                continue
            plog.delete_records(offset)
            moved += 1
        return moved

    def delete(self, group_id: str, keys) -> None:
        """Tombstones for the state of (topic id, partition) pairs of a group."""
        self.ensure_topic()
        now = now_ms()
        by_p: dict[int, list] = {}
        for tid, p in keys:
            by_p.setdefault(partition_for(group_id, tid, p, self.num_partitions), []).append(
                (ssr.encode_key(ssr.SNAPSHOT, group_id, tid, p), None))
        for p, records in by_p.items():
            first = self._append(p, records, now)
            for i, (tid, part) in enumerate(k for k in keys if partition_for(group_id, *k, self.num_partitions) == p):
                self._track(p, (group_id, tid, part), first + i, gone=True)

    def _append(self, p: int, records: list, now: int) -> int:
        plog = self.partitions.logs.get_log(TOPIC, p)
        if plog is None:
            raise OSError(f"{TOPIC}-{p} is offline")
        b = BatchBuilder()
        for k, v in records:
            b.append(now, k, v)
        info = plog.append_as_leader(bytearray(b.build()), self.partitions.leader_epoch(plog), now_ms=now)
        self.written += len(records)
        return info.first_offset


def expand(batches: list) -> dict:
    """{offset: (delivery state, delivery count)} of state batches."""
    return {off: (b["delivery_state"], b["delivery_count"]) for b in batches
            for off in range(b["first_offset"], b["last_offset"] + 1)}


def delta_ok(sp, last: tuple, state: dict) -> bool:
    """An update over the last write gives the current state: same state epoch, the start offset did not
    go back, and every offset of the last write at or above the start offset is still in flight."""
    start, state_epoch, before = last
    return state_epoch == sp.state_epoch and sp.start >= start and all(
        off in state for off in before if off >= sp.start)
