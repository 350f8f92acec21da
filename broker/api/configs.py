"""DescribeConfigs, AlterConfigs, IncrementalAlterConfigs.

Topic configs are the storage engine's per-topic overrides over broker
defaults. Broker configs come from server.properties and --set at start, and
the ones Kafka marks dynamic can be changed per broker or as the cluster
default (ops/dynamic_config.py): persisted and applied without a restart.
"""
from __future__ import annotations

import logging
from typing import Callable

from pylog.broker.api.context import RequestContext, code_of
from pylog.broker.api.views import AdminView
from pylog.broker.groups.share import configs as group_configs
from pylog.core.config import BROKER_CONFIGS, CONFIG_TYPE_IDS, LIST, TOPIC_CONFIGS, topic_defaults_from_broker
from pylog.broker.ops.dynamic_config import DynamicConfigError, is_read_only
from pylog.core.errors import ErrorCode


# resource types (Kafka's ConfigResource.Type)
TOPIC, BROKER, BROKER_LOGGER, GROUP = 2, 4, 8, 32
# config sources (DescribeConfigsResponse ConfigSource)
DYNAMIC_TOPIC, DYNAMIC_BROKER, DYNAMIC_DEFAULT_BROKER, STATIC_BROKER, DEFAULT = 1, 2, 3, 4, 5
DYNAMIC_BROKER_LOGGER = 6
STRING_TYPE = 2  # DescribeConfigsResponse ConfigType
# IncrementalAlterConfigs operations (AlterConfigOp.OpType)
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
# Broker properties that also set a topic config's default, most specific
# first (Kafka folds log.retention.hours/minutes into retention.ms, etc.)
EXTRA_SYNONYMS = {
    "retention.ms": ["log.retention.minutes", "log.retention.hours"],
    "segment.ms": ["log.roll.hours"],
    "segment.jitter.ms": ["log.roll.jitter.hours"],
    "flush.ms": ["log.flush.scheduler.interval.ms"],
}


def broker_synonyms(name: str) -> list[str]:
    """Broker properties that set topic config `name`'s default, most specific first."""
    d = TOPIC_CONFIGS.defs[name]
    return ([d.synonym] if d.synonym else []) + EXTRA_SYNONYMS.get(name, [])


def broker_synonym_entries(cfg, names: list[str], dyn=None) -> list[dict]:
    """The broker-level synonyms of a topic config as Kafka lists them: dynamic per-broker and
    cluster-default values, server.properties values, then defaults that have a value, starting
    at the first entry for the primary synonym (names[0]); so retention.ms shows no default
    while only log.retention.hours has one."""
    if dyn is not None:
        cfg = dyn.static
    found = [s for n in names for s in _dynamic_synonyms(dyn, n)]
    found += [{"name": n, "value": BROKER_CONFIGS[n].render(cfg[n]), "source": STATIC_BROKER}
              for n in names if n in cfg.overridden and n in BROKER_CONFIGS]
    found += [{"name": n, "value": BROKER_CONFIGS[n].render(BROKER_CONFIGS[n].default), "source": DEFAULT}
              for n in names if n in BROKER_CONFIGS and BROKER_CONFIGS[n].default is not None]
    first = next((i for i, s in enumerate(found) if names and s["name"] == names[0]), len(found))
    return found[first:]


def default_source(config, name: str, dyn=None) -> int:
    """A topic config's source when the topic does not set it: its first synonym's, as in Kafka
    (so log.retention.hours=24 in server.properties still reads DEFAULT_CONFIG for retention.ms)."""
    entries = broker_synonym_entries(config, broker_synonyms(name), dyn)
    return entries[0]["source"] if entries else DEFAULT


class _Refused(Exception):
    """An alteration that is invalid as a whole (INVALID_CONFIG)."""


# ---- DescribeConfigs -------------------------------------------------------

def _entry(name, value, source, synonyms, d, include_docs, read_only=False) -> dict:
    return {"name": name, "value": None if d.sensitive else value, "read_only": read_only,
            "is_default": source == DEFAULT, "config_source": source, "is_sensitive": d.sensitive,
            "synonyms": synonyms, "config_type": CONFIG_TYPE_IDS.get(d.type, 0),
            "documentation": d.doc if include_docs else None}


