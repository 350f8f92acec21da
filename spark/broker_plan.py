"""What a reader of topics on a Kafka-protocol cluster reads, decided on the driver with ListOffsets.

The same plan as log_plan.py makes from a log dir's own files, asked of the
cluster instead: per partition the log start offset (EARLIEST), the high
watermark (LATEST, read_uncommitted) and the last stable offset (LATEST,
read_committed), and offsets for times (ListOffsets by timestamp, the time
index on the broker). The range [start, end) of each partition is then cut
into offset ranges (`FetchTask`), read on the executors by broker_rows.py
with Fetch requests: at least `min_tasks` of them across the partitions, as
Spark's Kafka source splits ranges for `minPartitions`, so one partition
does not keep one core busy while the others idle.

The client is pylog's own (core/client): the executors already run pylog's
code for the log-dir reader, it speaks the protocol to pylog and to Apache
Kafka alike, and it hands over whole record batches, so rows are built by the
same code as from segment files (leader epoch and timestamp type from each
batch header, control batches and aborted transactions left out as a
consumer does). confluent-kafka is not a dependency of pylog's runtime, so
executors cannot be assumed to have it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from pylog.spark.log_plan import READ_COMMITTED, PartitionPlan, ReadOptions, read_range
from pylog.core.errors import DataError

# Throughput over latency: a fetch carries whole batches from one partition.
FETCH_DEFAULTS = {"max.partition.fetch.bytes": str(8 << 20), "fetch.max.bytes": str(64 << 20),
                  "fetch.max.wait.ms": "500", "allow.auto.create.topics": "false"}


@dataclass(frozen=True)
class FetchTask:
    """One read task: the records of one partition with offsets in [start, end), fetched from the cluster."""

    topic: str
    partition: int
    start: int
    end: int
    isolation: str
    bootstrap: str
    props: tuple = ()  # client properties as (key, value) pairs (security settings, ...)


@dataclass
class ClusterSource:
    """Where to read: the bootstrap servers and the client's properties (Kafka's names)."""

    bootstrap: str
    props: dict = field(default_factory=dict)

    def client_props(self, **extra) -> dict:
        out = dict(FETCH_DEFAULTS)
        out.update(self.props)
        out.update(extra)
        out["bootstrap.servers"] = self.bootstrap
        return out


def split_range(start: int, end: int, size: int) -> list[tuple[int, int]]:
    """[start, end) cut into pieces of at most `size` offsets."""
    if end <= start:
        return []
    n = max(1, math.ceil((end - start) / max(1, size)))
    step = math.ceil((end - start) / n)
    return [(s, min(end, s + step)) for s in range(start, end, step)]


def _topics(consumer, source: ClusterSource, wanted: tuple) -> dict:
    """{topic: [partitions]} of the wanted topics (every non-internal topic when none is named)."""
    found = consumer.list_topics()
    if wanted:
        missing = [t for t in wanted if t not in found or not found[t].partitions]
        if missing:
            raise DataError(f"topic {', '.join(missing)} does not exist on {source.bootstrap}")
        names = list(wanted)
    else:
        names = sorted(t for t, info in found.items() if not t.startswith("__") and not info.internal)
    return {t: sorted(found[t].partitions) for t in names}


def plan_cluster(source: ClusterSource, opts: ReadOptions, min_tasks: int = 1) -> list[PartitionPlan]:
    """Every selected partition's plan, its tasks offset ranges of at most total/min_tasks offsets."""
    from pylog.core.client.consumer import Consumer
    from pylog.core.client.structs import TopicPartition

    opts.check()
    plain = Consumer(source.client_props(**{"isolation.level": "read_uncommitted"}))
    try:
        tps = [TopicPartition(t, p) for t, parts in _topics(plain, source, tuple(opts.topics)).items()
               for p in parts if opts.partitions is None or p in set(opts.partitions)]
        if not tps:
            return []
        first = plain.beginning_offsets(tps)
        high = plain.end_offsets(tps)
        stable = high
        if opts.isolation == READ_COMMITTED:
            committed = Consumer(source.client_props(**{"isolation.level": "read_committed"}), loop=plain.loop)
            try:
                stable = committed.end_offsets(tps)
            finally:
                committed.close()
        plans = []
        for tp in tps:
            hw = high[tp]

            def for_time(ts, tp=tp, hw=hw):
                found = plain.offsets_for_times({tp: ts}).get(tp)
                return hw if found is None else found.offset

            plan = PartitionPlan(tp.topic, tp.partition, "", first[tp], hw, stable[tp])
            plan.start, plan.end = read_range(opts, tp.topic, tp.partition, first[tp], stable[tp], for_time)
            plans.append(plan)
    finally:
        plain.close()
    total = sum(p.end - p.start for p in plans)
    size = max(1, math.ceil(total / max(1, min_tasks)))
    props = tuple(sorted(source.props.items()))
    for plan in plans:
        plan.tasks = [FetchTask(plan.topic, plan.partition, s, e, opts.isolation, source.bootstrap, props)
                      for s, e in split_range(plan.start, plan.end, size)]
    return plans
