"""ApiVersions, Metadata and DescribeCluster: what clients ask before anything else."""
from __future__ import annotations

from pylog.broker.api.context import AUTHORIZED_OPS_OMITTED, NONE, RequestContext, code_of
from pylog.broker.api.views import MetadataView
from pylog.core.errors import ErrorCode
from pylog.core.protocol import ZERO_UUID

INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})
_LEGAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")
MAX_TOPIC_NAME = 249


def invalid_name_code(name: str) -> int:
    """INVALID_TOPIC_EXCEPTION for names Kafka refuses, else NONE."""
    if not name or name in (".", "..") or len(name) > MAX_TOPIC_NAME or any(c not in _LEGAL for c in name):
        return ErrorCode.INVALID_TOPIC_EXCEPTION
    return ErrorCode.NONE


# ---- ApiVersions -----------------------------------------------------------

# Feature levels (KIP-584) clients look at, kept by broker/node/features.py and changed by
# UpdateFeatures. transaction.version 2 (KIP-890 part 2, the default, as Kafka 4 formats new
# clusters): clients add partitions implicitly and the epoch moves at every transaction's end
# (txn/epoch_bump.py); at 1 they use AddPartitionsToTxn and keep their epoch. share.version 2, as
# Kafka 4.4 formats new clusters: share groups (KIP-932) with dead-letter topics (KIP-1191).


def _wrong_target(broker: MetadataView, body: dict) -> int:
    """ApiVersions v5 (KIP-1242): a client names the cluster and node it means to reach, both or
    neither (INVALID_REQUEST); another cluster or node answers REBOOTSTRAP_REQUIRED."""
    cluster_id, node_id = body.get("cluster_id"), body.get("node_id", -1)
    if cluster_id is None and node_id == -1:
        return ErrorCode.NONE
    if cluster_id is None or node_id == -1:
        return ErrorCode.INVALID_REQUEST
    if cluster_id != broker.cluster_id or node_id != broker.node_id:
        return ErrorCode.REBOOTSTRAP_REQUIRED
    return ErrorCode.NONE


def api_versions(broker: MetadataView, ctx: RequestContext, body: dict) -> dict:
    """The APIs this broker serves with their version ranges, and its feature levels."""
    if ctx.api_version >= 5:
        code = _wrong_target(broker, body)
        if code:
            return api_versions_error(body, ctx.api_version, code, None)
    return {"error_code": ErrorCode.NONE, "api_keys": broker.api_version_ranges(), "throttle_time_ms": 0,
            "supported_features": broker.features.supported(), "finalized_features_epoch": broker.features.epoch,
            "finalized_features": broker.features.finalized()}


def api_versions_error(body, version, code, msg):
    """`code` and no APIs."""
    return {"error_code": code, "api_keys": [], "throttle_time_ms": 0}


# ---- Metadata --------------------------------------------------------------

def _broker_entry(broker: MetadataView, conn=None) -> dict:
    # the address of the listener the client came in on, as Kafka answers
    host, port = broker.advertised_for(conn)
    return {"node_id": broker.node_id, "host": host, "port": port, "rack": None}


def _partition_entries(broker: MetadataView, info) -> list:
    node = broker.node_id
    out = []
    for p in range(info.num_partitions):
        log_ = broker.logs.get_log(info.name, p)
        if log_ is None:
            out.append({"error_code": ErrorCode.LEADER_NOT_AVAILABLE, "partition_index": p, "leader_id": -1,
                        "leader_epoch": -1, "replica_nodes": [node], "isr_nodes": [], "offline_replicas": [node]})
            continue
        out.append({
            "error_code": NONE, "partition_index": p, "leader_id": node,
            "leader_epoch": broker.leader_epoch(log_), "replica_nodes": [node],
            "isr_nodes": [node], "offline_replicas": [],
        })
    return out


def _topic_entry(broker: MetadataView, info) -> dict:
    return {
        "error_code": NONE, "name": info.name, "topic_id": info.topic_id,
        "is_internal": info.name in INTERNAL_TOPICS, "partitions": _partition_entries(broker, info),
        "topic_authorized_operations": AUTHORIZED_OPS_OMITTED,
    }


def _error_topic(name, code, topic_id=ZERO_UUID) -> dict:
    return {"error_code": code, "name": name, "topic_id": topic_id, "is_internal": False,
            "partitions": [], "topic_authorized_operations": AUTHORIZED_OPS_OMITTED}


