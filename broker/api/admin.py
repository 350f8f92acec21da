"""Topic administration: CreateTopics, DeleteTopics, CreatePartitions,
DeleteRecords, DescribeLogDirs."""
from __future__ import annotations

import os
import uuid
from pathlib import Path

from pylog.broker.api.configs import DYNAMIC_TOPIC, default_source
from pylog.broker.api.meta import MAX_TOPIC_NAME, invalid_name_code
from pylog.broker.api.quotas import mutation_answer, mutation_quota, record_mutations
from pylog.broker.api.context import RequestContext, code_of, mirror_partitions
from pylog.broker.api.views import AdminView
from pylog.core.config import TOPIC_CONFIGS, topic_defaults_from_broker
from pylog.core.errors import ErrorCode
from pylog.core.protocol import ZERO_UUID


# One request must not be able to make the broker create millions of
# directories (a typo or a corrupted count would take the node down).
MAX_PARTITIONS_PER_TOPIC = 10000
# controller_mutation_rate refuses topics (THROTTLING_QUOTA_EXCEEDED) from these versions on (KIP-599)
STRICT_CREATE_TOPICS, STRICT_DELETE_TOPICS, STRICT_CREATE_PARTITIONS = 6, 5, 3
THROTTLED = "The throttling quota has been exceeded."


def _check_assignment(node: int, assignments) -> tuple[int, str | None]:
    for a in assignments:
        ids = list(a["broker_ids"])
        if ids != [node]:
            return ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"replicas {ids} are not [{node}] (single-node broker)"
    return ErrorCode.NONE, None


# ---- CreateTopics ----------------------------------------------------------

