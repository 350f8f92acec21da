"""DescribeConfigs, AlterConfigs, IncrementalAlterConfigs.

Topic configs are the storage engine's per-topic overrides over broker
defaults. Broker configs are static (read from server.properties and --set at
start); altering them is refused with INVALID_REQUEST.
"""
from __future__ import annotations

import logging

from pylog.commands.broker.apis import Api, code_of
from pylog.core.config import BROKER_CONFIGS, CONFIG_TYPE_IDS, LIST, TOPIC_CONFIGS, topic_defaults_from_broker

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
# config sources (DescribeConfigsResponse ConfigSource)
DYNAMIC_TOPIC, STATIC_BROKER, DEFAULT = 1, 4, 5
DYNAMIC_BROKER_LOGGER = 6
INVALID_REQUEST, INVALID_CONFIG, UNKNOWN_TOPIC = 42, 40, 3
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
# Broker properties that also set a topic config's default, most specific
# first (Kafka folds log.retention.hours/minutes into retention.ms, etc.)
EXTRA_SYNONYMS = {
    "retention.ms": ["log.retention.minutes", "log.retention.hours"],
    "segment.ms": ["log.roll.hours"],
}


def broker_synonyms(name: str) -> list[str]:
    d = TOPIC_CONFIGS.defs[name]
    return ([d.synonym] if d.synonym else []) + EXTRA_SYNONYMS.get(name, [])


def default_source(config, name: str) -> int:
    """STATIC_BROKER_CONFIG when server.properties/--set decided a topic config's default."""
    return STATIC_BROKER if any(s in config.overridden for s in broker_synonyms(name)) else DEFAULT


