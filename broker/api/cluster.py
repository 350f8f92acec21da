"""DescribeQuorum, UpdateFeatures, ListConfigResources and DescribeTopicPartitions: a one-node cluster
describing itself (and changing its feature levels).

DescribeQuorum answers as the single voter of a combined-mode Kafka node does: this node leads
`__cluster_metadata` partition 0 at epoch 1 with no observers. pylog keeps no metadata log, so its
high watermark and end offset are 0. ListConfigResources lists what DescribeConfigs can describe,
in Kafka's order (client metrics, groups, broker loggers, brokers, topics). DescribeTopicPartitions
pages through topics sorted by name, at most `response_partition_limit` partitions per answer, and
hands back the cursor to continue from.
"""
from __future__ import annotations

import time

from pylog.broker.api.context import NONE, RequestContext
from pylog.broker.api.views import MetadataView
from pylog.broker.api.meta import INTERNAL_TOPICS, invalid_name_code
from pylog.broker.node.features import UPGRADE, refusal
from pylog.core.errors import ERROR_DESCRIPTIONS, ErrorCode
from pylog.core.protocol import ZERO_UUID
from pylog.core.security.acl import AclOperation as Op, ResourceType as Res

METADATA_TOPIC = "__cluster_metadata"
QUORUM_EPOCH = 1  # a fresh quorum's first elected epoch

# ---- DescribeQuorum ----------------------------------------------------------


def _voter(broker: MetadataView, version: int) -> dict:
    now = int(time.time() * 1000)
    return {"replica_id": broker.node_id, "replica_directory_id": ZERO_UUID, "log_end_offset": 0,
            # the leader's own fetch and caught-up times are the time of the answer (v1+)
            "last_fetch_timestamp": now, "last_caught_up_timestamp": now}


