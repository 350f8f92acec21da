"""ApiVersions, Metadata and DescribeCluster: what clients ask before anything else."""
from __future__ import annotations

import uuid

from pylog.commands.broker.apis import AUTHORIZED_OPS_OMITTED, Api, code_of
from pylog.core.errors import UnknownTopicOrPartitionError

ZERO_UUID = uuid.UUID(int=0)
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})


def apis(broker) -> list[Api]:
    def api_versions(ctx, body):
        return {
            "error_code": 0,
            "api_keys": [{"api_key": k, "min_version": lo, "max_version": hi} for k, lo, hi in broker.advertised],
            "throttle_time_ms": 0,
        }

    def api_versions_error(body, version, code, msg):
        return {"error_code": code, "api_keys": [], "throttle_time_ms": 0}

    def broker_entry():
        s = broker.settings
        return {"node_id": broker.node_id, "host": s.advertised_host, "port": s.advertised_port, "rack": None}

    def partition_entries(info):
        out = []
        for p in range(info.num_partitions):
            log_ = broker.logs.get_log(info.name, p)
            if log_ is None:
                out.append({"error_code": 5, "partition_index": p, "leader_id": -1, "leader_epoch": -1,
                            "replica_nodes": [broker.node_id], "isr_nodes": [], "offline_replicas": [broker.node_id]})
                continue
            out.append({
                "error_code": 0, "partition_index": p, "leader_id": broker.node_id,
                "leader_epoch": broker.leader_epoch(log_), "replica_nodes": [broker.node_id],
                "isr_nodes": [broker.node_id], "offline_replicas": [],
            })
        return out

    def topic_entry(info, version):
        return {
            "error_code": 0, "name": info.name, "topic_id": info.topic_id,
            "is_internal": info.name in INTERNAL_TOPICS, "partitions": partition_entries(info),
            "topic_authorized_operations": AUTHORIZED_OPS_OMITTED,
        }

    def error_topic(name, code, topic_id=ZERO_UUID):
        return {"error_code": code, "name": name, "topic_id": topic_id, "is_internal": False,
                "partitions": [], "topic_authorized_operations": AUTHORIZED_OPS_OMITTED}

    def metadata(ctx, body):
        v = ctx.api_version
        requested = body.get("topics")
        if v == 0 and not requested:
            requested = None  # v0: an empty list means every topic
        allow_auto = body.get("allow_auto_topic_creation", True) if v >= 4 else True
        auto = allow_auto and broker.config["auto.create.topics.enable"]
        topics_out = []
        if requested is None:
            for name in sorted(broker.logs.topics):
                topics_out.append(topic_entry(broker.logs.topics[name], v))
        else:
            for t in requested:
                name = t.get("name")
                tid = t.get("topic_id")
                if name is None or (name == "" and tid not in (None, ZERO_UUID)):
                    # v10+: look the topic up by id (v12 allows a null name)
                    info = broker.topic_by_id(tid) if tid not in (None, ZERO_UUID) else None
                    if info is None:
                        topics_out.append(error_topic(None, 100, tid or ZERO_UUID))  # UNKNOWN_TOPIC_ID
                    else:
                        topics_out.append(topic_entry(info, v))
                    continue
                info = broker.logs.topics.get(name)
                # internal topics are made by their coordinators with their own
                # partition counts, never by a metadata request
                if info is None and auto and name not in INTERNAL_TOPICS:
                    try:
                        info = broker.logs.create_topic(
                            name, broker.config["num.partitions"], None)
                    except Exception as e:  # noqa: BLE001 - reported per topic
                        code, _ = code_of(e)
                        if code == 36:  # created concurrently
                            info = broker.logs.topics.get(name)
                        else:
                            topics_out.append(error_topic(name, code))
                            continue
                if info is None:
                    code = _invalid_name_code(name) or UnknownTopicOrPartitionError.code
                    topics_out.append(error_topic(name, code))
                    continue
                topics_out.append(topic_entry(info, v))
        return {
            "throttle_time_ms": 0,
            "brokers": [broker_entry()],
            "cluster_id": broker.cluster_id or None,
            "controller_id": broker.node_id,
            "topics": topics_out,
            "cluster_authorized_operations": AUTHORIZED_OPS_OMITTED,
        }

    def metadata_error(body, version, code, msg):
        topics = [error_topic(t.get("name"), code, t.get("topic_id") or ZERO_UUID) for t in body.get("topics") or []]
        return {"throttle_time_ms": 0, "brokers": [], "cluster_id": None, "controller_id": -1, "topics": topics,
                "cluster_authorized_operations": AUTHORIZED_OPS_OMITTED, "error_code": code}

    def describe_cluster(ctx, body):
        b = broker_entry()
        return {
            "throttle_time_ms": 0, "error_code": 0, "error_message": None,
            "endpoint_type": body.get("endpoint_type", 1) or 1,
            "cluster_id": broker.cluster_id, "controller_id": broker.node_id,
            "brokers": [{"broker_id": b["node_id"], "host": b["host"], "port": b["port"], "rack": None,
                         "is_fenced": False}],
            "cluster_authorized_operations": AUTHORIZED_OPS_OMITTED,
        }

    def describe_cluster_error(body, version, code, msg):
        return {"throttle_time_ms": 0, "error_code": code, "error_message": msg, "cluster_id": "",
                "controller_id": -1, "brokers": [], "cluster_authorized_operations": AUTHORIZED_OPS_OMITTED}

    return [
        Api(18, api_versions, 0, 4, api_versions_error),
        Api(3, metadata, 0, 12, metadata_error),
        Api(60, describe_cluster, 0, 1, describe_cluster_error),
    ]


_LEGAL = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-")


def _invalid_name_code(name: str) -> int:
    """INVALID_TOPIC_EXCEPTION for names Kafka refuses, else 0."""
    if not name or name in (".", "..") or len(name) > 249 or any(c not in _LEGAL for c in name):
        return 17
    return 0