def apis(broker) -> list[Api]:
    def entry(name, value, source, synonyms, d, include_docs, read_only=False):
        return {"name": name, "value": None if d.sensitive else value, "read_only": read_only,
                "is_default": source == DEFAULT, "config_source": source, "is_sensitive": d.sensitive,
                "synonyms": synonyms, "config_type": CONFIG_TYPE_IDS.get(d.type, 0),
                "documentation": d.doc if include_docs else None}

    def topic_configs(info, keys, synonyms_on, docs):
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
                source = default_source(cfg, name)
            names = broker_synonyms(name)
            for sname in names:
                if sname in cfg.overridden and sname in BROKER_CONFIGS:
                    syn.append({"name": sname, "value": BROKER_CONFIGS[sname].render(cfg[sname]),
                                "source": STATIC_BROKER})
            if names:
                last = names[-1]
                syn.append({"name": last, "value": BROKER_CONFIGS[last].render(BROKER_CONFIGS[last].default),
                            "source": DEFAULT})
            out.append(entry(name, value, source, syn if synonyms_on else [], d, docs))
        return out

    def broker_configs(keys, synonyms_on, docs):
        cfg = broker.config
        st = broker.settings
        # what the broker actually runs with, where the command line decided it
        effective = {
            "node.id": str(broker.node_id), "broker.id": str(broker.node_id), "cluster.id": broker.cluster_id,
            "log.dirs": ",".join(st.log_dirs),
            "listeners": f"PLAINTEXT://{st.host}:{broker.server.port if broker.server else st.port}",
            "advertised.listeners": f"PLAINTEXT://{st.advertised_host}:{st.advertised_port}",
        }
        out = []
        for name, d in BROKER_CONFIGS.defs.items():
            if keys is not None and name not in keys:
                continue
            source = STATIC_BROKER if name in cfg.overridden or name in effective else DEFAULT
            value = effective[name] if name in effective else d.render(cfg.get(name))
            syn = [{"name": name, "value": value, "source": source}] if synonyms_on else []
            out.append(entry(name, value, source, syn, d, docs, read_only=True))
        return out

    def describe_configs(ctx, body):
        synonyms_on = body.get("include_synonyms", False)
        docs = body.get("include_documentation", False)
        results = []
        for r in body.get("resources") or []:
            rtype, rname = r.get("resource_type"), r.get("resource_name")
            keys = r.get("configuration_keys")
            keys = set(keys) if keys is not None else None
            res = {"error_code": 0, "error_message": None, "resource_type": rtype, "resource_name": rname,
                   "configs": []}
            results.append(res)
            if rtype == TOPIC:
                info = broker.logs.topics.get(rname)
                if info is None:
                    res["error_code"], res["error_message"] = UNKNOWN_TOPIC, f"topic {rname!r} does not exist"
                    continue
                res["configs"] = topic_configs(info, keys, synonyms_on, docs)
            elif rtype == BROKER:
                if rname not in ("", str(broker.node_id)):
                    res["error_code"] = INVALID_REQUEST
                    res["error_message"] = f"unknown broker {rname!r}; this is broker {broker.node_id}"
                    continue
                res["configs"] = broker_configs(keys, synonyms_on, docs)
            elif rtype == BROKER_LOGGER:
                level = logging.getLevelName(logging.getLogger("pylog").getEffectiveLevel())
                res["configs"] = [{"name": "pylog", "value": level, "read_only": True, "is_default": False,
                                   "config_source": DYNAMIC_BROKER_LOGGER, "is_sensitive": False, "synonyms": [],
                                   "config_type": 2, "documentation": None}]
            else:
                res["error_code"], res["error_message"] = INVALID_REQUEST, f"unsupported resource type {rtype}"
        return {"throttle_time_ms": 0, "results": results}

    def describe_configs_error(body, version, code, msg):
        return {"throttle_time_ms": 0, "results": [
            {"error_code": code, "error_message": msg, "resource_type": r.get("resource_type"),
             "resource_name": r.get("resource_name"), "configs": []} for r in body.get("resources") or []]}

    def apply(rtype, rname, new_overrides_fn, validate_only):
        """Shared by both alter APIs: compute, validate, persist. Returns (code, message)."""
        if rtype == BROKER:
            return INVALID_REQUEST, "broker configs are static in pylog; set them in server.properties or --set"
        if rtype != TOPIC:
            return INVALID_REQUEST, f"unsupported resource type {rtype}"
        info = broker.logs.topics.get(rname)
        if info is None:
            return UNKNOWN_TOPIC, f"topic {rname!r} does not exist"
        try:
            new = new_overrides_fn(dict(info.overrides))
            TOPIC_CONFIGS.parse({k: v for k, v in new.items()})
        except _Refused as e:
            return INVALID_CONFIG, str(e)
        except Exception as e:  # noqa: BLE001 - ConfigError
            code, msg = code_of(e)
            return (INVALID_CONFIG if code == -1 else code), msg
        if validate_only:
            return 0, None
        change: dict[str, str | None] = {k: None for k in info.overrides if k not in new}
        change.update({k: v for k, v in new.items() if info.overrides.get(k) != v})
        if change:
            try:
                broker.logs.alter_topic_config(rname, change)
            except Exception as e:  # noqa: BLE001
                return code_of(e)
        return 0, None

    def alter_configs(ctx, body):
        out = []
        for r in body.get("resources") or []:
            rtype, rname = r.get("resource_type"), r.get("resource_name")
            wanted = {c["name"]: c.get("value") for c in r.get("configs") or []}

            def replace(_old, wanted=wanted):
                return {k: v for k, v in wanted.items() if v is not None}

            code, msg = apply(rtype, rname, replace, body.get("validate_only", False))
            out.append({"error_code": code, "error_message": msg, "resource_type": rtype, "resource_name": rname})
        return {"throttle_time_ms": 0, "responses": out}

    def incremental_alter_configs(ctx, body):
        out = []
        defaults = topic_defaults_from_broker(broker.config)
        for r in body.get("resources") or []:
            rtype, rname = r.get("resource_type"), r.get("resource_name")
            ops = r.get("configs") or []

            def change(old, ops=ops):
                new = dict(old)
                for op in ops:
                    name, kind, value = op.get("name"), op.get("config_operation"), op.get("value")
                    d = TOPIC_CONFIGS.defs.get(name)
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

            code, msg = apply(rtype, rname, change, body.get("validate_only", False))
            out.append({"error_code": code, "error_message": msg, "resource_type": rtype, "resource_name": rname})
        return {"throttle_time_ms": 0, "responses": out}

    def alter_error(body, version, code, msg):
        return {"throttle_time_ms": 0, "responses": [
            {"error_code": code, "error_message": msg, "resource_type": r.get("resource_type"),
             "resource_name": r.get("resource_name")} for r in body.get("resources") or []]}

    return [
        Api(32, describe_configs, 1, 4, describe_configs_error),
        Api(33, alter_configs, 0, 2, alter_error),
        Api(44, incremental_alter_configs, 0, 1, alter_error),
    ]


class _Refused(Exception):
    """An alteration that is invalid as a whole (INVALID_CONFIG)."""
