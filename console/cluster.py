"""The cluster as the console shows it: brokers, topics, partitions, offsets, sizes, configs.

Every answer is plain JSON-ready data, read through pylog's admin client (Metadata,
ListOffsets, DescribeLogDirs, DescribeConfigs) as Kafka's Admin reads it, so the same
pages work against pylog's broker and any Kafka cluster.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from pylog.core.client.admin import Admin
from pylog.core.client.consumer import EARLIEST, LATEST, TopicPartition, list_offsets
from pylog.core.config import TOPIC_CONFIGS
from pylog.core.errors import UsageError


class ReadOnlyError(UsageError):
    """A write asked of a console started without --allow-writes."""


@dataclass
class Snapshot:
    """Every partition's start and end offsets and size, and the metadata they go with, as one
    sample read them: big clusters' pages answer from it instead of asking for all of it again."""

    taken: float  # time.monotonic()
    metadata: object
    start: dict = field(default_factory=dict)  # TopicPartition -> log start offset
    end: dict = field(default_factory=dict)  # TopicPartition -> end offset
    sizes: dict = field(default_factory=dict)  # (topic, partition) -> bytes


class Cluster:
    """One admin connection to the cluster, shared by the pages (its calls are thread-safe:
    each runs on the admin's own loop thread). `max_age`: how old a snapshot a page may answer
    from (the sampler takes one every sample interval)."""

    def __init__(self, props: dict, allow_writes: bool = False, max_age: float = 10.0):
        self.props = dict(props)
        self.allow_writes = allow_writes
        self.admin = Admin(self.props)
        self.lock = threading.Lock()
        self.max_age = max_age
        self.snapshot: Snapshot | None = None
        self.took = 0.0  # seconds the last snapshot took to read

    def refresh(self) -> Snapshot:
        """Take a snapshot (the sampler's tick, or a page that found none fresh enough)."""
        asked = time.monotonic()
        with self.lock:
            if self.snapshot is not None and self.snapshot.taken >= asked:
                return self.snapshot  # another thread's, read while this one waited
            began = time.monotonic()
            md = self.run(self.client.refresh_metadata(all_topics=True))
            tps = [TopicPartition(n, p) for n, t in md.topics.items() for p in t.partitions]
            start, end = self.end_offsets(tps) if tps else ({}, {})
            snap = Snapshot(time.monotonic(), md, start, end, self.sizes())
            self.took = snap.taken - began
            self.snapshot = snap
            return snap

    def is_fresh(self, snap: Snapshot | None) -> bool:
        """Taken within max_age, counting the time the next sample takes to read (big clusters)."""
        return snap is not None and time.monotonic() - snap.taken < self.max_age + 2 * self.took

    def fresh(self) -> Snapshot:
        snap = self.snapshot
        return snap if self.is_fresh(snap) else self.refresh()

    def close(self) -> None:
        self.admin.close()

    def check_writes(self, what: str) -> None:
        if not self.allow_writes:
            raise ReadOnlyError(f"read-only console: cannot {what} (start it with --allow-writes)")

    def run(self, coro):
        """Run a coroutine on the admin's loop thread (for the NetworkClient's async API)."""
        return self.admin.run(coro)

    @property
    def client(self):
        return self.admin.client

    # ---------------------------------------------------------------- cluster
    def overview(self) -> dict:
        md = self.fresh().metadata
        topics = list(md.topics.values())
        offline = sum(1 for t in topics for p in t.partitions.values() if p.leader < 0)
        under = sum(1 for t in topics for p in t.partitions.values() if len(p.isr) < len(p.replicas))
        return {
            "cluster_id": md.cluster_id, "controller": md.controller_id,
            "brokers": [{"node_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack,
                         "controller": b.node_id == md.controller_id} for b in sorted(md.brokers.values(),
                                                                                      key=lambda b: b.node_id)],
            "topics": sum(1 for t in topics if not t.internal), "internal_topics": sum(1 for t in topics if t.internal),
            "partitions": sum(len(t.partitions) for t in topics),
            "offline_partitions": offline, "under_replicated_partitions": under,
        }

    # ---------------------------------------------------------------- topics
    def sizes(self, topics=None) -> dict:
        """{(topic, partition): bytes} from DescribeLogDirs of every broker (the leader's copy counts)."""
        async def go():
            md = self.client.metadata
            body = {"topics": None if topics is None else [
                {"topic": t, "partitions": sorted(md.topics[t].partitions)} for t in topics if t in md.topics]}
            out: dict = {}
            for node in sorted(md.brokers):
                try:
                    resp = await self.client.request(node, "DescribeLogDirs", body)
                except Exception:  # noqa: BLE001 - a broker that cannot answer: its sizes stay unknown
                    continue
                for r in resp.get("results") or []:
                    for t in r.get("topics") or []:
                        for p in t.get("partitions") or []:
                            if p.get("is_future_key"):
                                continue
                            key = (t["name"], p["partition_index"])
                            out[key] = max(out.get(key, 0), p["partition_size"])
            return out
        return self.run(go())

    def end_offsets(self, tps) -> tuple[dict, dict]:
        """({tp: log start offset}, {tp: end offset}) for many partitions in one round per leader."""
        async def go():
            start = await list_offsets(self.client, {tp: EARLIEST for tp in tps}, strict=False)
            end = await list_offsets(self.client, {tp: LATEST for tp in tps}, strict=False)
            return ({tp: r.offset for tp, r in start.items()}, {tp: r.offset for tp, r in end.items()})
        return self.run(go())

    def topics(self, internal: bool = True) -> list[dict]:
        snap = self.fresh()
        md, start, end, sizes = snap.metadata, snap.start, snap.end, snap.sizes
        names = sorted(n for n, t in md.topics.items() if internal or not t.internal)
        out = []
        for n in names:
            t = md.topics[n]
            ps = sorted(t.partitions)
            records = sum(max(0, end.get(TopicPartition(n, p), 0) - max(0, start.get(TopicPartition(n, p), 0)))
                          for p in ps)
            out.append({"name": n, "internal": t.internal, "partitions": len(ps),
                        "replication_factor": max((len(x.replicas) for x in t.partitions.values()), default=0),
                        "records": records, "size": sum(sizes.get((n, p), 0) for p in ps),
                        "topic_id": str(t.topic_id)})
        return out

    def topic(self, name: str) -> dict:
        last = self.snapshot
        t = last.metadata.topics.get(name) if last is not None else None
        snap = self.fresh() if t is not None and len(t.partitions) >= 100 else None
        t = snap.metadata.topics.get(name) if snap is not None else None
        if t is None or len(t.partitions) < 100:  # a small topic: read it now
            t = self.admin.describe_topic(name)
            tps = [TopicPartition(name, p) for p in sorted(t.partitions)]
            (start, end), sizes = self.end_offsets(tps), self.sizes([name])
        else:  # a big one: as the last snapshot saw it
            tps = [TopicPartition(name, p) for p in sorted(t.partitions)]
            start, end, sizes = snap.start, snap.end, snap.sizes
        parts = [{"partition": tp.partition, "leader": t.partitions[tp.partition].leader,
                  "leader_epoch": t.partitions[tp.partition].leader_epoch,
                  "replicas": t.partitions[tp.partition].replicas, "isr": t.partitions[tp.partition].isr,
                  "start_offset": start.get(tp, -1), "end_offset": end.get(tp, -1),
                  "size": sizes.get((name, tp.partition), 0)} for tp in tps]
        return {"name": name, "topic_id": str(t.topic_id), "internal": t.internal, "partitions": parts,
                "configs": self.admin.describe_configs(name)}

    # ---------------------------------------------------------------- topic writes
    def create_topic(self, name: str, partitions: int, replication_factor: int, configs: dict) -> dict:
        self.check_writes(f"create topic {name}")
        _check_topic_configs(configs)
        self.admin.create_topic(name, partitions, replication_factor, configs)
        self.snapshot = None
        return {"created": name}

    def alter_topic(self, name: str, set_configs: dict, delete_keys: list) -> dict:
        self.check_writes(f"alter topic {name}")
        _check_topic_configs(set_configs)
        self.admin.alter_configs(name, set_configs, delete_keys)
        return {"altered": name}

    def delete_topic(self, name: str) -> dict:
        self.check_writes(f"delete topic {name}")
        self.admin.delete_topic(name)
        self.snapshot = None
        return {"deleted": name}


def _check_topic_configs(configs: dict) -> None:
    for k, v in configs.items():
        if k not in TOPIC_CONFIGS:
            raise UsageError(f"unknown topic config {k!r}")
        try:
            TOPIC_CONFIGS[k].parse(v)
        except Exception as e:  # noqa: BLE001 - the config's own message
            raise UsageError(f"{k}={v!r}: {e}") from None
