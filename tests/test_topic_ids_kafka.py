"""Requests that name topics by id (Fetch v13+, Metadata v10+, DeleteTopics v6+), answered as
Apache Kafka answers them: a known id, a partition its topic lacks, an id no topic has, the id
of a deleted topic. pylog names each id in dispatch from the requests' declared facts
(broker/api/topic_ids.py); the handlers and the authorizer read names.

The same requests run against Apache Kafka (`kafka_node`) and pylog's broker; answers are
compared by topic id (and partition), since the order of topics in an answer is not a promise.
"""
from __future__ import annotations

import socket
import uuid

import pytest

from support.broker_fixtures import BrokerProcess, call
from support.waiting import wait_until

CREATE, DELETE, FETCH, METADATA = 19, 20, 1, 3
UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID = 3, 100


@pytest.fixture(params=["kafka", "pylog"])
def peer(request, tmp_path):
    """Apache Kafka 4.4.0 or a pylog broker (each has .port)."""
    if request.param == "kafka":
        yield request.getfixturevalue("kafka_node")
        return
    b = BrokerProcess(tmp_path / "data").start()
    yield b
    b.stop_clean()


def _create(s, name: str, partitions: int) -> uuid.UUID:
    r = call(s, CREATE, 7, {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1,
                                        "assignments": [], "configs": []}], "timeout_ms": 30000})
    assert r["topics"][0]["error_code"] == 0, r

    def led():  # Kafka answers CreateTopics before its partitions have leaders
        t = call(s, METADATA, 12, {"topics": [{"name": name, "topic_id": None}],
                                   "allow_auto_topic_creation": False})["topics"][0]
        return t["error_code"] == 0 and len(t["partitions"]) == partitions and all(
            p["leader_id"] >= 0 for p in t["partitions"])
    wait_until(led, 60, f"leaders for {name}")
    return r["topics"][0]["topic_id"]


def _fetch(s, topics: list, version: int) -> dict:
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic_id": tid, "partitions": [
                {"partition": p, "current_leader_epoch": -1, "fetch_offset": 0, "last_fetched_epoch": -1,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 20} for p in parts]}
                for tid, parts in topics]}
    r = call(s, FETCH, version, body)
    assert r["error_code"] == 0, r
    return {(t["topic_id"], p["partition_index"]): p["error_code"] for t in r["responses"] for p in t["partitions"]}


@pytest.mark.parametrize("version", [13, 17])
def test_fetch_by_topic_id_answers_each_partition_as_kafka_does(peer, version):
    s = socket.create_connection(("127.0.0.1", peer.port), timeout=60)
    try:
        tag = uuid.uuid4().hex[:8]
        live, gone = _create(s, f"fid-live-{tag}", 2), _create(s, f"fid-gone-{tag}", 1)
        r = call(s, DELETE, 6, {"topics": [{"name": None, "topic_id": gone}], "timeout_ms": 30000})
        assert r["responses"][0]["error_code"] == 0, r
        nobody = uuid.uuid4()
        got = wait_until(lambda: (lambda a: a if a[(gone, 0)] == UNKNOWN_TOPIC_ID else None)(
            _fetch(s, [(live, [0, 1, 5]), (nobody, [0]), (gone, [0])], version)), 60,
            "the deleted topic's id to be unknown")
        assert got == {(live, 0): 0, (live, 1): 0, (live, 5): UNKNOWN_TOPIC_OR_PARTITION,
                       (nobody, 0): UNKNOWN_TOPIC_ID, (gone, 0): UNKNOWN_TOPIC_ID}
    finally:
        s.close()


def test_metadata_and_delete_topics_by_id_answer_as_kafka_does(peer):
    """Metadata v12 and DeleteTopics v6 name topics by id too: a known id gets its topic's name,
    an id no topic has UNKNOWN_TOPIC_ID, in its place."""
    s = socket.create_connection(("127.0.0.1", peer.port), timeout=60)
    try:
        name = f"fid-meta-{uuid.uuid4().hex[:8]}"
        tid, nobody = _create(s, name, 1), uuid.uuid4()
        md = call(s, METADATA, 12, {"topics": [{"name": None, "topic_id": nobody}, {"name": None, "topic_id": tid}],
                                    "allow_auto_topic_creation": False})
        got = [(t["topic_id"], t["name"], t["error_code"]) for t in md["topics"]]
        assert sorted(got, key=str) == sorted([(nobody, None, UNKNOWN_TOPIC_ID), (tid, name, 0)], key=str), got
        r = call(s, DELETE, 6, {"topics": [{"name": None, "topic_id": nobody}, {"name": None, "topic_id": tid}],
                                "timeout_ms": 30000})
        got = [(t["topic_id"], t["name"], t["error_code"]) for t in r["responses"]]
        assert sorted(got, key=str) == sorted([(nobody, None, UNKNOWN_TOPIC_ID), (tid, name, 0)], key=str), got
    finally:
        s.close()