def _requested_topic(broker: MetadataView, name, topic_id, auto_create: bool) -> dict:
    """The Metadata entry for one requested topic, by name or (v10+) by id; auto-created
    when the broker and the request allow it."""
    if name is None or (name == "" and topic_id != ZERO_UUID):
        # v10+ by id: dispatch named every id a topic has (topic_ids), so no topic has this one
        return _error_topic(None, ErrorCode.UNKNOWN_TOPIC_ID, topic_id)
    logs = broker.logs
    info = logs.topics.get(name)
    # internal topics are made by their coordinators with their own
    # partition counts, never by a metadata request
    if info is None and auto_create and name not in INTERNAL_TOPICS:
        try:
            info = logs.create_topic(name, broker.config["num.partitions"], None)
        except Exception as e:  # noqa: BLE001 - reported per topic
            code, _ = code_of(e)
            if code != ErrorCode.TOPIC_ALREADY_EXISTS:  # else: created concurrently
                return _error_topic(name, code)
            info = logs.topics.get(name)
    if info is None:
        return _error_topic(name, invalid_name_code(name) or ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    return _topic_entry(broker, info)


def metadata(broker: MetadataView, ctx: RequestContext, body: dict) -> dict:
    """This broker, and the requested (or every) topic with its partitions' leader (this node)."""
    v = ctx.api_version
    requested = body["topics"]
    if v == 0 and not requested:
        requested = None  # v0: an empty list means every topic
    auto_create = broker.config["auto.create.topics.enable"] and (body["allow_auto_topic_creation"] or v < 4)
    if requested is None:
        topics = broker.logs.topics
        topics_out = [_topic_entry(broker, topics[name]) for name in sorted(topics)]
    else:
        topics_out = [_requested_topic(broker, t["name"], t["topic_id"], auto_create) for t in requested]
    return {
        "throttle_time_ms": 0,
        "brokers": [_broker_entry(broker, ctx.conn)],
        "cluster_id": broker.cluster_id or None,
        "controller_id": broker.node_id,
        "topics": topics_out,
        "cluster_authorized_operations": AUTHORIZED_OPS_OMITTED,
    }


def metadata_error(body, version, code, msg):
    """Every requested topic with `code`."""
    topics = [_error_topic(t["name"], code, t["topic_id"]) for t in body["topics"] or ()]
    return {"throttle_time_ms": 0, "brokers": [], "cluster_id": None, "controller_id": -1, "topics": topics,
            "cluster_authorized_operations": AUTHORIZED_OPS_OMITTED, "error_code": code}


# ---- DescribeCluster -------------------------------------------------------

ENDPOINT_BROKER, ENDPOINT_CONTROLLER = 1, 2  # DescribeCluster's EndpointType


def describe_cluster(broker: MetadataView, ctx: RequestContext, body: dict) -> dict:
    """The cluster id and its one broker; a request for another endpoint type is refused
    as Kafka's AuthHelper.computeDescribeClusterResponse refuses it (this listener is a broker's)."""
    wanted = body["endpoint_type"]
    if wanted not in (0, ENDPOINT_BROKER):  # 0: v0 has no endpoint type
        if wanted == ENDPOINT_CONTROLLER:
            code = ErrorCode.MISMATCHED_ENDPOINT_TYPE
            msg = "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER"
        else:
            code, msg = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE, f"Unsupported endpoint type {wanted}"
        return describe_cluster_error(body, ctx.api_version,
                                      ErrorCode.INVALID_REQUEST if ctx.api_version == 0 else code, msg)
    b = _broker_entry(broker, ctx.conn)
    return {
        "throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None,
        "endpoint_type": body["endpoint_type"] or 1,
        "cluster_id": broker.cluster_id, "controller_id": broker.node_id,
        "brokers": [{"broker_id": b["node_id"], "host": b["host"], "port": b["port"], "rack": None,
                     "is_fenced": False}],
        "cluster_authorized_operations": AUTHORIZED_OPS_OMITTED,
    }


def describe_cluster_error(body, version, code, msg):
    """`code` and no brokers."""
    return {"throttle_time_ms": 0, "error_code": code, "error_message": msg, "cluster_id": "",
            "controller_id": -1, "brokers": [], "cluster_authorized_operations": AUTHORIZED_OPS_OMITTED}
