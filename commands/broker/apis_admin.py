"""Topic administration: CreateTopics, DeleteTopics, CreatePartitions,
DeleteRecords, DescribeLogDirs."""
from __future__ import annotations

import os
import uuid
from pathlib import Path

from pylog.commands.broker.apis import Api, code_of
from pylog.commands.broker.apis_meta import _invalid_name_code
from pylog.core.config import TOPIC_CONFIGS

ZERO_UUID = uuid.UUID(int=0)
INVALID_REQUEST = 42
INVALID_REPLICATION_FACTOR = 38
INVALID_REPLICA_ASSIGNMENT = 39
INVALID_PARTITIONS = 37
TOPIC_ALREADY_EXISTS = 36
UNKNOWN_TOPIC = 3
# One request must not be able to make the broker create millions of
# directories (a typo or a corrupted count would take the node down).
MAX_PARTITIONS_PER_TOPIC = 10000


def apis(broker) -> list[Api]:
    node = broker.node_id

    def check_assignment(assignments) -> tuple[int, str | None]:
        for a in assignments or []:
            ids = a.get("broker_ids") or []
            if list(ids) != [node]:
                return INVALID_REPLICA_ASSIGNMENT, f"replicas {list(ids)} are not [{node}] (single-node broker)"
        return 0, None

    # ---- CreateTopics ---------------------------------------------------
    def create_topics(ctx, body):
        validate_only = body.get("validate_only", False)
        topics = body.get("topics") or []
        names = [t.get("name") for t in topics]
        dupes = {n for n in names if names.count(n) > 1}
        out = []
        for t in topics:
            name = t.get("name")
            res = {"name": name, "topic_id": ZERO_UUID, "error_code": 0, "error_message": None,
                   "num_partitions": -1, "replication_factor": -1, "configs": None}
            out.append(res)

            def fail(code, msg):
                res["error_code"], res["error_message"] = code, msg

            if name in dupes:
                fail(INVALID_REQUEST, f"topic {name!r} appears more than once in the request")
                continue
            code = _invalid_name_code(name or "")
            if code:
                fail(code, f"topic name {name!r} is illegal: use [a-zA-Z0-9._-], at most 249 characters, not . or ..")
                continue
            if name in broker.logs.topics:
                fail(TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
                continue
            assignments = t.get("assignments") or []
            n = t.get("num_partitions", -1)
            rf = t.get("replication_factor", -1)
            if assignments:
                if n != -1 or rf != -1:
                    fail(INVALID_REQUEST, "both assignments and num_partitions/replication_factor were given")
                    continue
                code, msg = check_assignment(assignments)
                if code:
                    fail(code, msg)
                    continue
                if sorted(a.get("partition_index") for a in assignments) != list(range(len(assignments))):
                    fail(INVALID_REPLICA_ASSIGNMENT, "partition indexes must be 0..n-1")
                    continue
                n = len(assignments)
            if n == -1:
                n = broker.config["num.partitions"]
            if rf == -1:
                rf = broker.config["default.replication.factor"]
            if n <= 0 or n > MAX_PARTITIONS_PER_TOPIC:
                fail(INVALID_PARTITIONS, f"number of partitions must be 1..{MAX_PARTITIONS_PER_TOPIC}, got {n}")
                continue
            if rf != 1:
                fail(INVALID_REPLICATION_FACTOR,
                     f"replication factor {rf} is larger than the number of brokers (1)" if rf > 1
                     else f"replication factor must be at least 1, got {rf}")
                continue
            configs = {}
            bad = None
            for c in t.get("configs") or []:
                if c.get("value") is None:
                    continue
                configs[c["name"]] = c["value"]
            try:
                TOPIC_CONFIGS.parse(configs)
            except Exception as e:  # noqa: BLE001 - ConfigError: unknown key or bad value
                bad = str(e)
            if bad:
                fail(40, bad)
                continue
            if validate_only:
                res.update(num_partitions=n, replication_factor=1, configs=_created_configs(broker, configs))
                continue
            try:
                info = broker.logs.create_topic(name, n, configs or None)
            except Exception as e:  # noqa: BLE001 - reported per topic
                fail(*code_of(e))
                continue
            res.update(topic_id=info.topic_id, num_partitions=info.num_partitions, replication_factor=1,
                       configs=_created_configs(broker, info.overrides))
        return {"throttle_time_ms": 0, "topics": out}

    def create_topics_error(body, version, code, msg):
        return {"throttle_time_ms": 0, "topics": [
            {"name": t.get("name"), "topic_id": ZERO_UUID, "error_code": code, "error_message": msg,
             "num_partitions": -1, "replication_factor": -1, "configs": None} for t in body.get("topics") or []]}

    # ---- DeleteTopics ---------------------------------------------------
    def delete_topics(ctx, body):
        wanted: list[tuple[str | None, uuid.UUID]] = []
        for name in body.get("topic_names") or []:
            wanted.append((name, ZERO_UUID))
        for t in body.get("topics") or []:
            wanted.append((t.get("name"), t.get("topic_id") or ZERO_UUID))
        out = []
        for name, tid in wanted:
            res = {"name": name, "topic_id": tid, "error_code": 0, "error_message": None}
            out.append(res)
            if name is None:
                info = broker.topic_by_id(tid) if tid != ZERO_UUID else None
                if info is None:
                    res["error_code"] = 100 if tid != ZERO_UUID else INVALID_REQUEST
                    res["error_message"] = "unknown topic id" if tid != ZERO_UUID else "no topic name or id"
                    continue
                name = res["name"] = info.name
            info = broker.logs.topics.get(name)
            if info is None:
                res["error_code"], res["error_message"] = UNKNOWN_TOPIC, f"topic {name!r} does not exist"
                continue
            res["topic_id"] = info.topic_id
            if not broker.config["delete.topic.enable"]:
                res["error_code"], res["error_message"] = 73, "delete.topic.enable is false"
                continue
            try:
                broker.logs.delete_topic(name)
            except Exception as e:  # noqa: BLE001
                res["error_code"], res["error_message"] = code_of(e)
                continue
            broker.wake_topic(name)
        return {"throttle_time_ms": 0, "responses": out}

    def delete_topics_error(body, version, code, msg):
        names = [(n, ZERO_UUID) for n in body.get("topic_names") or []]
        names += [(t.get("name"), t.get("topic_id") or ZERO_UUID) for t in body.get("topics") or []]
        return {"throttle_time_ms": 0, "responses": [
            {"name": n, "topic_id": i, "error_code": code, "error_message": msg} for n, i in names]}

    # ---- CreatePartitions -------------------------------------------------
    def create_partitions(ctx, body):
        validate_only = body.get("validate_only", False)
        out = []
        for t in body.get("topics") or []:
            name = t.get("name")
            res = {"name": name, "error_code": 0, "error_message": None}
            out.append(res)
            info = broker.logs.topics.get(name)
            if info is None:
                res["error_code"], res["error_message"] = UNKNOWN_TOPIC, f"topic {name!r} does not exist"
                continue
            count = t.get("count", 0)
            if count > MAX_PARTITIONS_PER_TOPIC:
                res["error_code"] = INVALID_PARTITIONS
                res["error_message"] = f"at most {MAX_PARTITIONS_PER_TOPIC} partitions per topic"
                continue
            if count <= info.num_partitions:
                res["error_code"] = INVALID_PARTITIONS
                res["error_message"] = (f"topic {name!r} has {info.num_partitions} partitions; "
                                        f"the new count {count} must be larger")
                continue
            assignments = t.get("assignments")
            if assignments is not None:
                if len(assignments) != count - info.num_partitions:
                    res["error_code"] = INVALID_REPLICA_ASSIGNMENT
                    res["error_message"] = "one assignment is needed per new partition"
                    continue
                code, msg = check_assignment(assignments)
                if code:
                    res["error_code"], res["error_message"] = code, msg
                    continue
            if validate_only:
                continue
            try:
                broker.logs.create_partitions(name, count)
            except Exception as e:  # noqa: BLE001
                res["error_code"], res["error_message"] = code_of(e)
        return {"throttle_time_ms": 0, "results": out}

    def create_partitions_error(body, version, code, msg):
        return {"throttle_time_ms": 0, "results": [
            {"name": t.get("name"), "error_code": code, "error_message": msg} for t in body.get("topics") or []]}

    # ---- DeleteRecords ----------------------------------------------------
    def delete_records(ctx, body):
        out = []
        for t in body.get("topics") or []:
            name = t.get("name")
            parts = []
            for p in t.get("partitions") or []:
                idx = p.get("partition_index", 0)
                entry = {"partition_index": idx, "low_watermark": -1, "error_code": 0}
                parts.append(entry)
                plog = broker.logs.get_log(name, idx)
                if plog is None:
                    entry["error_code"] = UNKNOWN_TOPIC
                    continue
                try:
                    entry["low_watermark"] = plog.delete_records(p.get("offset", -1))
                except Exception as e:  # noqa: BLE001
                    entry["error_code"], _ = code_of(e)
            out.append({"name": name, "partitions": parts})
        return {"throttle_time_ms": 0, "topics": out}

    def delete_records_error(body, version, code, msg):
        return {"throttle_time_ms": 0, "topics": [{"name": t.get("name"), "partitions": [
            {"partition_index": p.get("partition_index", 0), "low_watermark": -1, "error_code": code}
            for p in t.get("partitions") or []]} for t in body.get("topics") or []]}

    # ---- DescribeLogDirs --------------------------------------------------
    def describe_log_dirs(ctx, body):
        wanted = body.get("topics")
        filt = None
        if wanted is not None:
            filt = {(t.get("topic"), p) for t in wanted for p in t.get("partitions") or []}
        by_dir: dict[str, dict[str, list]] = {str(Path(d).resolve()): {} for d in broker.settings.log_dirs}
        for plog in broker.logs.all_logs():
            if filt is not None and (plog.topic, plog.partition) not in filt:
                continue
            d = str(Path(plog.dir).parent.resolve())
            by_dir.setdefault(d, {}).setdefault(plog.topic, []).append(
                {"partition_index": plog.partition, "partition_size": plog.size_bytes, "offset_lag": 0,
                 "is_future_key": False})
        results = []
        for d, topics in by_dir.items():
            try:
                st = os.statvfs(d)
                total, usable = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
            except OSError:
                total = usable = -1
            results.append({"error_code": 0, "log_dir": d, "total_bytes": total, "usable_bytes": usable,
                            "topics": [{"name": n, "partitions": sorted(ps, key=lambda x: x["partition_index"])}
                                       for n, ps in sorted(topics.items())]})
        return {"throttle_time_ms": 0, "error_code": 0, "results": results}

    def describe_log_dirs_error(body, version, code, msg):
        return {"throttle_time_ms": 0, "error_code": code, "results": []}

    return [
        Api(19, create_topics, 2, 7, create_topics_error),
        Api(20, delete_topics, 1, 6, delete_topics_error),
        Api(37, create_partitions, 0, 3, create_partitions_error),
        Api(21, delete_records, 0, 2, delete_records_error),
        Api(35, describe_log_dirs, 1, 4, describe_log_dirs_error),
    ]


def _created_configs(broker, overrides: dict[str, str]) -> list[dict]:
    """CreateTopics v5+: the new topic's full config with each value's source."""
    from pylog.commands.broker.apis_configs import default_source
    from pylog.core.config import topic_defaults_from_broker

    defaults = topic_defaults_from_broker(broker.config)
    out = []
    for name, d in TOPIC_CONFIGS.defs.items():
        if name in overrides:
            value, source = overrides[name], 1  # DYNAMIC_TOPIC_CONFIG
        else:
            value = d.render(defaults[name])
            source = default_source(broker.config, name)
        out.append({"name": name, "value": value, "read_only": False, "config_source": source,
                    "is_sensitive": d.sensitive})
    return out

