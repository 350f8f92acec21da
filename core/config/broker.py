"""Kafka's broker properties: the broker's own, its security ones, and the topic configs
under their broker synonyms (log.retention.ms for retention.ms)."""
from __future__ import annotations

from pylog.core.config.definitions import (
    BOOLEAN, DOUBLE, INT, INT_MAX, LIST, LONG, LONG_MAX, SHORT, STRING, ConfigDef, ConfigSet, definition as _d,
    at_least, between, one_of,
)
from pylog.core.config.security import BROKER_SECURITY_CONFIGS
from pylog.core.config.streams_groups import STREAMS_GROUP_CONFIGS
from pylog.core.config.topic import TOPIC_CONFIGS


def _share_bounded(name: str, default: int, smallest: int, largest: int, floor: int, doc: str, *,
                   bounds_floor: int = 1,
                   bounds_doc: tuple[str, str] = ("Smallest share.{} of a group.", "Largest share.{} of a group.")
                   ) -> list[ConfigDef]:
    """group.share.NAME with the broker's bounds group.share.min.NAME and group.share.max.NAME on a
    group's share.NAME."""
    return [
        _d(f"group.share.{name}", INT, default, doc, at_least(floor)),
        _d(f"group.share.min.{name}", INT, smallest, bounds_doc[0].format(name), at_least(bounds_floor)),
        _d(f"group.share.max.{name}", INT, largest, bounds_doc[1].format(name), at_least(bounds_floor)),
    ]


def _bounds(kind: str, name: str, smallest: int, largest: int, what: str) -> list[ConfigDef]:
    """group.KIND.min.NAME and group.KIND.max.NAME: the bounds of a group's KIND.NAME group config."""
    return [_d(f"group.{kind}.min.{name}", INT, smallest, f"Smallest {what}.", at_least(1)),
            _d(f"group.{kind}.max.{name}", INT, largest, f"Largest {what}.", at_least(1))]


