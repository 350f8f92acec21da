"""Share-partition state in `__share_group_state`, in Kafka's record format.

Each change of a share-partition is appended before the request that made it
is answered: a ShareSnapshot record holding the partition's whole state (start
offset, state epoch, and the in-flight records as state batches; acquired
records are stored as available with their delivery count, so after a crash
they come back available and a poison record keeps counting toward the
delivery limit). The topic is compacted: the latest snapshot of each
share-partition is what remains. Replay at start-up reads both record types
(ShareUpdate records, which Kafka's coordinator also writes, merge into the
latest snapshot). The partition of a key is Kafka's: abs(hash("group:topicId:partition")) % n.
"""
from __future__ import annotations

import logging
import time

from pylog.commands.broker.groups.offsets_topic import java_string_hash
from pylog.commands.broker.groups.store import iter_keyed_records, now_ms
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

    def __init__(self, broker):
        self.broker = broker
        self.num_partitions = broker.config["share.coordinator.state.topic.num.partitions"]
        self.loaded_records = 0
        self.written = 0

    def ensure_topic(self) -> None:
        logs = self.broker.logs
        if TOPIC in logs.topics:
            return
        logs.create_topic(TOPIC, self.num_partitions, {
            "cleanup.policy": "compact",
            "segment.bytes": str(self.broker.config["share.coordinator.state.topic.segment.bytes"]),
            "compression.type": "producer",
        })
        log.info("created %s with %d partitions", TOPIC, self.num_partitions)

    def load(self) -> dict:
        """{(group, topic id, partition): {"start", "state_epoch", "batches": [...], "created"}} replayed."""
        logs = self.broker.logs
        info = logs.topics.get(TOPIC) if logs is not None else None
        out: dict = {}
        if info is None:
            return out
        self.num_partitions = info.num_partitions
        t0 = time.monotonic()
        for r in iter_keyed_records(logs, TOPIC, info.num_partitions):
            self._apply(out, r.key, r.value)
        log.info("loaded %d share-partitions from %d %s records in %.2fs", len(out), self.loaded_records, TOPIC,
                 time.monotonic() - t0)
        return out

    def _apply(self, out: dict, key, value) -> None:
        try:
            rtype, k, v = ssr.decode(bytes(key), None if value is None else bytes(value))
        except Exception as e:  # noqa: BLE001 - one bad record must not stop the load
            log.warning("skipping unreadable %s record: %s", TOPIC, e)
            return
        self.loaded_records += 1
        sk = (k["group_id"], k["topic_id"], k["partition"])
        if v is None:
            out.pop(sk, None)
            return
        if rtype == ssr.SNAPSHOT:
            out[sk] = {"start": v["start_offset"], "state_epoch": v["state_epoch"], "created": v["create_timestamp"],
                       "snapshot_epoch": v["snapshot_epoch"], "updates": [], "batches": v["state_batches"]}
        else:
            cur = out.get(sk)
            if cur is not None:
                cur["updates"].append((v["start_offset"], v["state_batches"]))

    def write(self, parts) -> None:
        """One ShareSnapshot per share-partition in `parts`, one batch per state partition; raises
        on a storage failure (the request then fails and the client retries)."""
        if not parts:
            return
        self.ensure_topic()
        now = now_ms()
        by_p: dict[int, list] = {}
        for sp in parts:
            sp.snapshot_epoch += 1
            value = ssr.encode_value(ssr.SNAPSHOT, {
                "snapshot_epoch": sp.snapshot_epoch, "state_epoch": sp.state_epoch, "leader_epoch": 0,
                "start_offset": sp.start, "delivery_complete_count": sp.delivery_complete_count(),
                "create_timestamp": sp.created_ms, "write_timestamp": now, "state_batches": sp.state_batches()})
            key = ssr.encode_key(ssr.SNAPSHOT, sp.group_id, sp.topic_id, sp.partition)
            by_p.setdefault(partition_for(sp.group_id, sp.topic_id, sp.partition, self.num_partitions),
                            []).append((key, value))
        for p, records in by_p.items():
            self._append(p, records, now)
        for sp in parts:
            sp.written()

    def delete(self, group_id: str, keys) -> None:
        """Tombstones for the state of (topic id, partition) pairs of a group."""
        self.ensure_topic()
        now = now_ms()
        by_p: dict[int, list] = {}
        for tid, p in keys:
            by_p.setdefault(partition_for(group_id, tid, p, self.num_partitions), []).append(
                (ssr.encode_key(ssr.SNAPSHOT, group_id, tid, p), None))
        for p, records in by_p.items():
            self._append(p, records, now)

    def _append(self, p: int, records: list, now: int) -> None:
        plog = self.broker.logs.get_log(TOPIC, p)
        if plog is None:
            raise OSError(f"{TOPIC}-{p} is offline")
        b = BatchBuilder()
        for k, v in records:
            b.append(now, k, v)
        plog.append_as_leader(bytearray(b.build()), self.broker.leader_epoch(plog), now_ms=now)
        self.written += len(records)