def create_topics(broker: AdminView, ctx: RequestContext, body: dict) -> dict:
    """Create each topic (or only validate it) with its partitions and config overrides."""
    validate_only = body["validate_only"]
    topics = body["topics"]
    names = [t["name"] for t in topics]
    dupes = {n for n in names if names.count(n) > 1}
    quota = mutation_quota(broker, ctx, STRICT_CREATE_TOPICS)
    out = []
    for t in topics:
        name = t["name"]
        res = {"name": name, "topic_id": ZERO_UUID, "error_code": ErrorCode.NONE, "error_message": None,
               "num_partitions": -1, "replication_factor": -1, "configs": None}
        out.append(res)

        def fail(code, msg):
            res["error_code"], res["error_message"] = code, msg

        if name in dupes:
            fail(ErrorCode.INVALID_REQUEST, f"topic {name!r} appears more than once in the request")
            continue
        code = invalid_name_code(name or "")
        if code:
            fail(code, f"topic name {name!r} is illegal: use [a-zA-Z0-9._-], at most {MAX_TOPIC_NAME} characters, "
                       "not . or ..")
            continue
        if name in broker.logs.topics:
            fail(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
            continue
        assignments = t["assignments"]
        n = t["num_partitions"]
        rf = t["replication_factor"]
        if assignments:
            if n != -1 or rf != -1:
                fail(ErrorCode.INVALID_REQUEST, "both assignments and num_partitions/replication_factor were given")
                continue
            code, msg = _check_assignment(broker.node_id, assignments)
            if code:
                fail(code, msg)
                continue
            if sorted(a["partition_index"] for a in assignments) != list(range(len(assignments))):
                fail(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "partition indexes must be 0..n-1")
                continue
            n = len(assignments)
        if n == -1:
            n = broker.config["num.partitions"]
        if rf == -1:
            rf = broker.config["default.replication.factor"]
        if n <= 0 or n > MAX_PARTITIONS_PER_TOPIC:
            fail(ErrorCode.INVALID_PARTITIONS, f"number of partitions must be 1..{MAX_PARTITIONS_PER_TOPIC}, got {n}")
            continue
        if rf != 1:
            fail(ErrorCode.INVALID_REPLICATION_FACTOR,
                 f"replication factor {rf} is larger than the number of brokers (1)" if rf > 1
                 else f"replication factor must be at least 1, got {rf}")
            continue
        configs = {c["name"]: c["value"] for c in t["configs"] if c["value"] is not None}
        try:
            TOPIC_CONFIGS.parse(configs)
        except Exception as e:  # noqa: BLE001 - ConfigError: unknown key or bad value
            fail(ErrorCode.INVALID_CONFIG, str(e))
            continue
        if not record_mutations(quota, n):  # validate_only counts too, as in Kafka's controller
            fail(ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLED)
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
    _hide_undescribable_configs(broker, ctx, out)
    return mutation_answer(ctx, quota, {"throttle_time_ms": 0, "topics": out})


def _hide_undescribable_configs(broker: AdminView, ctx: RequestContext, out: list) -> None:
    """Kafka shows a created topic's partitions, replication and configs only to a principal
    that may DESCRIBE_CONFIGS it; the others get TOPIC_AUTHORIZATION_FAILED as its config code."""
    if broker.authorizer is None:
        return
    from pylog.broker.security.authorizer import topic_filter
    from pylog.core.security.acl import AclOperation

    may = topic_filter(broker.authorizer, ctx, AclOperation.DESCRIBE_CONFIGS)
    for res in out:
        if res["error_code"] == ErrorCode.NONE and not may(res["name"]):
            res.update(num_partitions=-1, replication_factor=-1, configs=None,
                       topic_config_error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED)


def create_topics_error(body, version, code, msg):
    """Every requested topic with `code`."""
    return {"throttle_time_ms": 0, "topics": [
        {"name": t["name"], "topic_id": ZERO_UUID, "error_code": code, "error_message": msg,
         "num_partitions": -1, "replication_factor": -1, "configs": None} for t in body["topics"]]}


# ---- DeleteTopics ----------------------------------------------------------

def _deleted_topics(body: dict) -> list[tuple[str | None, uuid.UUID]]:
    """(name, topic id) per topic to delete: names before v6, names or ids after."""
    return [(name, ZERO_UUID) for name in body["topic_names"]] + [(t["name"], t["topic_id"]) for t in body["topics"]]


def delete_topics(broker: AdminView, ctx: RequestContext, body: dict) -> dict:
    """Delete each topic named (by name, or v6+ by id) when delete.topic.enable allows."""
    quota = mutation_quota(broker, ctx, STRICT_DELETE_TOPICS)
    out = []
    for name, tid in _deleted_topics(body):
        res = {"name": name, "topic_id": tid, "error_code": ErrorCode.NONE, "error_message": None}
        out.append(res)
        if name is None:  # v6+ by id: dispatch named every id a topic has (topic_ids)
            res["error_code"] = ErrorCode.UNKNOWN_TOPIC_ID if tid != ZERO_UUID else ErrorCode.INVALID_REQUEST
            res["error_message"] = "unknown topic id" if tid != ZERO_UUID else "no topic name or id"
            continue
        info = broker.logs.topics.get(name)
        if info is None:
            res["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            res["error_message"] = f"topic {name!r} does not exist"
            continue
        res["topic_id"] = info.topic_id
        if not broker.config["delete.topic.enable"]:
            res["error_code"], res["error_message"] = ErrorCode.TOPIC_DELETION_DISABLED, "delete.topic.enable is false"
            continue
        if not record_mutations(quota, info.num_partitions):
            res["error_code"], res["error_message"] = ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLED
            continue
        try:
            broker.logs.delete_topic(name)
        except Exception as e:  # noqa: BLE001
            res["error_code"], res["error_message"] = code_of(e)
            continue
        broker.wake_topic(name)
    return mutation_answer(ctx, quota, {"throttle_time_ms": 0, "responses": out})


def delete_topics_error(body, version, code, msg):
    """Every named topic with `code`."""
    return {"throttle_time_ms": 0, "responses": [
        {"name": n, "topic_id": i, "error_code": code, "error_message": msg} for n, i in _deleted_topics(body)]}


# ---- CreatePartitions ------------------------------------------------------

def create_partitions(broker: AdminView, ctx: RequestContext, body: dict) -> dict:
    """Grow each topic to its new partition count (or only validate the change)."""
    validate_only = body["validate_only"]
    quota = mutation_quota(broker, ctx, STRICT_CREATE_PARTITIONS)
    out = []
    for t in body["topics"]:
        name = t["name"]
        res = {"name": name, "error_code": ErrorCode.NONE, "error_message": None}
        out.append(res)
        info = broker.logs.topics.get(name)
        if info is None:
            res["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            res["error_message"] = f"topic {name!r} does not exist"
            continue
        count = t["count"]
        if count > MAX_PARTITIONS_PER_TOPIC:
            res["error_code"] = ErrorCode.INVALID_PARTITIONS
            res["error_message"] = f"at most {MAX_PARTITIONS_PER_TOPIC} partitions per topic"
            continue
        if count <= info.num_partitions:
            res["error_code"] = ErrorCode.INVALID_PARTITIONS
            res["error_message"] = (f"topic {name!r} has {info.num_partitions} partitions; "
                                    f"the new count {count} must be larger")
            continue
        assignments = t["assignments"]
        if assignments is not None:
            if len(assignments) != count - info.num_partitions:
                res["error_code"] = ErrorCode.INVALID_REPLICA_ASSIGNMENT
                res["error_message"] = "one assignment is needed per new partition"
                continue
            code, msg = _check_assignment(broker.node_id, assignments)
            if code:
                res["error_code"], res["error_message"] = code, msg
                continue
        if not record_mutations(quota, count - info.num_partitions):
            res["error_code"], res["error_message"] = ErrorCode.THROTTLING_QUOTA_EXCEEDED, THROTTLED
            continue
        if validate_only:
            continue
        try:
            broker.logs.create_partitions(name, count)
        except Exception as e:  # noqa: BLE001
            res["error_code"], res["error_message"] = code_of(e)
    return mutation_answer(ctx, quota, {"throttle_time_ms": 0, "results": out})


def create_partitions_error(body, version, code, msg):
    """Every requested topic with `code`."""
    return {"throttle_time_ms": 0, "results": [
        {"name": t["name"], "error_code": code, "error_message": msg} for t in body["topics"]]}


# ---- DeleteRecords ---------------------------------------------------------

def _delete_records(broker: AdminView, name: str, p: dict) -> dict:
    idx = p["partition_index"]
    entry = {"partition_index": idx, "low_watermark": -1, "error_code": ErrorCode.NONE}
    plog = broker.logs.get_log(name, idx)
    if plog is None:
        entry["error_code"] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return entry
    try:
        entry["low_watermark"] = plog.delete_records(p["offset"])
    except Exception as e:  # noqa: BLE001
        entry["error_code"], _ = code_of(e)
    return entry


def delete_records(broker: AdminView, ctx: RequestContext, body: dict) -> dict:
    """Move each partition's log start offset up to the requested offset."""
    return {"throttle_time_ms": 0, "topics": mirror_partitions(
        body["topics"], lambda t, p: _delete_records(broker, t["name"], p))}


def delete_records_error(body, version, code, msg):
    """Every requested partition with `code`."""
    def entry(t, p):
        return {"partition_index": p["partition_index"], "low_watermark": -1, "error_code": code}
    return {"throttle_time_ms": 0, "topics": mirror_partitions(body["topics"], entry)}


# ---- DescribeLogDirs -------------------------------------------------------

def describe_log_dirs(broker: AdminView, ctx: RequestContext, body: dict) -> dict:
    """Each log dir's space and the size of the (requested) partitions in it."""
    wanted = body["topics"]
    filt = None
    if wanted is not None:
        filt = {(t["topic"], p) for t in wanted for p in t["partitions"]}
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
        results.append({"error_code": ErrorCode.NONE, "log_dir": d, "total_bytes": total, "usable_bytes": usable,
                        "topics": [{"name": n, "partitions": sorted(ps, key=lambda x: x["partition_index"])}
                                   for n, ps in sorted(topics.items())]})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "results": results}


def describe_log_dirs_error(body, version, code, msg):
    """The request as a whole failed with `code`."""
    return {"throttle_time_ms": 0, "error_code": code, "results": []}


def _created_configs(broker: AdminView, overrides: dict[str, str]) -> list[dict]:
    """CreateTopics v5+: the new topic's full config with each value's source."""
    defaults = topic_defaults_from_broker(broker.config)
    out = []
    for name, d in TOPIC_CONFIGS.defs.items():
        if name in overrides:
            value, source = overrides[name], DYNAMIC_TOPIC
        else:
            value = d.render(defaults[name])
            source = default_source(broker.config, name, broker.dynamic_configs)
        out.append({"name": name, "value": value, "read_only": False, "config_source": source,
                    "is_sensitive": d.sensitive})
    return out