def _topic_configs(broker: AdminView, info, keys, synonyms_on, docs) -> list:
    cfg = broker.config
    defaults = topic_defaults_from_broker(cfg)
    out = []
    for name, d in TOPIC_CONFIGS.defs.items():
        if keys is not None and name not in keys:
            continue
        syn = []
        if name in info.overrides:
            value, source = info.overrides[name], DYNAMIC_TOPIC
            syn.append({"name": name, "value": value, "source": DYNAMIC_TOPIC})
        else:
            value = d.render(defaults[name])
            source = default_source(cfg, name, broker.dynamic_configs)
        syn += broker_synonym_entries(cfg, broker_synonyms(name), broker.dynamic_configs)
        out.append(_entry(name, value, source, syn if synonyms_on else [], d, docs))
    return out


def _dynamic_synonyms(dyn, name: str, per_broker: bool = True) -> list[dict]:
    out = []
    if dyn is not None:
        if per_broker and name in dyn.per_broker:
            out.append({"name": name, "value": dyn.per_broker[name], "source": DYNAMIC_BROKER})
        if name in dyn.default:
            out.append({"name": name, "value": dyn.default[name], "source": DYNAMIC_DEFAULT_BROKER})
    return out


def _UNTYPED(name):
    """A dynamic config Kafka has and pylog's config table does not (replication throttles)."""
    from pylog.core.config import ConfigDef, LONG

    return ConfigDef(name, LONG, None, "", None, None, False)


# a broker config's lower-priority broker synonyms, as Kafka lists them
BROKER_SYNONYMS = {
    "log.retention.ms": ["log.retention.minutes", "log.retention.hours"],
    "log.roll.ms": ["log.roll.hours"],
    "log.roll.jitter.ms": ["log.roll.jitter.hours"],
    "log.flush.interval.ms": ["log.flush.scheduler.interval.ms"],
}


def _broker_configs(broker: AdminView, keys, synonyms_on, docs, cluster_default: bool = False) -> list:
    """Every broker config with its effective value and source; for the cluster default (the
    resource named ""), its dynamic values only, as Kafka answers."""
    cfg = broker.config
    st = broker.settings
    dyn = broker.dynamic_configs
    static = dyn.static if dyn is not None else cfg
    # what the broker actually runs with, where the command line decided it
    effective = {
        "node.id": str(broker.node_id), "broker.id": str(broker.node_id), "cluster.id": broker.cluster_id,
        "log.dirs": ",".join(st.log_dirs),
        "listeners": ",".join(f"{ls.name}://{ls.host}:{ls.port}" for ls in st.listeners),
        "advertised.listeners": ",".join(f"{ls.name}://{ls.advertised_host}:{ls.advertised_port}"
                                         for ls in st.listeners),
    }
    out = []
    extra = {n: _UNTYPED(n) for n in ((dyn.per_broker.keys() | dyn.default.keys()) if dyn is not None else ())
             if n not in BROKER_CONFIGS}
    defs = dict(BROKER_CONFIGS.defs, **extra)

    def entries(name, d):
        """(value, source, synonym entries) of one broker config, most specific first."""
        dynamic = _dynamic_synonyms(dyn, name, per_broker=not cluster_default)
        static_source = STATIC_BROKER if name in static.overridden or name in effective else DEFAULT
        static_value = effective[name] if name in effective else (
            d.render(static.get(name)) if name in static else None)
        syn = list(dynamic)
        if static_value is not None:
            syn.append({"name": name, "value": static_value, "source": static_source})
        if static_source == STATIC_BROKER and name in static.overridden and d.default is not None:
            syn.append({"name": name, "value": d.render(d.default), "source": DEFAULT})
        value, source = (dynamic[0]["value"], dynamic[0]["source"]) if dynamic else (static_value, static_source)
        return value, source, syn

    for name, d in defs.items():
        if keys is not None and name not in keys:
            continue
        if cluster_default:
            # Kafka lists the cluster default's dynamic values only, each with itself as synonym
            if dyn is None or name not in dyn.default:
                continue
            syn = _dynamic_synonyms(dyn, name, per_broker=False)
            out.append(_entry(name, dyn.default[name], DYNAMIC_DEFAULT_BROKER, syn if synonyms_on else [], d, docs,
                              read_only=False))
            continue
        value, source, syn = entries(name, d)
        for other in BROKER_SYNONYMS.get(name, ()):
            syn += entries(other, defs[other])[2]
        out.append(_entry(name, value, source, syn if synonyms_on else [], d, docs,
                          read_only=is_read_only(name)))
    return out


