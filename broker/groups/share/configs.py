"""Group configs (IncrementalAlterConfigs/DescribeConfigs on GROUP resources) and their values.

Kafka keeps them in its metadata log; pylog in `group-configs.json` in the
first log dir. Names, types and bounds are Kafka 4.4's GroupConfig (validate_all): the share.*
and consumer.* numbers bounded by the broker's group.share/consumer.min/max.* configs, the streams.*
ones (streams groups) by group.streams.*.
"""
from __future__ import annotations

import re

from pylog.broker.common.json_state import JsonStateFile
from pylog.core.config import BROKER_CONFIGS, ConfigError

RESOURCE_GROUP = 32
_ISO_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$", re.I)

# name -> (broker default config, (min config, max config) or None, kind)
SHARE_CONFIGS = {
    "share.session.timeout.ms": ("group.share.session.timeout.ms",
                                 ("group.share.min.session.timeout.ms", "group.share.max.session.timeout.ms"), int),
    "share.heartbeat.interval.ms": ("group.share.heartbeat.interval.ms",
                                    ("group.share.min.heartbeat.interval.ms",
                                     "group.share.max.heartbeat.interval.ms"), int),
    "share.record.lock.duration.ms": ("group.share.record.lock.duration.ms",
                                      ("group.share.min.record.lock.duration.ms",
                                       "group.share.max.record.lock.duration.ms"), int),
    "share.delivery.count.limit": ("group.share.delivery.count.limit",
                                   ("group.share.min.delivery.count.limit",
                                    "group.share.max.delivery.count.limit"), int),
    "share.partition.max.record.locks": ("group.share.partition.max.record.locks",
                                         ("group.share.min.partition.max.record.locks",
                                          "group.share.max.partition.max.record.locks"), int),
}
# Kafka 4.4's later group configs: broker default, the broker's bounds (checked after parsing,
# with GroupConfig.validateIntRange's message) or None, kind. The offload ones are internal in
# Kafka (not described unless set) and only move Kafka's assignor to a background thread:
# pylog accepts and stores them and assigns inline either way.
LATER_CONFIGS = {
    "consumer.assignment.interval.ms": ("group.consumer.assignment.interval.ms",
                                        ("group.consumer.min.assignment.interval.ms",
                                         "group.consumer.max.assignment.interval.ms"), int),
    "consumer.assignor.offload.enable": ("group.consumer.assignor.offload.enable", None, bool),
    "share.assignment.interval.ms": ("group.share.assignment.interval.ms",
                                     ("group.share.min.assignment.interval.ms",
                                      "group.share.max.assignment.interval.ms"), int),
    "share.assignor.offload.enable": ("group.share.assignor.offload.enable", None, bool),
    # streams groups (KIP-1071)
    "streams.session.timeout.ms": ("group.streams.session.timeout.ms",
                                   ("group.streams.min.session.timeout.ms",
                                    "group.streams.max.session.timeout.ms"), int),
    "streams.heartbeat.interval.ms": ("group.streams.heartbeat.interval.ms",
                                      ("group.streams.min.heartbeat.interval.ms",
                                       "group.streams.max.heartbeat.interval.ms"), int),
    "streams.num.standby.replicas": ("group.streams.num.standby.replicas", None, int),
    "streams.initial.rebalance.delay.ms": ("group.streams.initial.rebalance.delay.ms", None, int),
    "streams.assignment.interval.ms": ("group.streams.assignment.interval.ms",
                                       ("group.streams.min.assignment.interval.ms",
                                        "group.streams.max.assignment.interval.ms"), int),
    "streams.assignor.offload.enable": ("group.streams.assignor.offload.enable", None, bool),
    "streams.task.offset.interval.ms": ("group.streams.task.offset.interval.ms", None, int),
    "streams.num.warmup.replicas": ("group.streams.num.warmup.replicas", None, int),
    "streams.acceptable.recovery.lag": ("group.streams.acceptable.recovery.lag", None, int),
    "streams.assignor.name": ("group.streams.assignors", None, str),
    "streams.rack.aware.assignment.tags": ("group.streams.rack.aware.assignment.tags", None, str),
}
# described only once a group sets them (internal in Kafka)
INTERNAL = {"consumer.assignor.offload.enable", "share.assignor.offload.enable", "streams.assignor.offload.enable",
            "streams.acceptable.recovery.lag", "streams.num.warmup.replicas", "streams.task.offset.interval.ms"}
