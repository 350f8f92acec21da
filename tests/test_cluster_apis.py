"""A one-node cluster describing itself, asked the same of pylog and of a Kafka 4.4.0 node in one run:
DescribeQuorum (one voter leading `__cluster_metadata`), ListConfigResources (Kafka's order and
type filter) and DescribeTopicPartitions (its cursor paging, errors and ELR fields), and Kafka's
`kafka-topics.sh --describe` printing the same partition lines (Elr/LastKnownElr) against both.

Values that are the node's own (ids, ports, timestamps, the metadata log's offsets, which pylog
does not keep) are normalised; every other field must be equal.
"""
from __future__ import annotations

import re
import socket
import time
import uuid

import pytest

from support.broker_fixtures import call
from support.kafka_peer import run_main

pytestmark = pytest.mark.timeout(600)

TOPICS = {"ctp-a": 3, "ctp-b": 2}


def _ask(port: int, key: int, version: int, body: dict) -> dict:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        return call(s, key, version, body)


def _norm(v):
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            if k in ("high_watermark", "log_end_offset") and x >= 0:
                x = "<metadata offset>"  # pylog keeps no metadata log
            elif k in ("last_fetch_timestamp", "last_caught_up_timestamp") and x > 0:
                x = "<now>"
            elif k in ("port", "host"):
                x = f"<{k}>"
            elif k == "name" and x in ("CONTROLLER", "PLAINTEXT"):
                x = "<listener>"  # Kafka names its controller listener; pylog answers on its own
            out[k] = _norm(x)
        return out
    if isinstance(v, list):
        return [_norm(x) for x in v]
    if isinstance(v, uuid.UUID):
        return "<zero uuid>" if v.int == 0 else "<topic id>"
    return v


def _make_topics(port: int) -> None:
    call_body = {"topics": [{"name": n, "num_partitions": p, "replication_factor": 1, "assignments": [],
                             "configs": []} for n, p in TOPICS.items()], "timeout_ms": 30000, "validate_only": False}
    _ask(port, 19, 7, call_body)
    deadline = time.monotonic() + 60
    while True:
        md = _ask(port, 3, 12, {"topics": [{"name": n, "topic_id": None} for n in TOPICS],
                                "allow_auto_topic_creation": False, "include_topic_authorized_operations": False})
        if all(t["error_code"] == 0 and all(p["leader_id"] >= 0 for p in t["partitions"]) for t in md["topics"]):
            return
        assert time.monotonic() < deadline, md
        time.sleep(0.2)


QUORUM = [{"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}]


def _requests():
    for v in (0, 1, 2):
        yield f"DescribeQuorum v{v}", 55, v, {"topics": QUORUM}
    yield "DescribeQuorum other topic", 55, 2, {"topics": [{"topic_name": "x", "partitions": [{"partition_index": 0}]}]}
    yield "DescribeQuorum two partitions", 55, 1, {"topics": [
        {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}, {"partition_index": 1}]}]}
    yield "DescribeQuorum nothing", 55, 2, {"topics": []}
    yield "ListConfigResources v0", 74, 0, {}
    for types in ([2], [4, 8], [8, 4], [3], [0, 2]):
        yield f"ListConfigResources v1 {types}", 74, 1, {"resource_types": types}
    dtp = {"response_partition_limit": 2000, "cursor": None}
    named = [{"name": "zz-missing"}, {"name": "ctp-b"}, {"name": "ctp.bad*"}, {"name": "ctp-a"}]
    yield "DescribeTopicPartitions named", 75, 0, dict(dtp, topics=named)
    yield "DescribeTopicPartitions named, limit 1", 75, 0, dict(dtp, topics=named, response_partition_limit=1)
    yield "DescribeTopicPartitions named, limit 4", 75, 0, dict(dtp, topics=named, response_partition_limit=4)
    yield "DescribeTopicPartitions named from a cursor", 75, 0, dict(
        dtp, topics=named, response_partition_limit=2, cursor={"topic_name": "ctp-a", "partition_index": 2})
    yield "DescribeTopicPartitions all from a cursor", 75, 0, dict(
        dtp, topics=[], response_partition_limit=3, cursor={"topic_name": "ctp-a", "partition_index": 1})
    yield "DescribeTopicPartitions cursor past the end", 75, 0, dict(
        dtp, topics=[{"name": "ctp-b"}], cursor={"topic_name": "ctp-b", "partition_index": 7})
    yield "DescribeTopicPartitions cursor not named", 75, 0, dict(
        dtp, topics=[{"name": "ctp-b"}], cursor={"topic_name": "ctp-a", "partition_index": 0})
    yield "DescribeTopicPartitions negative cursor", 75, 0, dict(
        dtp, topics=[{"name": "ctp-b"}], cursor={"topic_name": "ctp-b", "partition_index": -1})
    yield "DescribeTopicPartitions limit 0", 75, 0, dict(dtp, topics=[{"name": "ctp-a"}], response_partition_limit=0)


def _mine(r: dict, name: str) -> dict:
    """ListConfigResources lists every topic and group of the node: only this test's topics compare."""
    if name.startswith("ListConfigResources"):
        r["config_resources"] = [c for c in r["config_resources"]
                                 if c["resource_type"] != 2 or c["resource_name"] in TOPICS]
        r["config_resources"] = [c for c in r["config_resources"] if c["resource_type"] != 32]
    return r


def test_cluster_self_description_answers_as_kafka(broker, kafka_node):
    _make_topics(kafka_node.port)
    _make_topics(broker.port)
    mismatches = []
    for name, key, version, body in _requests():
        theirs = _norm(_mine(_ask(kafka_node.port, key, version, body), name))
        ours = _norm(_mine(_ask(broker.port, key, version, body), name))
        if theirs != ours:
            mismatches.append(f"{name}:\n  Kafka: {theirs}\n  pylog: {ours}")
    assert not mismatches, "\n".join(mismatches)


def test_list_config_resources_lists_this_nodes_topics(broker):
    _make_topics(broker.port)
    r = _ask(broker.port, 74, 1, {"resource_types": []})
    assert r["error_code"] == 0
    kinds = [c["resource_type"] for c in r["config_resources"]]
    assert kinds == sorted(kinds, key=[16, 32, 8, 4, 2].index)
    assert {c["resource_name"] for c in r["config_resources"] if c["resource_type"] == 2} >= set(TOPICS)


def _describe_lines(port: int, topic: str) -> list[str]:
    p = run_main("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", f"127.0.0.1:{port}",
                 "--describe", "--topic", topic)
    assert p.returncode == 0, p.stderr
    return [re.sub(r"TopicId: \S+|Configs: .*", "", line) for line in p.stdout.splitlines()]


def test_kafka_topics_describe_prints_elr_as_against_kafka(broker, kafka_node):
    _make_topics(kafka_node.port)
    _make_topics(broker.port)
    theirs, ours = _describe_lines(kafka_node.port, "ctp-a"), _describe_lines(broker.port, "ctp-a")
    assert any("\tElr: \tLastKnownElr: " in line for line in ours), ours
    assert ours == theirs
