"""Dynamic broker configs (Kafka's DynamicBrokerConfig): set per broker or as the cluster
default with kafka-configs --entity-type brokers (--entity-name ID | --entity-default),
persisted in the log directory and applied without a restart.

A broker's effective value of a config is, most specific first: its per-broker dynamic value,
the cluster-default dynamic value, server.properties/--set, Kafka's default. The topic configs
whose defaults come from broker configs (log.retention.ms, message.max.bytes, ...) change at
once on every topic that does not override them. Only configs Kafka marks dynamic can be set;
of those, pylog serves the ones it can apply live (see DYNAMIC) and refuses listener and TLS
changes, which need a restart here.
"""
from __future__ import annotations

from typing import Callable

from pylog.broker.common.json_state import JsonStateFile
from pylog.core.config import BROKER_CONFIGS, Config, ConfigError

# Kafka's dynamic broker configs that set topic defaults (DynamicLogConfig): applied live
LOG_DEFAULTS = frozenset({
    "log.segment.bytes", "log.roll.ms", "log.roll.hours", "log.roll.jitter.ms", "log.roll.jitter.hours",
    "log.index.size.max.bytes", "log.flush.interval.messages", "log.flush.interval.ms", "log.retention.bytes",
    "log.retention.ms", "log.retention.minutes", "log.retention.hours", "log.index.interval.bytes",
    "log.cleaner.delete.retention.ms", "log.cleaner.min.compaction.lag.ms", "log.cleaner.max.compaction.lag.ms",
    "log.segment.delete.delay.ms", "log.cleaner.min.cleanable.ratio", "log.cleanup.policy",
    "unclean.leader.election.enable", "min.insync.replicas", "compression.type", "log.preallocate",
    "log.message.timestamp.type", "log.message.timestamp.before.max.ms", "log.message.timestamp.after.max.ms",
    "message.max.bytes",
})
# dynamic in Kafka for parts a single pylog node does not have (thread pools, replication
# throttles): kept and described as Kafka does, with nothing to resize or throttle
NO_EFFECT = frozenset({
    "num.io.threads", "num.network.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir",
    "background.threads", "log.cleaner.threads", "log.cleaner.io.max.bytes.per.second",
    "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.size", "log.cleaner.io.buffer.load.factor",
    "log.cleaner.backoff.ms", "leader.replication.throttled.rate", "follower.replication.throttled.rate",
    "replica.alter.log.dirs.io.max.bytes.per.second",
})
DYNAMIC = LOG_DEFAULTS | NO_EFFECT
# dynamic in Kafka, but reloading listeners and TLS material needs a restart of pylog
RESTART_NEEDED = frozenset({
    "listeners", "advertised.listeners", "listener.security.protocol.map", "max.connections",
    "max.connections.per.ip", "max.connections.per.ip.overrides", "sasl.enabled.mechanisms", "sasl.jaas.config",
    "ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.type", "ssl.key.password",
    "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.truststore.type", "ssl.truststore.certificates", "ssl.client.auth", "ssl.cipher.suites",
    "ssl.enabled.protocols", "ssl.protocol", "ssl.endpoint.identification.algorithm",
    "ssl.principal.mapping.rules", "metric.reporters", "producer.id.expiration.ms",
})


class DynamicConfigError(Exception):
    """A change refused as a whole (Kafka's INVALID_REQUEST / INVALID_CONFIG)."""

    def __init__(self, message: str, invalid_config: bool = False):
        super().__init__(message)
        self.invalid_config = invalid_config


class DynamicBrokerConfigs(JsonStateFile):
    """The dynamic values of one broker (`per_broker`) and of the cluster default (`default`)."""

    FILE_NAME = "broker-configs.json"
    WHAT = "dynamic broker configs"

    def __init__(self, log_dir: str, config: Config, refresh_topics: Callable[[], None]):
        """`config`: the node's live config, which apply() updates in place; `refresh_topics()`
        re-resolves the open logs' topic configs (a no-op until the node sets it to its log
        manager's once the logs are open)."""
        super().__init__(log_dir)
        self.config = config
        self.refresh_topics = refresh_topics
        self.static: Config = config.with_overrides({})  # server.properties and --set
        self.static.overridden = set(config.overridden)
        self.default: dict[str, str] = {}
        self.per_broker: dict[str, str] = {}

    def _apply(self, doc: dict) -> None:
        self.default = {str(k): str(v) for k, v in doc.get("default", {}).items()}
        self.per_broker = {str(k): str(v) for k, v in doc.get("broker", {}).items()}

    def load(self) -> None:
        """Read the persisted values and apply them (start-up)."""
        super().load()
        if self.default or self.per_broker:
            self._effective(self.default, self.per_broker)  # raises on a value no longer valid
            self.apply()

    # ---- reading ----
    def source(self, name: str) -> str | None:
        """"broker", "default" or None: where the dynamic value of `name` comes from."""
        if name in self.per_broker:
            return "broker"
        return "default" if name in self.default else None

    def scope(self, is_default: bool) -> dict[str, str]:
        """The dynamic values set at one scope."""
        return self.default if is_default else self.per_broker

    # ---- changing ----
    def replace(self, is_default: bool, values: dict[str, str], validate_only: bool = False) -> None:
        """Make `values` the dynamic configs of one scope (raises DynamicConfigError)."""
        for name, value in values.items():
            check_dynamic(name)
            if name not in BROKER_CONFIGS:
                _check_number(name, value)
        default = dict(values) if is_default else self.default
        per_broker = self.per_broker if is_default else dict(values)
        self._effective(default, per_broker)
        if validate_only:
            return
        self.default, self.per_broker = dict(default), dict(per_broker)
        with self._lock:
            self._write({"default": self.default, "broker": self.per_broker})
        self.apply()

    def _effective(self, default: dict, per_broker: dict) -> Config:
        merged = dict(default)
        merged.update(per_broker)
        known = {k: v for k, v in merged.items() if k in BROKER_CONFIGS}
        try:
            cfg = self.static.with_overrides(known)
        except ConfigError as e:
            raise DynamicConfigError(str(e), invalid_config=True) from None
        return cfg

    def apply(self) -> None:
        """Put the effective values in the broker's config (the object every part reads) and
        re-resolve the topic configs whose defaults they set."""
        cfg = self._effective(self.default, self.per_broker)
        live = self.config
        live.clear()
        live.update(cfg)
        live.overridden = set(cfg.overridden)
        self.refresh_topics()  # at start-up the logs open with these values


def check_dynamic(name: str) -> None:
    """Raise DynamicConfigError unless `name` can be changed without a restart here."""
    if name in DYNAMIC:
        return
    if name in RESTART_NEEDED:
        raise DynamicConfigError(f"Cannot update {name} dynamically on pylog: it needs a broker restart "
                                 "(server.properties or --set)")
    raise DynamicConfigError(f"Cannot update these configs dynamically: Set({name})")


def _check_number(name: str, value: str) -> None:
    try:
        float(value)
    except (TypeError, ValueError):
        raise DynamicConfigError(f"Invalid value {value} for configuration {name}: Not a number of type LONG",
                                 invalid_config=True) from None


def is_read_only(name: str) -> bool:
    """DescribeConfigs' read_only: configs that cannot be altered dynamically."""
    return name not in DYNAMIC