# streams.* numbers bounded by one broker config: name -> (floor, broker config of the ceiling or None)
_STREAMS_LIMITS = {"streams.num.standby.replicas": (0, "group.streams.max.standby.replicas"),
                   "streams.num.warmup.replicas": (0, "group.streams.max.warmup.replicas"),
                   "streams.initial.rebalance.delay.ms": (0, None),
                   "streams.task.offset.interval.ms": (1, None), "streams.acceptable.recovery.lag": (0, None)}
FIXED_DEFAULTS = {
    "share.auto.offset.reset": "latest",
    "share.isolation.level": "read_uncommitted",
    "share.renew.acknowledge.enable": "true",
    "errors.deadletterqueue.topic.name": "",
    "errors.deadletterqueue.copy.record.enable": "false",
    "consumer.session.timeout.ms": None,
    "consumer.heartbeat.interval.ms": None,
}


def parse_duration_ms(text: str) -> int:
    """ISO-8601 PnDTnHnMn.nS (Java's Duration.parse subset Kafka documents) in ms; ValueError if not."""
    m = _ISO_DURATION.match(text.strip())
    if not m or text.strip().upper() in ("P", "PT"):
        raise ValueError(f"{text!r} is not an ISO-8601 duration")
    d, h, mi, s = m.groups()
    return int(((int(d or 0) * 24 + int(h or 0)) * 60 + int(mi or 0)) * 60000 + float(s or 0) * 1000)


# Kafka 4.4's GroupConfig.CONFIG_DEF in its definition order (the streams.* names aside):
# name -> (type, atLeast floor or allowed strings or None). ConfigDef.parse checks them in this
# order, then GroupConfig.validateValues the broker's bounds in _RANGES' order.
_DEFS = {
    "consumer.session.timeout.ms": (int, 1), "consumer.heartbeat.interval.ms": (int, 1),
    "consumer.assignment.interval.ms": (int, 0), "consumer.assignor.offload.enable": (bool, None),
    "share.session.timeout.ms": (int, 1), "share.heartbeat.interval.ms": (int, 1),
    "share.record.lock.duration.ms": (int, 1000), "share.delivery.count.limit": (int, 2),
    "share.partition.max.record.locks": (int, 100), "share.auto.offset.reset": ("reset", None),
    "share.isolation.level": (str, ("read_committed", "read_uncommitted")),
    "share.renew.acknowledge.enable": (bool, None), "share.assignment.interval.ms": (int, 0),
    "share.assignor.offload.enable": (bool, None), "errors.deadletterqueue.topic.name": (str, None),
    "errors.deadletterqueue.copy.record.enable": (bool, None),
    "streams.session.timeout.ms": (int, 1), "streams.heartbeat.interval.ms": (int, 1),
    "streams.num.standby.replicas": (int, 0), "streams.initial.rebalance.delay.ms": (int, 0),
    "streams.assignment.interval.ms": (int, 0), "streams.assignor.offload.enable": (bool, None),
    "streams.task.offset.interval.ms": (int, 1), "streams.num.warmup.replicas": (int, 0),
    "streams.acceptable.recovery.lag": (int, 0), "streams.assignor.name": (str, None),
    "streams.rack.aware.assignment.tags": (str, None),
}
_RANGES = ("consumer.heartbeat.interval.ms", "consumer.session.timeout.ms", "consumer.assignment.interval.ms",
           "share.heartbeat.interval.ms", "share.session.timeout.ms", "share.record.lock.duration.ms",
           "share.delivery.count.limit", "share.partition.max.record.locks", "share.assignment.interval.ms",
           "streams.heartbeat.interval.ms", "streams.session.timeout.ms", "streams.assignment.interval.ms")
_JAVA_INT = re.compile(r"^[+-]?\d+$")


def _bad(name: str, value, why: str) -> ConfigError:
    return ConfigError(f"Invalid value {value} for configuration {name}: {why}")


