"""Typed definitions of Kafka's broker, topic and client properties.

Names, types and defaults are Kafka's (4.x). Values arrive as strings (from
.properties files, -X flags, CreateTopics configs) and are converted and
validated here once, so the rest of the code reads typed values.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

from pylog.core.errors import UsageError

LONG_MAX = 9223372036854775807
INT_MAX = 2147483647

# Kafka's ConfigDef.Type names (DescribeConfigs config_type ids in brackets)
BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST, CLASS, PASSWORD = (
    "boolean", "string", "int", "short", "long", "double", "list", "class", "password",
)
CONFIG_TYPE_IDS = {BOOLEAN: 1, STRING: 2, INT: 3, SHORT: 4, LONG: 5, DOUBLE: 6, LIST: 7, CLASS: 8, PASSWORD: 9}


class ConfigError(UsageError):
    """An unknown property or a value of the wrong type or range."""


@dataclass(frozen=True)
class ConfigDef:
    name: str
    type: str
    default: Any
    doc: str
    validator: Callable[[Any], str | None] | None = None  # returns a problem or None
    synonym: str | None = None  # broker property that supplies the topic default
    sensitive: bool = False

    def parse(self, raw: Any) -> Any:
        if raw is None:
            return None
        if not isinstance(raw, str):
            value = raw
        else:
            value = _PARSERS[self.type](raw.strip(), self)
        if self.validator is not None and value is not None:
            problem = self.validator(value)
            if problem:
                raise ConfigError(f"invalid value {raw!r} for {self.name}: {problem}")
        return value

    def render(self, value: Any) -> str | None:
        """Value as Kafka prints it (DescribeConfigs, .properties)."""
        if value is None:
            return None
        if self.type == BOOLEAN:
            return "true" if value else "false"
        if self.type == LIST:
            return ",".join(value)
        return str(value)


def _bool(raw: str, d: ConfigDef) -> bool:
    low = raw.lower()
    if low in ("true", "false"):
        return low == "true"
    raise ConfigError(f"invalid value {raw!r} for {d.name}: expected true or false")


def _int_parser(lo: int, hi: int):
    def parse(raw: str, d: ConfigDef) -> int:
        try:
            v = int(raw)
        except ValueError:
            raise ConfigError(f"invalid value {raw!r} for {d.name}: expected a whole number") from None
        if not lo <= v <= hi:
            raise ConfigError(f"invalid value {raw!r} for {d.name}: out of range")
        return v

    return parse


def _double(raw: str, d: ConfigDef) -> float:
    try:
        return float(raw)
    except ValueError:
        raise ConfigError(f"invalid value {raw!r} for {d.name}: expected a number") from None


def split_list(raw: str | None) -> list[str]:
    """Kafka's LIST syntax: comma-separated items, blanks around them and empty items ignored."""
    return [p.strip() for p in (raw or "").split(",") if p.strip()]


def _list(raw: str, d: ConfigDef) -> list[str]:
    return split_list(raw)


def _string(raw: str, d: ConfigDef):
    return raw


_PARSERS = {
    BOOLEAN: _bool,
    STRING: _string,
    PASSWORD: _string,
    CLASS: _string,
    INT: _int_parser(-(2**31), 2**31 - 1),
    SHORT: _int_parser(-(2**15), 2**15 - 1),
    LONG: _int_parser(-(2**63), 2**63 - 1),
    DOUBLE: _double,
    LIST: _list,
}


# ---- validators ----

def at_least(lo):
    return lambda v: None if v >= lo else f"must be at least {lo}"


def between(lo, hi):
    return lambda v: None if lo <= v <= hi else f"must be between {lo} and {hi}"


def one_of(*choices):
    def check(v):
        values = v if isinstance(v, list) else [v]
        bad = [x for x in values if x not in choices]
        return f"must be one of {', '.join(choices)}" if bad else None

    return check


COMPRESSION_TYPES = ("none", "gzip", "snappy", "lz4", "zstd")


