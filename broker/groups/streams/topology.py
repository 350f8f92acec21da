"""A streams group's topology against the broker's topics: tasks per subtopology, the
internal topics to create, and what is missing (Kafka's InternalTopicManager).

A subtopology has as many tasks as the largest of its source topics (repartition
sources included); a repartition topic whose partition count the topology leaves open
(0) takes the task count of the subtopologies writing into it; a changelog topic has the
task count of its subtopology. The coordinator creates the missing internal topics
with the configs the topology gives, at the broker's default replication factor.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

# the heartbeat's status codes (StreamsGroupHeartbeatResponse.Status)
STALE_TOPOLOGY, MISSING_SOURCE_TOPICS, INCORRECTLY_PARTITIONED_TOPICS = 0, 1, 2
MISSING_INTERNAL_TOPICS, SHUTDOWN_APPLICATION, ASSIGNMENT_DELAYED = 3, 4, 5


@dataclass
class Configured:
    """The outcome of configuring a topology against the topics that exist."""

    partitions: dict = field(default_factory=dict)  # subtopology -> tasks
    stateful: set = field(default_factory=set)
    missing_sources: list = field(default_factory=list)
    missing_internal: dict = field(default_factory=dict)  # name -> (partitions, {config: value})
    misconfigured: list = field(default_factory=list)  # internal topics with the wrong partition count


def _repartition_counts(subs: list, existing: dict) -> dict:
    """{repartition topic: partitions}, unresolved ones derived from their writers' task counts."""
    counts = {t["name"]: t["partitions"] for s in subs for t in s["repartition_source_topics"] if t["partitions"] > 0}
    for _ in range(len(subs) + 1):
        for s in subs:
            n = max([existing.get(x, 0) for x in s["source_topics"]]
                    + [counts.get(t["name"], 0) for t in s["repartition_source_topics"]] + [0])
            if n == 0:
                continue
            for sink in s["repartition_sink_topics"]:
                if sink not in counts:
                    counts[sink] = n
    return counts


def configure(topology: dict, existing: dict) -> Configured:
    """Configure `topology` (the StreamsGroupTopology value) against {topic name: partitions}."""
    out = Configured()
    subs = topology["subtopologies"]
    out.missing_sources = sorted({t for s in subs for t in s["source_topics"] if t not in existing})
    repart = _repartition_counts(subs, existing)
    for s in subs:
        n = max([existing.get(x, 0) for x in s["source_topics"]]
                + [repart.get(t["name"], 0) for t in s["repartition_source_topics"]] + [0])
        out.partitions[s["subtopology_id"]] = n
        if s["state_changelog_topics"]:
            out.stateful.add(s["subtopology_id"])
        wanted = [(t, repart.get(t["name"], 0)) for t in s["repartition_source_topics"]]
        wanted += [(t, n) for t in s["state_changelog_topics"]]
        for t, count in wanted:
            name = t["name"]
            if count <= 0:
                continue
            if name not in existing:
                out.missing_internal[name] = (count, {c["key"]: c["value"] for c in t["topic_configs"]},
                                              t["replication_factor"])
            elif existing[name] != count:
                out.misconfigured.append(name)
    return out


def topic_names(topology: dict) -> set:
    """Every topic a topology reads or writes (sources, repartition and changelog topics)."""
    names = set()
    for s in topology["subtopologies"]:
        names.update(s["source_topics"], s["repartition_sink_topics"])
        names.update(t["name"] for t in s["repartition_source_topics"] + s["state_changelog_topics"])
    return names


def metadata_hash(topology: dict | None, topics: dict) -> int:
    """A stable hash of the topology's topics as they exist (name, id, partitions); 0 when none.
    A change means new tasks or a configured topology: the group epoch moves."""
    if topology is None:
        return 0
    parts = [f"{n}/{topics[n].topic_id}/{topics[n].num_partitions}"
             for n in sorted(topic_names(topology)) if n in topics]
    if not parts:
        return 0
    return int.from_bytes(hashlib.sha256("|".join(parts).encode()).digest()[:8], "big", signed=True)

