"""ElectLeaders and List/AlterPartitionReassignments as a single Kafka node answers them.

Every partition has one replica, this node, which is its leader and its preferred replica:
an election is never needed (ELECTION_NOT_NEEDED per named partition; nothing for "all"), no
reassignment is ever in progress, and the only assignment a partition can be moved to is the
one it has. Scripts that call kafka-leader-election.sh or kafka-reassign-partitions.sh run as
they do against a one-node Kafka cluster.
"""
from __future__ import annotations


from pylog.broker.api.context import RequestContext
from pylog.broker.api.views import AdminView
from pylog.core.errors import ErrorCode


PREFERRED, UNCLEAN = 0, 1
NOT_NEEDED_MSG = "Leader election not needed for topic partition."


def _partitions(broker: AdminView, topic: str) -> int | None:
    info = broker.logs.topics.get(topic)
    return None if info is None else info.num_partitions


# ---- ElectLeaders ------------------------------------------------------------

def elect_leaders(broker: AdminView, ctx: RequestContext, body: dict) -> dict:
    """ELECTION_NOT_NEEDED for each named partition (its one replica leads); for all
    partitions (null), every topic with nothing elected."""
    if body["election_type"] not in (PREFERRED, UNCLEAN):
        return elect_leaders_error(body, ctx.api_version, ErrorCode.INVALID_REQUEST, None)
    wanted = body["topic_partitions"]
    if wanted is None:
        return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "replica_election_results": [
            {"topic": t, "partition_result": []} for t in sorted(broker.logs.topics)]}
    out = []
    for t in wanted:
        count = _partitions(broker, t["topic"])
        results = []
        for p in t["partitions"]:
            if count is None:
                results.append(_result(p, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"No such topic as {t['topic']}"))
            elif not 0 <= p < count:
                results.append(_result(p, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                       f"No such partition as {t['topic']}-{p}"))
            else:
                results.append(_result(p, ErrorCode.ELECTION_NOT_NEEDED, NOT_NEEDED_MSG))
        out.append({"topic": t["topic"], "partition_result": results})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "replica_election_results": out}


def _result(p: int, code: int, msg: str | None) -> dict:
    return {"partition_id": p, "error_code": code, "error_message": msg}


def elect_leaders_error(body, version, code, msg):
    """`code` for the request (v0, which has no top-level code: for every named partition)."""
    results = [] if version >= 1 else [
        {"topic": t["topic"], "partition_result": [_result(p, code, msg) for p in t["partitions"]]}
        for t in body["topic_partitions"] or ()]
    return {"throttle_time_ms": 0, "error_code": code, "replica_election_results": results}


# ---- AlterPartitionReassignments ---------------------------------------------

def _reassign_one(broker: AdminView, topic: str, count: int | None, p: dict) -> tuple[int, str | None]:
    index, replicas = p["partition_index"], p["replicas"]
    if count is None:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find a topic named {topic}."
    if not 0 <= index < count:
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"Unable to find partition {topic}:{index}."
    if replicas is None:
        return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None  # a cancel: nothing is moving
    if not replicas:
        return ErrorCode.INVALID_REPLICA_ASSIGNMENT, "The manual partition assignment includes an empty replica list."
    seen = set()
    for r in replicas:
        if r != broker.node_id:
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes broker {r}, but no such broker is registered.")
        if r in seen:
            return (ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes the broker {r} more than once.")
        seen.add(r)
    return ErrorCode.NONE, None  # already where it is asked to be


def alter_partition_reassignments(broker: AdminView, ctx: RequestContext, body: dict) -> dict:
    """Each partition's move checked as Kafka's controller checks it; the only valid target
    is this node, where the partition already is, so nothing moves."""
    out = []
    for t in body["topics"]:
        count = _partitions(broker, t["name"])
        parts = []
        for p in t["partitions"]:
            code, msg = _reassign_one(broker, t["name"], count, p)
            parts.append({"partition_index": p["partition_index"], "error_code": code, "error_message": msg})
        out.append({"name": t["name"], "partitions": parts})
    return {"throttle_time_ms": 0, "allow_replication_factor_change": body["allow_replication_factor_change"],
            "error_code": ErrorCode.NONE, "error_message": None if out else "", "responses": out}


def alter_partition_reassignments_error(body, version, code, msg):
    """`code` for the whole request."""
    return {"throttle_time_ms": 0, "allow_replication_factor_change": body["allow_replication_factor_change"],
            "error_code": code, "error_message": msg, "responses": []}


# ---- ListPartitionReassignments ----------------------------------------------

def list_partition_reassignments(broker: AdminView, ctx: RequestContext, body: dict) -> dict:
    """No reassignment is ever in progress on one node."""
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "topics": []}


def list_partition_reassignments_error(body, version, code, msg):
    """`code` for the whole request."""
    return {"throttle_time_ms": 0, "error_code": code, "error_message": msg, "topics": []}