class ConfigSet:
    """A named collection of ConfigDefs (topic, broker, producer, consumer)."""

    def __init__(self, name: str, defs: Iterable[ConfigDef]):
        self.name = name
        self.defs: dict[str, ConfigDef] = {d.name: d for d in defs}

    def __contains__(self, key: str) -> bool:
        return key in self.defs

    def __getitem__(self, key: str) -> ConfigDef:
        return self.defs[key]

    def defaults(self) -> dict[str, Any]:
        return {k: d.default for k, d in self.defs.items()}

    def parse(self, props: dict[str, Any], *, allow_unknown: bool = False) -> dict[str, Any]:
        """Typed values for the given properties only (unknown keys refused)."""
        out: dict[str, Any] = {}
        for k, raw in props.items():
            d = self.defs.get(k)
            if d is None:
                if allow_unknown:
                    continue
                raise ConfigError(f"unknown {self.name} property {k!r}")
            out[k] = d.parse(raw)
        return out

    def resolve(self, props: dict[str, Any] | None = None, *, base: dict[str, Any] | None = None,
                allow_unknown: bool = False) -> "Config":
        values = dict(base) if base is not None else self.defaults()
        overrides = self.parse(props or {}, allow_unknown=allow_unknown)
        values.update(overrides)
        return Config(self, values, set(overrides))


class Config(dict):
    """Typed property values; `overridden` names the keys set explicitly."""

    def __init__(self, configset: ConfigSet, values: dict[str, Any], overridden: set[str] | None = None):
        super().__init__(values)
        self.configset = configset
        self.overridden = set(overridden or ())

    def with_overrides(self, props: dict[str, Any]) -> "Config":
        new = self.configset.resolve(props, base=dict(self))
        new.overridden |= self.overridden
        return new

    def rendered(self) -> dict[str, str | None]:
        return {k: self.configset[k].render(v) for k, v in self.items()}


def _d(name, type_, default, doc, validator=None, synonym=None, sensitive=False):
    return ConfigDef(name, type_, default, doc, validator, synonym, sensitive)


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


