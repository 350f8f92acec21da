"""The machinery of typed properties: Kafka's config types, ConfigDef (one property),
ConfigSet (a named collection), Config (resolved values), parsers and validators.

Values arrive as strings (from .properties files, -X flags, CreateTopics configs) and
are converted and validated here once, so the rest of the code reads typed values.
"""
from __future__ import annotations

from dataclasses import dataclass
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


def definition(name, type_, default, doc, validator=None, synonym=None, sensitive=False):
    return ConfigDef(name, type_, default, doc, validator, synonym, sensitive)