def describe_configs(broker: AdminView, ctx: RequestContext, body: dict) -> dict:
    """Topic, broker and broker-logger configs with their sources (and synonyms, docs on request)."""
    synonyms_on = body["include_synonyms"]
    docs = body["include_documentation"]
    results = []
    for r in body["resources"]:
        rtype, rname = r["resource_type"], r["resource_name"]
        keys = r["configuration_keys"]
        keys = set(keys) if keys is not None else None
        res = {"error_code": ErrorCode.NONE, "error_message": None, "resource_type": rtype, "resource_name": rname,
               "configs": []}
        results.append(res)
        if rtype == TOPIC:
            info = broker.logs.topics.get(rname)
            if info is None:
                res["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                res["error_message"] = f"topic {rname!r} does not exist"
                continue
            res["configs"] = _topic_configs(broker, info, keys, synonyms_on, docs)
        elif rtype == BROKER:
            if rname not in ("", str(broker.node_id)):
                res["error_code"] = ErrorCode.INVALID_REQUEST
                res["error_message"] = f"unknown broker {rname!r}; this is broker {broker.node_id}"
                continue
            res["configs"] = _broker_configs(broker, keys, synonyms_on, docs, cluster_default=rname == "")
        elif rtype == GROUP and (store := broker.group_coordinator.group_config_store()) is not None:
            res["configs"] = group_configs.describe_entries(store, rname, keys)
        elif rtype == BROKER_LOGGER:
            level = logging.getLevelName(logging.getLogger("pylog").getEffectiveLevel())
            res["configs"] = [{"name": "pylog", "value": level, "read_only": True, "is_default": False,
                               "config_source": DYNAMIC_BROKER_LOGGER, "is_sensitive": False, "synonyms": [],
                               "config_type": STRING_TYPE, "documentation": None}]
        else:
            res["error_code"], res["error_message"] = ErrorCode.INVALID_REQUEST, f"unsupported resource type {rtype}"
    return {"throttle_time_ms": 0, "results": results}


def describe_configs_error(body, version, code, msg):
    """Every requested resource with `code`."""
    return {"throttle_time_ms": 0, "results": [
        {"error_code": code, "error_message": msg, "resource_type": r["resource_type"],
         "resource_name": r["resource_name"], "configs": []} for r in body["resources"]]}


# ---- AlterConfigs, IncrementalAlterConfigs ---------------------------------

def _apply_broker(broker: AdminView, rname: str, new_values: Callable[[dict], dict],
                  validate_only: bool) -> tuple[int, str | None]:
    """A dynamic broker config change, per broker (rname = this node's id) or the cluster default ("")."""
    dyn = broker.dynamic_configs
    if rname not in ("", str(broker.node_id)):
        return ErrorCode.INVALID_REQUEST, f"unknown broker {rname!r}; this is broker {broker.node_id}"
    try:
        new = new_values(dict(dyn.scope(rname == "")))
        dyn.replace(rname == "", new, validate_only)
    except _Refused as e:
        return ErrorCode.INVALID_CONFIG, str(e)
    except DynamicConfigError as e:
        return (ErrorCode.INVALID_CONFIG if e.invalid_config else ErrorCode.INVALID_REQUEST), str(e)
    except OSError as e:
        return ErrorCode.KAFKA_STORAGE_ERROR, f"cannot persist the broker configs: {e}"
    return ErrorCode.NONE, None


def _apply(broker: AdminView, rtype: int, rname: str, new_overrides: Callable[[dict], dict],
           validate_only: bool) -> tuple[int, str | None]:
    """Shared by both alter APIs: compute, validate, persist. Returns (code, message)."""
    if rtype == BROKER:
        return _apply_broker(broker, rname, new_overrides, validate_only)
    if rtype != TOPIC:
        return ErrorCode.INVALID_REQUEST, f"unsupported resource type {rtype}"
    info = broker.logs.topics.get(rname)
    if info is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {rname!r} does not exist"
    try:
        new = new_overrides(dict(info.overrides))
        TOPIC_CONFIGS.parse(dict(new))
    except _Refused as e:
        return ErrorCode.INVALID_CONFIG, str(e)
    except Exception as e:  # noqa: BLE001 - ConfigError
        code, msg = code_of(e)
        return (ErrorCode.INVALID_CONFIG if code == ErrorCode.UNKNOWN_SERVER_ERROR else code), msg
    if validate_only:
        return ErrorCode.NONE, None
    change: dict[str, str | None] = {k: None for k in info.overrides if k not in new}
    change.update({k: v for k, v in new.items() if info.overrides.get(k) != v})
    if change:
        try:
            broker.logs.alter_topic_config(rname, change)
        except Exception as e:  # noqa: BLE001
            return code_of(e)
    return ErrorCode.NONE, None


def _alter_result(r: dict, code: int, msg: str | None) -> dict:
    return {"error_code": code, "error_message": msg, "resource_type": r["resource_type"],
            "resource_name": r["resource_name"]}


def alter_configs(broker: AdminView, ctx: RequestContext, body: dict) -> dict:
    """Replace each topic's overrides with the given set (AlterConfigs' all-or-nothing form)."""
    out = []
    for r in body["resources"]:
        wanted = {c["name"]: c["value"] for c in r["configs"]}  # the last value given for a name counts
        code, msg = _apply(broker, r["resource_type"], r["resource_name"],
                           lambda _old, w=wanted: {k: v for k, v in w.items() if v is not None},
                           body["validate_only"])
        out.append(_alter_result(r, code, msg))
    return {"throttle_time_ms": 0, "responses": out}


def _incremental_change(old: dict, ops: list, defaults: dict, defs=TOPIC_CONFIGS.defs) -> dict:
    """Apply IncrementalAlterConfigs operations (SET, DELETE, APPEND, SUBTRACT) to overrides."""
    new = dict(old)
    for op in ops:
        name, kind, value = op["name"], op["config_operation"], op["value"]
        d = defs.get(name)
        if d is None and defs is not TOPIC_CONFIGS.defs and kind in (SET, DELETE):
            d = _UNTYPED(name)  # a broker config pylog's table lacks: dynamic_config decides
        if d is None:
            raise _Refused(f"unknown topic config {name!r}")
        if kind == SET:
            if value is None:
                raise _Refused(f"SET of {name} needs a value")
            new[name] = value
        elif kind == DELETE:
            new.pop(name, None)
        elif kind in (APPEND, SUBTRACT):
            if d.type != LIST:
                raise _Refused(f"{name} is not a list config; APPEND/SUBTRACT need a list")
            current = (d.parse(new[name]) if name in new else list(defaults[name] or []))
            items = [x.strip() for x in (value or "").split(",") if x.strip()]
            if kind == APPEND:
                current += [x for x in items if x not in current]
            else:
                current = [x for x in current if x not in items]
            new[name] = ",".join(current)
        else:
            raise _Refused(f"unknown config operation {kind}")
    return new


def incremental_alter_configs(broker: AdminView, ctx: RequestContext, body: dict) -> dict:
    """Change single topic configs: set, delete, append to or subtract from list values."""
    out = []
    defaults = topic_defaults_from_broker(broker.config)
    for r in body["resources"]:
        if r["resource_type"] == GROUP and (store := broker.group_coordinator.group_config_store()) is not None:
            code, msg = group_configs.incremental_alter(store, r["resource_name"], r["configs"], body["validate_only"])
            out.append(_alter_result(r, code, msg))
            continue
        if r["resource_type"] == BROKER:
            dyn = broker.dynamic_configs
            effective = {k: broker.config.get(k) for k in BROKER_CONFIGS.defs}

            def change(old, ops=r["configs"], effective=effective, dyn=dyn):
                return _incremental_change(old, ops, effective, BROKER_CONFIGS.defs)
        else:
            def change(old, ops=r["configs"]):
                return _incremental_change(old, ops, defaults)
        code, msg = _apply(broker, r["resource_type"], r["resource_name"], change, body["validate_only"])
        out.append(_alter_result(r, code, msg))
    return {"throttle_time_ms": 0, "responses": out}


def alter_configs_error(body, version, code, msg):
    """Every resource with `code` (both alter APIs)."""
    return {"throttle_time_ms": 0, "responses": [_alter_result(r, code, msg) for r in body["resources"]]}


incremental_alter_configs_error = alter_configs_error  # the same answer shape