# ---- TLS and SASL (broker listeners; clients take the same ssl.* names) ----
_SSL = [
    _d("ssl.keystore.type", STRING, "JKS", "Keystore format: PEM or PKCS12 (JKS is Java's own and is refused)."),
    _d("ssl.keystore.location", STRING, None, "Keystore file: PEM with key and certificate chain, or PKCS12."),
    _d("ssl.keystore.password", PASSWORD, None, "Password of a PKCS12 keystore.", sensitive=True),
    _d("ssl.key.password", PASSWORD, None, "Password of the private key.", sensitive=True),
    _d("ssl.keystore.key", PASSWORD, None, "Inline PEM private key (with ssl.keystore.type=PEM).", sensitive=True),
    _d("ssl.keystore.certificate.chain", PASSWORD, None, "Inline PEM certificate chain.", sensitive=True),
    _d("ssl.truststore.type", STRING, "JKS", "Truststore format: PEM or PKCS12."),
    _d("ssl.truststore.location", STRING, None, "Truststore file of trusted CA certificates."),
    _d("ssl.truststore.password", PASSWORD, None, "Password of a PKCS12 truststore.", sensitive=True),
    _d("ssl.truststore.certificates", PASSWORD, None, "Inline PEM trusted certificates.", sensitive=True),
    _d("ssl.enabled.protocols", LIST, ["TLSv1.2", "TLSv1.3"], "TLS versions to accept.",
       one_of("TLSv1.2", "TLSv1.3", "TLSv1.1", "TLSv1")),
    _d("ssl.protocol", STRING, "TLSv1.3", "TLS protocol of the context (the enabled protocols decide)."),
    _d("ssl.cipher.suites", LIST, None, "Cipher suites by their IANA (Java) names; empty: the defaults."),
    _d("ssl.endpoint.identification.algorithm", STRING, "https", "https: check the host name in the certificate."),
]
_BROKER_SECURITY = _SSL + [
    _d("listener.security.protocol.map", STRING,
       "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
       "Listener name to security protocol."),
    _d("inter.broker.listener.name", STRING, None, "Listener brokers use among themselves (unused on one node)."),
    _d("security.inter.broker.protocol", STRING, "PLAINTEXT", "Protocol brokers use among themselves."),
    _d("controller.listener.names", STRING, None, "Controller listeners (unused by pylog)."),
    _d("ssl.client.auth", STRING, "none", "Client certificates: none, requested or required.",
       one_of("none", "requested", "required")),
    _d("ssl.principal.mapping.rules", STRING, "DEFAULT", "Rules mapping a certificate's DN to a principal name."),
    _d("sasl.enabled.mechanisms", LIST, ["GSSAPI"], "SASL mechanisms served: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512."),
    _d("sasl.mechanism.inter.broker.protocol", STRING, "GSSAPI", "SASL mechanism among brokers (unused)."),
    _d("sasl.jaas.config", PASSWORD, None, "JAAS login module config (PLAIN users as user_NAME=\"PASSWORD\").",
       sensitive=True),
    _d("authorizer.class.name", STRING, "", "Authorizer: org.apache.kafka.metadata.authorizer.StandardAuthorizer "
       "turns ACLs on."),
    _d("super.users", STRING, "", "Principals allowed everything, separated by ';' (User:admin;User:ops)."),
    _d("allow.everyone.if.no.acl.found", BOOLEAN, False, "Allow access to resources that have no ACL."),
    _d("connections.max.reauth.ms", LONG, 0, "Re-authentication interval (0: never)."),
]

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
    _d("group.coordinator.rebalance.protocols", LIST, ["classic", "consumer"],
       "Group protocols served: classic (JoinGroup/SyncGroup) and consumer (KIP-848).",
       one_of("classic", "consumer", "streams", "share")),
    _d("group.consumer.session.timeout.ms", INT, 45000, "Session timeout of KIP-848 consumer group members.",
       at_least(1)),
    _d("group.consumer.heartbeat.interval.ms", INT, 5000, "Heartbeat interval given to consumer group members.",
       at_least(1)),
    _d("group.consumer.assignors", LIST, ["uniform", "range"],
       "Server-side assignors of consumer groups (uniform, range); the first is the default.",
       one_of("uniform", "range", "org.apache.kafka.coordinator.group.assignor.UniformAssignor",
              "org.apache.kafka.coordinator.group.assignor.RangeAssignor")),
    _d("group.consumer.max.size", INT, INT_MAX, "Largest number of members in one consumer group.", at_least(1)),
    _d("group.consumer.migration.policy", STRING, "bidirectional",
       "Online classic<->consumer group conversion: bidirectional, upgrade, downgrade or disabled.",
       one_of("bidirectional", "upgrade", "downgrade", "disabled")),
    # share groups (KIP-932): broker defaults of the group configs share.* and their bounds
    _d("group.share.session.timeout.ms", INT, 45000, "Session timeout of share group members.", at_least(1)),
    _d("group.share.heartbeat.interval.ms", INT, 5000, "Heartbeat interval of share group members.", at_least(1)),
    _d("group.share.max.size", INT, 200, "Largest number of members in one share group.", at_least(1)),
    _d("group.share.record.lock.duration.ms", INT, 30000,
       "How long a share consumer holds a record it acquired before it becomes available again.", at_least(1)),
    _d("group.share.min.record.lock.duration.ms", INT, 15000, "Smallest share.record.lock.duration.ms of a group.",
       at_least(1)),
    _d("group.share.max.record.lock.duration.ms", INT, 60000, "Largest share.record.lock.duration.ms of a group.",
       at_least(1)),
    _d("group.share.delivery.count.limit", INT, 5,
       "Deliveries of a record to a share group before it is archived.", at_least(2)),
    _d("group.share.min.delivery.count.limit", INT, 2, "Least share.delivery.count.limit.", at_least(2)),
    _d("group.share.max.delivery.count.limit", INT, 10, "Most share.delivery.count.limit.", at_least(2)),
    _d("errors.deadletterqueue.topic.name.prefix", STRING, "dlq.", "Required prefix of share groups' DLQ topics."),
    _d("errors.deadletterqueue.auto.create.topics.enable", BOOLEAN, False, "Create missing share group DLQ topics."),
    _d("group.share.partition.max.record.locks", INT, 2000, "Records in flight per share-partition.",
       at_least(100)),
    _d("group.share.min.partition.max.record.locks", INT, 100,
       "Smallest share.partition.max.record.locks of a group.", at_least(1)),
    _d("group.share.max.partition.max.record.locks", INT, 4000,
       "Largest share.partition.max.record.locks of a group.", at_least(1)),
    _d("group.share.max.share.sessions", INT, 2000, "Share sessions (ShareFetch) a broker keeps.", at_least(1)),
    _d("share.coordinator.state.topic.num.partitions", INT, 50, "Partitions of __share_group_state.", at_least(1)),
    _d("share.coordinator.state.topic.segment.bytes", INT, 104857600, "Segment size of __share_group_state.",
       at_least(1)),
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
BROKER_CONFIGS = ConfigSet("broker", _BROKER_OWN + _BROKER_SECURITY + _BROKER_SYNONYMS)


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