def describe_quorum(broker: MetadataView, ctx: RequestContext, body: dict) -> dict:
    """The one-voter quorum, or UNKNOWN_TOPIC_OR_PARTITION unless exactly `__cluster_metadata`-0 is asked."""
    topics = body["topics"]
    if not (len(topics) == 1 and topics[0]["topic_name"] == METADATA_TOPIC
            and [p["partition_index"] for p in topics[0]["partitions"]] == [0]):
        return _partition_errors(body, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    nodes = []
    if ctx.api_version >= 2:
        spec = getattr(getattr(ctx.conn, "listener", None), "spec", None)
        host, port = broker.advertised_for(ctx.conn)
        nodes = [{"node_id": broker.node_id, "listeners": [
            {"name": spec.name if spec is not None else "PLAINTEXT", "host": host, "port": port}]}]
    return {"error_code": NONE, "error_message": "", "nodes": nodes, "topics": [{
        "topic_name": METADATA_TOPIC, "partitions": [{
            "partition_index": 0, "error_code": NONE, "error_message": "", "leader_id": broker.node_id,
            "leader_epoch": QUORUM_EPOCH, "high_watermark": 0,
            "current_voters": [_voter(broker, ctx.api_version)], "observers": []}]}]}


def _partition_errors(body: dict, code: int) -> dict:
    msg = ERROR_DESCRIPTIONS[code]
    return {"error_code": NONE, "error_message": "", "nodes": [], "topics": [
        {"topic_name": t["topic_name"], "partitions": [
            {"partition_index": p["partition_index"], "error_code": code, "error_message": msg, "leader_id": 0,
             "leader_epoch": 0, "high_watermark": 0, "current_voters": [], "observers": []}
            for p in t["partitions"]]} for t in body["topics"]]}


def describe_quorum_error(body, version, code, msg):
    """`code` for the whole request."""
    return {"error_code": code, "error_message": ERROR_DESCRIPTIONS.get(code, msg), "topics": [], "nodes": []}


# ---- UpdateFeatures -------------------------------------------------------------


def update_features(broker: MetadataView, ctx: RequestContext, body: dict) -> dict:
    """Finalize new levels, all or none, with Kafka's rules (features.refusal). A v0 request is
    always an upgrade: Kafka's broker forwards it to its controller without `allow_downgrade`."""
    v, feats = ctx.api_version, broker.features
    changes = {}
    for u in body["feature_updates"]:
        name, level = u["feature"], u["max_version_level"]
        why = refusal(name, level, u["upgrade_type"] if v >= 1 else UPGRADE, feats.level(name))
        if why is not None:
            msg = ("The update failed for all features since the following feature had an error: "
                   f"Invalid update version {level} for feature {name}. {why.format(node=broker.node_id)}")
            return update_features_error(body, v, ErrorCode.INVALID_UPDATE_VERSION, msg)
        changes[name] = level
    if not body["validate_only"]:
        feats.change(changes)
        broker.settings.transaction_version = feats.level("transaction.version")
    return {"throttle_time_ms": 0, "error_code": NONE, "error_message": None, "results": [
        {"feature": u["feature"], "error_code": NONE, "error_message": "NONE"} for u in body["feature_updates"]]}


def update_features_error(body, version, code, msg):
    """`code` for the whole request (Kafka lists no per-feature results then)."""
    return {"throttle_time_ms": 0, "error_code": code, "error_message": msg, "results": []}


# ---- ListConfigResources -------------------------------------------------------

CLIENT_METRICS, GROUP, BROKER_LOGGER, BROKER, TOPIC = 16, 32, 8, 4, 2
_ORDER = (CLIENT_METRICS, GROUP, BROKER_LOGGER, BROKER, TOPIC)


def list_config_resources(broker: MetadataView, ctx: RequestContext, body: dict) -> dict:
    """The config resources of the asked types (v0: client metrics only; v1 with none named: all)."""
    wanted = set(body["resource_types"]) if ctx.api_version >= 1 else {CLIENT_METRICS}
    if wanted - set(_ORDER):
        return list_config_resources_error(body, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION, None)
    node = str(broker.node_id)
    names = {
        CLIENT_METRICS: [],  # no client metrics subscriptions are kept
        GROUP: sorted(broker.group_coordinator.group_config_store().overrides),
        BROKER_LOGGER: [node],
        BROKER: [node],
        TOPIC: sorted(broker.logs.topics),
    }
    out = [{"resource_name": n, "resource_type": t} for t in _ORDER if not wanted or t in wanted for n in names[t]]
    return {"throttle_time_ms": 0, "error_code": NONE, "config_resources": out}


def list_config_resources_error(body, version, code, msg):
    """`code` and no resources."""
    return {"throttle_time_ms": 0, "error_code": code, "config_resources": []}


# ---- DescribeTopicPartitions -----------------------------------------------------

# AclEntry.supportedOperations(TOPIC): what topic_authorized_operations may list
TOPIC_OPS = (Op.READ, Op.WRITE, Op.CREATE, Op.DELETE, Op.ALTER, Op.DESCRIBE, Op.DESCRIBE_CONFIGS, Op.ALTER_CONFIGS)
ALL_TOPIC_OPS = sum(1 << int(op) for op in TOPIC_OPS)
# Kafka's max.request.partition.size.limit default: the most partitions one answer holds
MAX_PARTITIONS = 2000


def _partitions(broker: MetadataView, info, start: int, limit: int) -> tuple[list, int]:
    """The partitions from `start` (at most `limit`) and the next index to ask for (-1: none left)."""
    n = info.num_partitions
    upper = min(n, start + limit)
    node = broker.node_id
    out = []
    for p in range(start, upper):
        log_ = broker.logs.get_log(info.name, p)
        up = log_ is not None
        out.append({"error_code": NONE, "partition_index": p, "leader_id": node if up else -1,
                    "leader_epoch": broker.leader_epoch(log_) if up else -1, "replica_nodes": [node],
                    "isr_nodes": [node], "eligible_leader_replicas": [], "last_known_elr": [],
                    "offline_replicas": [] if up else [node]})
    return out, (upper if upper < n else -1)


def _topic(name, code=NONE, topic_id=ZERO_UUID, partitions=(), ops=-(2**31)) -> dict:
    return {"error_code": code, "name": name, "topic_id": topic_id, "is_internal": name in INTERNAL_TOPICS,
            "partitions": list(partitions), "topic_authorized_operations": ops}


def _may(broker: MetadataView, ctx: RequestContext):
    az = broker.authorizer
    if az is None:
        return (lambda name: True), (lambda name: ALL_TOPIC_OPS)
    acls, conn = az.acls, ctx.conn
    return ((lambda name: az.allowed(ctx, Op.DESCRIBE, Res.TOPIC, name)),
            (lambda name: acls.authorized_operations(conn.principal, conn.host, Res.TOPIC, name, TOPIC_OPS)))


def describe_topic_partitions(broker: MetadataView, ctx: RequestContext, body: dict) -> dict:
    """Topics (the named ones, or every one) sorted by name from the cursor on, partition by partition."""
    cursor = body["cursor"]
    first = cursor["topic_name"] if cursor is not None else ""
    every = not body["topics"]
    names = set(broker.logs.topics) if every else {t["name"] for t in body["topics"]}
    names = {n for n in names if n >= first}
    if cursor is not None and not every and cursor["topic_name"] not in names:
        return describe_topic_partitions_error(body, ctx.api_version, ErrorCode.INVALID_REQUEST, None)
    if cursor is not None and cursor["partition_index"] < 0:
        return describe_topic_partitions_error(body, ctx.api_version, ErrorCode.INVALID_REQUEST, None)
    may, ops_of = _may(broker, ctx)
    remaining = max(min(MAX_PARTITIONS, body["response_partition_limit"]), 1)
    topics, denied, next_cursor = [], [], None
    for name in sorted(names):
        if not may(name):
            if not every:
                denied.append(_topic(name, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                denied[-1]["is_internal"] = False
            continue
        if remaining == 0:
            next_cursor = {"topic_name": name, "partition_index": 0}
            break
        info = broker.logs.topics.get(name)
        if info is None:
            if not every:
                code = invalid_name_code(name) or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                topics.append(_topic(name, code, ops=ops_of(name)))
            continue
        start = cursor["partition_index"] if cursor is not None and name == first else 0
        parts, nxt = _partitions(broker, info, start, remaining)
        topics.append(_topic(name, NONE, info.topic_id, parts, ops_of(name)))
        if nxt != -1:
            next_cursor = {"topic_name": name, "partition_index": nxt}
            break
        remaining -= len(parts)
    return {"throttle_time_ms": 0, "topics": topics + denied, "next_cursor": next_cursor}


def describe_topic_partitions_error(body, version, code, msg):
    """`code` on every named topic."""
    return {"throttle_time_ms": 0, "topics": [_topic(t["name"], code) for t in body["topics"]], "next_cursor": None}