def _parse(name: str, value: str):
    """ConfigDef.parseType and the definition's validator, with ConfigDef's messages."""
    kind, rule = _DEFS[name]
    if kind is bool:
        if value.strip().lower() not in ("true", "false"):
            raise _bad(name, value, "Expected value to be either true or false")
        return value.strip().lower() == "true"
    if kind is int:
        t = value.strip()
        if not _JAVA_INT.match(t) or not -2**31 <= int(t) < 2**31:
            raise _bad(name, value, "Not a number of type INT")
        if int(t) < rule:
            raise _bad(name, int(t), f"Value must be at least {rule}")
        return int(t)
    if kind == "reset":
        if value in ("earliest", "latest"):
            return value
        if value.startswith("by_duration:"):
            try:
                parse_duration_ms(value[len("by_duration:"):])
                return value
            except ValueError as e:
                raise _bad(name, value, str(e)) from None
        raise _bad(name, value, "must be earliest, latest or by_duration:<ISO-8601 duration>")
    if rule is not None and value not in rule:
        raise _bad(name, value, "String must be one of: " + ", ".join(rule))
    return value


def _bounds(name: str) -> tuple[str, str]:
    """The broker configs bounding a group config: group.X.min.Y and group.X.max.Y."""
    kind, rest = name.split(".", 1)
    return f"group.{kind}.min.{rest}", f"group.{kind}.max.{rest}"


def validate_all(configs: dict[str, str], broker_config) -> None:
    """Kafka 4.4's GroupConfig.validate on a group's whole new config (its overrides after the
    request's operations): names, then types and floors, then the broker's bounds, then each
    session timeout above its heartbeat interval, then the DLQ name. ConfigError with Kafka's message."""
    for name in configs:
        if name not in _DEFS:
            raise ConfigError(f"Unknown group config name: {name}")
    parsed = {n: _parse(n, configs[n]) for n in _DEFS if n in configs}
    for name in _RANGES:
        if name in parsed:
            lo, hi = (broker_config[b] for b in _bounds(name))
            if not lo <= parsed[name] <= hi:
                raise ConfigError(f"{name} must be in the range {lo} to {hi} inclusive.")
    for name, (_floor, ceiling) in _STREAMS_LIMITS.items():
        if ceiling is not None and name in parsed and parsed[name] > broker_config[ceiling]:
            raise ConfigError(f"{name} must be less than or equal to {broker_config[ceiling]}")
    for kind in ("consumer", "share", "streams"):
        session, heartbeat = f"{kind}.session.timeout.ms", f"{kind}.heartbeat.interval.ms"
        if session in parsed or heartbeat in parsed:
            s = parsed.get(session, broker_config[f"group.{session}"])
            h = parsed.get(heartbeat, broker_config[f"group.{heartbeat}"])
            if s <= h:
                raise ConfigError(f"{session} must be greater than {heartbeat}")
    if parsed.get("errors.deadletterqueue.topic.name", "").startswith("__"):
        raise ConfigError("errors.deadletterqueue.topic.name: DLQ topic name must not start with '__'")


class GroupConfigs(JsonStateFile):
    """Per-group overrides, persisted; values fall back to the broker's defaults."""

    FILE_NAME = "group-configs.json"
    WHAT = "group configs"

    def __init__(self, log_dir: str, broker_config):
        super().__init__(log_dir)
        self.broker_config = broker_config
        self.overrides: dict[str, dict[str, str]] = {}
        self.load()

    def _apply(self, doc: dict) -> None:
        self.overrides = {g: dict(c) for g, c in doc["groups"].items()}

    def set(self, group: str, new: dict[str, str]) -> None:
        """Replace the overrides of `group` (validated by the caller)."""
        if new:
            self.overrides[group] = dict(new)
        else:
            self.overrides.pop(group, None)
        self._write({"groups": self.overrides})

    def value(self, group: str, name: str):
        """The effective value of a group config (typed for the share.* numbers)."""
        v = self.overrides.get(group, {}).get(name)
        if name in SHARE_CONFIGS:
            return int(v) if v is not None else self.broker_config[SHARE_CONFIGS[name][0]]
        if name in LATER_CONFIGS:
            kind = LATER_CONFIGS[name][2]
            if v is None:
                return _joined(self.broker_config[LATER_CONFIGS[name][0]])
            if kind is str:
                return v
            return v.strip().lower() == "true" if kind is bool else int(v.strip())
        return v if v is not None else FIXED_DEFAULTS.get(name)

    def describe(self, group: str, keys) -> list[tuple[str, str | None, bool]]:
        """(name, value, is_default) of every group config (or those in `keys`)."""
        out = []
        for name in list(SHARE_CONFIGS) + list(FIXED_DEFAULTS) + list(LATER_CONFIGS):
            if keys is not None and name not in keys:
                continue
            over = self.overrides.get(group, {}).get(name)
            if name in INTERNAL and over is None:
                continue
            v = self.value(group, name)
            out.append((name, None if v is None else str(v).lower() if isinstance(v, bool) else str(v),
                        over is None))
        return out