# ---- client configs ----
_CLIENT_COMMON = [
    _d("bootstrap.servers", LIST, ["127.0.0.1:9092"], "host:port pairs for the initial connection."),
    _d("client.id", STRING, "pylog", "Id string sent to the broker in every request."),
    _d("request.timeout.ms", INT, 30000, "How long to wait for a response before retrying or failing.", at_least(0)),
    _d("metadata.max.age.ms", LONG, 300000, "Metadata is refreshed at least this often.", at_least(0)),
    _d("retry.backoff.ms", LONG, 100, "Wait before retrying a failed request.", at_least(0)),
    _d("retry.backoff.max.ms", LONG, 1000, "Largest exponential retry backoff.", at_least(0)),
    _d("reconnect.backoff.ms", LONG, 50, "Wait before reconnecting to a host.", at_least(0)),
    _d("reconnect.backoff.max.ms", LONG, 1000, "Largest reconnect backoff.", at_least(0)),
    _d("connections.max.idle.ms", LONG, 540000, "Close idle connections after this long."),
    _d("socket.connection.setup.timeout.ms", LONG, 10000, "How long a connection attempt may take."),
    _d("security.protocol", STRING, "PLAINTEXT", "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL.",
       one_of("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", "plaintext", "ssl", "sasl_plaintext", "sasl_ssl")),
    _d("sasl.mechanism", STRING, "GSSAPI", "SASL mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512."),
    _d("sasl.mechanisms", STRING, None, "librdkafka's name for sasl.mechanism."),
    _d("sasl.username", STRING, None, "SASL user name (librdkafka)."),
    _d("sasl.password", PASSWORD, None, "SASL password (librdkafka).", sensitive=True),
    _d("sasl.jaas.config", PASSWORD, None, "Java's JAAS login module config with username and password.",
       sensitive=True),
    _d("ssl.ca.location", STRING, None, "PEM file of CA certificates to trust (librdkafka)."),
    _d("ssl.certificate.location", STRING, None, "PEM client certificate (librdkafka)."),
    _d("ssl.key.location", STRING, None, "PEM client private key (librdkafka)."),
    _d("enable.ssl.certificate.verification", BOOLEAN, True, "Verify the broker's certificate (librdkafka)."),
    _d("client.rack", STRING, "", "Rack of this client."),
] + [d for d in _SSL]
PRODUCER_CONFIGS = ConfigSet("producer", _CLIENT_COMMON + [
    _d("acks", STRING, "all", "Acknowledgements the leader must have: 0, 1 or all (-1).",
       one_of("0", "1", "all", "-1")),
    _d("batch.size", INT, 16384, "Bytes per partition batch.", at_least(0)),
    _d("linger.ms", INT, 5, "Wait this long for more records before sending a batch.", at_least(0)),
    _d("buffer.memory", LONG, 33554432, "Bytes the producer may use to buffer records.", at_least(0)),
    _d("compression.type", STRING, "none", "Codec for batches: none, gzip, snappy, lz4, zstd.",
       one_of(*COMPRESSION_TYPES)),
    _d("compression.gzip.level", INT, -1, "gzip level (-1 default)."),
    _d("compression.lz4.level", INT, 9, "lz4 level."),
    _d("compression.zstd.level", INT, 3, "zstd level."),
    _d("max.block.ms", LONG, 60000, "How long send() may block for metadata or buffer space.", at_least(0)),
    _d("delivery.timeout.ms", INT, 120000, "Upper bound on the time to report success or failure of a send.",
       at_least(0)),
    _d("retries", INT, INT_MAX, "Retries for a failed batch.", at_least(0)),
    _d("max.request.size", INT, 1048576, "Largest request the producer sends.", at_least(0)),
    _d("enable.idempotence", BOOLEAN, True, "Exactly one copy of each record per partition."),
    _d("max.in.flight.requests.per.connection", INT, 5, "Unacknowledged requests per connection.", at_least(1)),
    _d("partitioner.ignore.keys", BOOLEAN, False, "Use the sticky partitioner even for keyed records."),
    _d("partitioner.adaptive.partitioning.enable", BOOLEAN, True, "Adapt sticky partitioning to broker speed."),
    _d("transactional.id", STRING, None, "Transactional id (transactions are not supported yet)."),
    _d("transaction.timeout.ms", INT, 60000, "Transaction timeout."),
    _d("key.serializer", CLASS, None, "Accepted for compatibility; pylog sends bytes."),
    _d("value.serializer", CLASS, None, "Accepted for compatibility; pylog sends bytes."),
])
CONSUMER_CONFIGS = ConfigSet("consumer", _CLIENT_COMMON + [
    _d("group.id", STRING, None, "Consumer group id."),
    _d("group.instance.id", STRING, None, "Static membership id."),
    _d("group.protocol", STRING, "classic", "Group protocol: classic, or consumer (KIP-848: the broker assigns).",
       one_of("classic", "consumer", "CLASSIC", "CONSUMER")),
    _d("group.remote.assignor", STRING, None, "Server-side assignor for group.protocol=consumer (uniform, range); "
       "null lets the broker choose."),
    _d("auto.offset.reset", STRING, "latest", "Where to start without a committed offset: earliest, latest, none.",
       one_of("earliest", "latest", "none")),
    _d("enable.auto.commit", BOOLEAN, True, "Commit positions periodically in the background."),
    _d("auto.commit.interval.ms", INT, 5000, "Auto-commit period.", at_least(0)),
    _d("fetch.min.bytes", INT, 1, "Least data the broker should return for a fetch.", at_least(0)),
    _d("fetch.max.wait.ms", INT, 500, "Longest time the broker waits for fetch.min.bytes.", at_least(0)),
    _d("fetch.max.bytes", INT, 52428800, "Largest fetch response.", at_least(0)),
    _d("max.partition.fetch.bytes", INT, 1048576, "Largest data per partition in a fetch.", at_least(0)),
    _d("max.poll.records", INT, 500, "Largest number of records one poll returns.", at_least(1)),
    _d("max.poll.interval.ms", INT, 300000, "Longest gap between polls before the member leaves the group.",
       at_least(1)),
    _d("session.timeout.ms", INT, 45000, "Group session timeout.", at_least(1)),
    _d("heartbeat.interval.ms", INT, 3000, "Heartbeat period.", at_least(1)),
    _d("partition.assignment.strategy", LIST, ["range", "cooperative-sticky"], "Assignors in preference order.",
       one_of("range", "roundrobin", "cooperative-sticky",
              "org.apache.kafka.clients.consumer.RangeAssignor",
              "org.apache.kafka.clients.consumer.RoundRobinAssignor",
              "org.apache.kafka.clients.consumer.CooperativeStickyAssignor")),
    _d("check.crcs", BOOLEAN, True, "Check the CRC of fetched batches."),
    _d("isolation.level", STRING, "read_uncommitted", "read_uncommitted or read_committed.",
       one_of("read_uncommitted", "read_committed")),
    _d("default.api.timeout.ms", INT, 60000, "Timeout of blocking consumer calls.", at_least(0)),
    _d("exclude.internal.topics", BOOLEAN, True, "Do not match internal topics in pattern subscriptions."),
    _d("allow.auto.create.topics", BOOLEAN, True, "Allow metadata requests to auto-create topics."),
    _d("key.deserializer", CLASS, None, "Accepted for compatibility; pylog returns bytes."),
    _d("value.deserializer", CLASS, None, "Accepted for compatibility; pylog returns bytes."),
])
