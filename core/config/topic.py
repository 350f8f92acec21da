"""Kafka's topic (log) configs, each with the broker property that supplies its default."""
from __future__ import annotations

from typing import Any

from pylog.core.config.definitions import (
    BOOLEAN, COMPRESSION_TYPES, DOUBLE, INT, LIST, LONG, LONG_MAX, STRING, ConfigSet, definition as _d, at_least,
    between, one_of,
)

# ---- topic (log) configs, with the broker property that supplies each default ----
TOPIC_CONFIGS = ConfigSet("topic", [
    _d("cleanup.policy", LIST, ["delete"], "Retention policy for old segments: delete, compact or both.",
       one_of("delete", "compact"), "log.cleanup.policy"),
    _d("compression.type", STRING, "producer", "Final compression type of the topic; producer keeps the producer's codec.",
       one_of("producer", "uncompressed", *COMPRESSION_TYPES), "compression.type"),
    _d("delete.retention.ms", LONG, 86400000, "How long tombstones are kept after their segment is cleaned.",
       at_least(0), "log.cleaner.delete.retention.ms"),
    _d("file.delete.delay.ms", LONG, 60000, "Time to wait before deleting a file from the filesystem.",
       at_least(0), "log.segment.delete.delay.ms"),
    _d("flush.messages", LONG, LONG_MAX, "Force an fsync after this many messages.", at_least(1),
       "log.flush.interval.messages"),
    _d("flush.ms", LONG, LONG_MAX, "Force an fsync after this much time.", at_least(0), "log.flush.interval.ms"),
    _d("index.interval.bytes", INT, 4096, "Bytes appended between offset index entries.", at_least(0),
       "log.index.interval.bytes"),
    _d("max.compaction.lag.ms", LONG, LONG_MAX, "Maximum time a message remains ineligible for compaction.",
       at_least(1), "log.cleaner.max.compaction.lag.ms"),
    _d("max.message.bytes", INT, 1048588, "Largest record batch size allowed.", at_least(0), "message.max.bytes"),
    _d("message.timestamp.after.max.ms", LONG, 3600000,
       "Largest allowed amount a CreateTime may be ahead of the broker's time.", at_least(0),
       "log.message.timestamp.after.max.ms"),
    _d("message.timestamp.before.max.ms", LONG, LONG_MAX,
       "Largest allowed amount a CreateTime may be behind the broker's time.", at_least(0),
       "log.message.timestamp.before.max.ms"),
    _d("message.timestamp.type", STRING, "CreateTime", "CreateTime or LogAppendTime.",
       one_of("CreateTime", "LogAppendTime"), "log.message.timestamp.type"),
    _d("min.cleanable.dirty.ratio", DOUBLE, 0.5, "Minimum dirty ratio for the log to be eligible for cleaning.",
       between(0.0, 1.0), "log.cleaner.min.cleanable.ratio"),
    _d("min.compaction.lag.ms", LONG, 0, "Minimum time a message remains uncompacted.", at_least(0),
       "log.cleaner.min.compaction.lag.ms"),
    _d("min.insync.replicas", INT, 1, "Minimum in-sync replicas for acks=all.", at_least(1), "min.insync.replicas"),
    _d("preallocate", BOOLEAN, False, "Preallocate the file on disk when creating a new log segment.", None,
       "log.preallocate"),
    _d("retention.bytes", LONG, -1, "Maximum size a partition can grow to before old segments are discarded.",
       None, "log.retention.bytes"),
    _d("retention.ms", LONG, 604800000, "Maximum time a log segment is retained before being discarded.",
       at_least(-1), "log.retention.ms"),
    _d("segment.bytes", INT, 1073741824, "Segment file size.", at_least(14), "log.segment.bytes"),
    _d("segment.index.bytes", INT, 10485760, "Size of the offset and time index files.", at_least(8),
       "log.index.size.max.bytes"),
    _d("segment.jitter.ms", LONG, 0, "Maximum random jitter subtracted from segment.ms.", at_least(0),
       "log.roll.jitter.ms"),
    _d("segment.ms", LONG, 604800000, "Time after which a segment is rolled even if not full.", at_least(1),
       "log.roll.ms"),
    _d("unclean.leader.election.enable", BOOLEAN, False, "Allow out-of-sync replicas to become leader.", None,
       "unclean.leader.election.enable"),
    _d("errors.deadletterqueue.group.enable", BOOLEAN, False, "Share groups may use this topic as their DLQ."),
    # kafka-reassign-partitions sets and clears these; one node has no followers to throttle
    _d("leader.replication.throttled.replicas", LIST, [],
       "Replicas whose log replication is throttled on the leader side (partition:broker, or *)."),
    _d("follower.replication.throttled.replicas", LIST, [],
       "Replicas whose log replication is throttled on the follower side (partition:broker, or *)."),
])


def topic_defaults_from_broker(broker: dict[str, Any]) -> dict[str, Any]:
    """Topic config defaults as the broker's synonyms set them (log.roll.hours etc. folded in)."""
    out = TOPIC_CONFIGS.defaults()
    explicit = getattr(broker, "overridden", set(broker))
    for d in TOPIC_CONFIGS.defs.values():
        if d.synonym and d.synonym in broker and d.synonym in explicit:
            out[d.name] = broker[d.synonym]
    if "log.retention.ms" not in explicit:
        if broker.get("log.retention.minutes") is not None and "log.retention.minutes" in explicit:
            out["retention.ms"] = broker["log.retention.minutes"] * 60000
        elif "log.retention.hours" in explicit:
            out["retention.ms"] = broker["log.retention.hours"] * 3600000
    if "log.roll.ms" not in explicit and "log.roll.hours" in explicit:
        out["segment.ms"] = broker["log.roll.hours"] * 3600000
    if "log.roll.jitter.ms" not in explicit and "log.roll.jitter.hours" in explicit:
        out["segment.jitter.ms"] = broker["log.roll.jitter.hours"] * 3600000
    if "log.flush.interval.ms" not in explicit and "log.flush.scheduler.interval.ms" in explicit:
        out["flush.ms"] = broker["log.flush.scheduler.interval.ms"]
    return out