# ---- broker configs ----
_BROKER_OWN = [
    _d("node.id", INT, 1, "This broker's id."),
    _d("broker.id", INT, 1, "Alias of node.id."),
    _d("cluster.id", STRING, None, "Cluster id; generated on first start and kept in meta.properties."),
    _d("log.dirs", LIST, ["./pylog-data"], "Directories holding the log data."),
    _d("log.dir", STRING, None, "Single log directory (used when log.dirs is not set)."),
    _d("listeners", LIST, ["PLAINTEXT://127.0.0.1:9092"], "Listener URIs."),
    _d("advertised.listeners", LIST, None, "Listeners published to clients (defaults to listeners)."),
    _d("num.partitions", INT, 1, "Default number of partitions per auto-created topic.", at_least(1)),
    _d("default.replication.factor", SHORT, 1, "Default replication factor (a single node supports 1).", at_least(1)),
    _d("auto.create.topics.enable", BOOLEAN, True, "Create topics on first metadata or produce request."),
    _d("delete.topic.enable", BOOLEAN, True, "Allow topics to be deleted."),
    _d("socket.request.max.bytes", INT, 104857600, "Largest request the socket server accepts.", at_least(1)),
    _d("socket.send.buffer.bytes", INT, 102400, "SO_SNDBUF of sockets (-1 for the OS default)."),
    _d("socket.receive.buffer.bytes", INT, 102400, "SO_RCVBUF of sockets (-1 for the OS default)."),
    _d("num.io.threads", INT, 8, "Threads for disk I/O.", at_least(1)),
    _d("num.network.threads", INT, 3, "Threads for network I/O.", at_least(1)),
    _d("num.recovery.threads.per.data.dir", INT, 2, "Threads per data dir for log recovery.", at_least(1)),
    _d("log.retention.hours", INT, 168, "Hours to keep a log file (overridden by log.retention.ms)."),
    _d("log.retention.minutes", INT, None, "Minutes to keep a log file (overridden by log.retention.ms)."),
    _d("log.roll.hours", INT, 168, "Maximum time before a new segment is rolled out (overridden by log.roll.ms)."),
    _d("log.roll.jitter.hours", INT, 0, "Maximum jitter subtracted from the roll time (overridden by log.roll.jitter.ms)."),
    _d("log.retention.check.interval.ms", LONG, 300000, "How often retention is checked.", at_least(1)),
    _d("log.flush.scheduler.interval.ms", LONG, LONG_MAX, "How often the flusher checks flush.ms."),
    _d("log.flush.offset.checkpoint.interval.ms", INT, 60000, "How often the recovery point is checkpointed.",
       at_least(0)),
    _d("log.flush.start.offset.checkpoint.interval.ms", INT, 60000,
       "How often the log start offset is checkpointed.", at_least(0)),
    _d("log.cleaner.enable", BOOLEAN, True, "Run the log cleaner for compacted topics."),
    _d("log.cleaner.threads", INT, 1, "Number of log cleaner threads.", at_least(0)),
    _d("log.cleaner.backoff.ms", LONG, 15000, "Sleep when there are no logs to clean.", at_least(0)),
    _d("log.cleaner.dedupe.buffer.size", LONG, 134217728, "Memory for log deduplication across cleaner threads."),
    _d("log.cleaner.io.buffer.size", INT, 524288, "I/O buffer memory across cleaner threads.", at_least(0)),
    _d("log.cleaner.io.buffer.load.factor", DOUBLE, 0.9, "Dedupe buffer load factor."),
    _d("offsets.topic.num.partitions", INT, 50, "Partitions of __consumer_offsets.", at_least(1)),
    _d("offsets.topic.replication.factor", SHORT, 1, "Replication factor of __consumer_offsets.", at_least(1)),
    _d("offsets.topic.segment.bytes", INT, 104857600, "Segment size of __consumer_offsets.", at_least(1)),
    _d("offsets.retention.minutes", INT, 10080, "Committed offsets of empty groups are kept this long.", at_least(1)),
    _d("offsets.retention.check.interval.ms", LONG, 600000, "How often stale offsets are checked.", at_least(1)),
    _d("offset.metadata.max.bytes", INT, 4096, "Largest metadata string of an offset commit."),
    _d("group.initial.rebalance.delay.ms", INT, 3000, "Delay before the first rebalance of a new group."),
    _d("group.min.session.timeout.ms", INT, 6000, "Smallest session timeout a member may ask for."),
    _d("group.max.session.timeout.ms", INT, 1800000, "Largest session timeout a member may ask for."),
    _d("group.max.size", INT, INT_MAX, "Largest number of members in one group.", at_least(1)),
    _d("group.coordinator.rebalance.protocols", LIST, ["classic", "consumer", "streams"],
       "Group protocols served: classic (JoinGroup/SyncGroup), consumer (KIP-848) and streams (KIP-1071).",
       one_of("classic", "consumer", "streams", "share")),
    _d("group.consumer.session.timeout.ms", INT, 45000, "Session timeout of KIP-848 consumer group members.",
       at_least(1)),
    _d("group.consumer.heartbeat.interval.ms", INT, 5000, "Heartbeat interval given to consumer group members.",
       at_least(1)),
    *_bounds("consumer", "session.timeout.ms", 45000, 60000, "session timeout of a consumer group's members"),
    *_bounds("consumer", "heartbeat.interval.ms", 5000, 15000, "heartbeat interval of a consumer group's members"),
    _d("group.consumer.assignors", LIST, ["uniform", "range"],
       "Server-side assignors of consumer groups (uniform, range); the first is the default.",
       one_of("uniform", "range", "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
              "org.apache.kafka.coordinator.group.assignor.RangeAssignor")),
    _d("group.consumer.assignment.interval.ms", INT, 1000,
       "The interval between assignment updates for a consumer group.", at_least(0)),
    _d("group.consumer.min.assignment.interval.ms", INT, 0,
       "The minimum interval between assignment updates for a consumer group.", at_least(0)),
    _d("group.consumer.max.assignment.interval.ms", INT, 15000,
       "The maximum interval between assignment updates for a consumer group.", at_least(0)),
    _d("group.consumer.assignor.offload.enable", BOOLEAN, True,
       "Whether Kafka offloads consumer group assignment to a background thread (accepted; pylog assigns inline)."),
    _d("group.consumer.max.size", INT, INT_MAX, "Largest number of members in one consumer group.", at_least(1)),
    _d("group.consumer.migration.policy", STRING, "bidirectional",
       "Online classic<->consumer group conversion: bidirectional, upgrade, downgrade or disabled.",
       one_of("bidirectional", "upgrade", "downgrade", "disabled")),
    # share groups (KIP-932): broker defaults of the group configs share.* and their bounds
    _d("group.share.session.timeout.ms", INT, 45000, "Session timeout of share group members.", at_least(1)),
    _d("group.share.heartbeat.interval.ms", INT, 5000, "Heartbeat interval of share group members.", at_least(1)),
    *_bounds("share", "session.timeout.ms", 45000, 60000, "share.session.timeout.ms of a share group"),
    *_bounds("share", "heartbeat.interval.ms", 5000, 15000, "share.heartbeat.interval.ms of a share group"),
    _d("group.share.max.size", INT, 200, "Largest number of members in one share group.", at_least(1)),
    *_share_bounded("record.lock.duration.ms", 30000, 15000, 60000, 1,
                    "How long a share consumer holds a record it acquired before it becomes available again."),
    *_share_bounded("delivery.count.limit", 5, 2, 10, 2,
                    "Deliveries of a record to a share group before it is archived.", bounds_floor=2,
                    bounds_doc=("Least share.{}.", "Most share.{}.")),
    _d("errors.deadletterqueue.topic.name.prefix", STRING, "dlq.", "Required prefix of share groups' DLQ topics."),
    _d("errors.deadletterqueue.auto.create.topics.enable", BOOLEAN, False, "Create missing share group DLQ topics."),
    *_share_bounded("partition.max.record.locks", 2000, 100, 4000, 100, "Records in flight per share-partition."),
    *_share_bounded("assignment.interval.ms", 1000, 0, 15000, 0,
                    "The interval between assignment updates for a share group.", bounds_floor=0,
                    bounds_doc=("The minimum interval between assignment updates for a share group.",
                                "The maximum interval between assignment updates for a share group.")),
    _d("group.share.assignor.offload.enable", BOOLEAN, True,
       "Whether Kafka offloads share group assignment to a background thread (accepted; pylog assigns inline)."),
    _d("group.share.max.share.sessions", INT, 2000, "Share sessions (ShareFetch) a broker keeps.", at_least(1)),
    _d("share.coordinator.state.topic.num.partitions", INT, 50, "Partitions of __share_group_state.", at_least(1)),
    _d("share.coordinator.state.topic.segment.bytes", INT, 104857600, "Segment size of __share_group_state.",
       at_least(1)),
    _d("share.coordinator.snapshot.update.records.per.snapshot", INT, 500,
       "ShareUpdate records written between two ShareSnapshot records of a share-partition.", between(0, 500)),
    _d("share.coordinator.state.topic.prune.interval.ms", INT, 300000,
       "How often records of __share_group_state before the last needed snapshot are deleted.", at_least(1)),
    _d("producer.id.expiration.ms", INT, 86400000, "Idle time after which a producer id's state expires."),
    _d("producer.id.expiration.check.interval.ms", INT, 600000,
       "How often the broker forgets producer ids idle for producer.id.expiration.ms.", at_least(1)),
    _d("transactional.id.expiration.ms", INT, 604800000, "Idle time after which a transactional id expires.",
       at_least(1)),
    _d("transaction.max.timeout.ms", INT, 900000, "Largest transaction.timeout.ms a producer may ask for.",
       at_least(1)),
    _d("transaction.state.log.num.partitions", INT, 50, "Partitions of __transaction_state.", at_least(1)),
    _d("transaction.state.log.replication.factor", SHORT, 3,
       "Replication factor of __transaction_state (one node: the topic has one replica).", at_least(1)),
    _d("transaction.state.log.min.isr", INT, 2, "min.insync.replicas of __transaction_state (unused on one node).",
       at_least(1)),
    _d("transaction.state.log.segment.bytes", INT, 104857600, "Segment size of __transaction_state.",
       at_least(1)),
    _d("transaction.abort.timed.out.transaction.cleanup.interval.ms", INT, 10000,
       "How often transactions past their timeout are aborted.", at_least(1)),
    _d("transaction.remove.expired.transaction.cleanup.interval.ms", INT, 3600000,
       "How often transactional ids past transactional.id.expiration.ms are removed.", at_least(1)),
    _d("fetch.max.bytes", INT, 57671680, "Largest fetch response the broker builds.", at_least(0)),
    _d("replica.fetch.max.bytes", INT, 1048576, "Bytes per partition a follower fetches (unused on one node)."),
    _d("connections.max.idle.ms", LONG, 600000, "Idle connections are closed after this long."),
    _d("queued.max.requests", INT, 500, "Requests queued per connection before reads pause.", at_least(1)),
    _d("queued.max.request.bytes", LONG, -1,
       "Bytes of large requests all connections may hold while reading them before reads pause (-1: no bound)."),
    _d("max.connections", INT, INT_MAX, "Connections the broker accepts at once; more are closed at accept.",
       at_least(0)),
    _d("max.connections.per.ip", INT, INT_MAX, "Connections one client address may hold at once.", at_least(0)),
    _d("max.connections.per.ip.overrides", STRING, "",
       "Per-address limits overriding max.connections.per.ip: host:count,host:count."),
    _d("quota.window.num", INT, 11, "Samples kept in memory for client quotas.", at_least(1)),
    _d("quota.window.size.seconds", INT, 1, "Time span of each client quota sample.", at_least(1)),
    _d("controller.quota.window.num", INT, 11,
       "Samples of the controller mutation quota: its token bucket holds this many windows of the rate.",
       at_least(1)),
    _d("controller.quota.window.size.seconds", INT, 1, "Time span of each controller mutation quota sample.",
       at_least(1)),
    _d("metrics.listener", STRING, None,
       "http://HOST:PORT serving Prometheus metrics on /metrics and health on /health and /ready "
       "(pylog's; unset: no metrics listener)."),
    _d("schema.registry.listeners", STRING, None,
       "Comma-separated http://HOST:PORT or https://HOST:PORT listeners of the schema registry built into "
       "the broker (Confluent's REST API, schemas stored in _schemas; pylog's; unset: no registry)."),
    _d("schema.registry.users.file", STRING, None,
       "user:password lines: the schema registry then asks for HTTP basic auth (pylog's; unset: open)."),
    _d("console.listener", STRING, None,
       "http://HOST:PORT serving the web console (pylog console) from the broker, a client of its own "
       "PLAINTEXT listener (pylog's; unset: no console)."),
    _d("console.allow.writes", BOOLEAN, False,
       "Let the broker's web console create, alter and delete topics, produce, reset offsets and abort "
       "transactions (pylog's; false: read-only)."),
    _d("faults.enable", BOOLEAN, False,
       "Serve the fault-injection endpoints (/faults) on metrics.listener, for tests (pylog's; a WARNING at "
       "start-up says faults can be injected)."),
    _d("faults.file", STRING, None,
       "A JSON file of fault rules loaded at start-up; implies faults.enable (pylog's, for CI jobs)."),
]
# Broker properties that have no default in Kafka: a coarser property (log.retention.hours,
# log.roll.hours, log.roll.jitter.hours, log.flush.scheduler.interval.ms) supplies the value.
_UNSET_ON_BROKER = {"log.retention.ms", "log.roll.ms", "log.roll.jitter.ms", "log.flush.interval.ms"}
# Topic configs appear on the broker under their synonyms.
_BROKER_SYNONYMS = [
    ConfigDef(d.synonym, d.type, None if d.synonym in _UNSET_ON_BROKER else d.default, d.doc, d.validator)
    for d in TOPIC_CONFIGS.defs.values() if d.synonym and d.synonym not in {x.name for x in _BROKER_OWN}
]
BROKER_CONFIGS = ConfigSet("broker", _BROKER_OWN + STREAMS_GROUP_CONFIGS + BROKER_SECURITY_CONFIGS + _BROKER_SYNONYMS)