# ---- the DescribeConfigs / IncrementalAlterConfigs forms for GROUP resources ----------------
DYNAMIC_GROUP_CONFIG, DEFAULT_CONFIG = 8, 5  # DescribeConfigsResponse ConfigSource
_TYPES = {int: 3, bool: 1}  # ConfigType INT, BOOLEAN; everything else STRING (2)


STATIC_BROKER_CONFIG = 4


def _joined(v):
    """A broker default as a group config holds it: lists comma-separated, the rest as it is."""
    return ",".join(map(str, v)) if isinstance(v, list) else v


def _render(v) -> str:
    v = _joined(v)
    return str(v).lower() if isinstance(v, bool) else str(v)


def _synonyms(configs: GroupConfigs, group: str, name: str) -> list[dict]:
    """The synonyms Kafka lists for the later group configs: the group's own value, then the
    broker's (server.properties, then its default)."""
    out = []
    over = configs.overrides.get(group, {}).get(name)
    if over is not None:
        out.append({"name": name, "value": over, "source": DYNAMIC_GROUP_CONFIG})
    broker = LATER_CONFIGS[name][0]
    cfg = configs.broker_config
    if broker in getattr(cfg, "overridden", ()):
        out.append({"name": broker, "value": _render(cfg[broker]), "source": STATIC_BROKER_CONFIG})
    default = BROKER_CONFIGS.defs[broker].default
    out.append({"name": broker, "value": _render(default), "source": DEFAULT_CONFIG})
    return out


def describe_entries(configs: GroupConfigs, group: str, keys) -> list[dict]:
    """DescribeConfigs entries of one group."""
    out = []
    for name, value, is_default in configs.describe(group, keys):
        kind = SHARE_CONFIGS.get(name, LATER_CONFIGS.get(name, (None, None, str)))[2]
        synonyms = _synonyms(configs, group, name) if name in LATER_CONFIGS else []
        out.append({"name": name, "value": value, "read_only": False, "is_default": is_default,
                    "config_source": DEFAULT_CONFIG if is_default else DYNAMIC_GROUP_CONFIG,
                    "is_sensitive": False, "synonyms": synonyms, "config_type": _TYPES.get(kind, 2),
                    "documentation": None})
    return out


def incremental_alter(configs: GroupConfigs, group: str, ops: list, validate_only: bool) -> tuple[int, str | None]:
    """Apply SET/DELETE operations on a group's configs: (error code, message)."""
    from pylog.core.errors import ErrorCode  # noqa: PLC0415

    new = dict(configs.overrides.get(group, {}))
    try:
        for op in ops:
            name, kind, value = op["name"], op["config_operation"], op["value"]
            if kind == 0:  # SET
                if value is None:
                    raise ConfigError(f"SET of {name} needs a value")
                new[name] = value
            elif kind == 1:  # DELETE
                if name not in _DEFS:
                    raise ConfigError(f"Unknown group config name: {name}")
                new.pop(name, None)
            else:
                raise ConfigError(f"{name}: APPEND and SUBTRACT need a list config; group configs have none")
        validate_all(new, configs.broker_config)
    except ConfigError as e:
        return ErrorCode.INVALID_CONFIG, str(e)
    if not validate_only:
        configs.set(group, new)
    return ErrorCode.NONE, None
