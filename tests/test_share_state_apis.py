"""The share-group state APIs (InitializeShareGroupState, ReadShareGroupState,
WriteShareGroupState, DeleteShareGroupState, ReadShareGroupStateSummary) as Kafka 4.4's share
coordinator serves them: the same requests, in order, to pylog and to a Kafka 4.4.0 node in one
test, and the answers must be equal (FindCoordinator for the share-partition key first, as a
share-partition leader asks). Then the state written through them survives a kill -9 of pylog.

One difference is known and left out of the sequence: Kafka's coordinator keeps a batch written as
ACQUIRED (1) as it was written; pylog keeps the share-partition the leader works on, which stores
acquired records as AVAILABLE with their delivery count (so after a crash they come back).
"""
from __future__ import annotations

import socket
import time
import uuid

import pytest

from support.broker_fixtures import call
from pylog.core.records.kafka_types import uuid_text

pytestmark = pytest.mark.timeout(600)

UNKNOWN = uuid.UUID("6f1d3c5e-0a4b-4d7e-9c2f-8b1a2d3e4f50")
TOPIC = "sst"


def _ask(port: int, key: int, version: int, body: dict) -> dict:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        return call(s, key, version, body)


def _topic_id(port: int) -> uuid.UUID:
    _ask(port, 19, 7, {"topics": [{"name": TOPIC, "num_partitions": 2, "replication_factor": 1, "assignments": [],
                                   "configs": []}], "timeout_ms": 30000, "validate_only": False})
    deadline = time.monotonic() + 60
    while True:
        md = _ask(port, 3, 12, {"topics": [{"name": TOPIC, "topic_id": None}], "allow_auto_topic_creation": False,
                                "include_topic_authorized_operations": False})
        t = md["topics"][0]
        if t["error_code"] == 0 and all(p["leader_id"] >= 0 for p in t["partitions"]):
            return t["topic_id"]
        assert time.monotonic() < deadline, md
        time.sleep(0.2)


def _coordinator_ready(port: int, key: str) -> dict:
    """FindCoordinator for a share-partition key, until the coordinator is there (Kafka creates
    `__share_group_state` on the first lookup)."""
    deadline = time.monotonic() + 90
    while True:
        r = _ask(port, 10, 6, {"key_type": 2, "coordinator_keys": [key]})["coordinators"][0]
        if r["error_code"] == 0:
            return r
        assert time.monotonic() < deadline, r
        time.sleep(0.5)


def _b(first, last, state, count):
    return {"first_offset": first, "last_offset": last, "delivery_state": state, "delivery_count": count}


def _read(p, le):
    return {"partition": p, "leader_epoch": le}


def _write(p, se, le, start, batches, complete=-1):
    return {"partition": p, "state_epoch": se, "leader_epoch": le, "start_offset": start,
            "delivery_complete_count": complete, "state_batches": batches}


def _init(p, se, start):
    return {"partition": p, "state_epoch": se, "start_offset": start}


# (label, api key, version, partitions, on the unknown topic id)
STEPS = [
    ("read before initialize", 84, 0, [_read(0, 0)], False),
    ("summary before initialize", 87, 1, [_read(0, 0)], False),
    ("summary v0 before initialize", 87, 0, [_read(0, 0)], False),
    ("write before initialize", 85, 1, [_write(0, 0, 0, 0, [])], False),
    ("initialize", 83, 0, [_init(0, 0, 5)], False),
    ("read", 84, 0, [_read(0, 0)], False),
    ("initialize again at the same state epoch", 83, 0, [_init(0, 0, 6)], False),
    ("initialize at a newer state epoch", 83, 0, [_init(0, 1, 6)], False),
    ("write", 85, 1, [_write(0, 1, 2, 6, [_b(6, 8, 0, 1), _b(9, 9, 2, 1)], complete=1)], False),
    ("read at an older leader epoch", 84, 0, [_read(0, 1)], False),
    ("summary", 87, 1, [_read(0, 3)], False),
    ("summary v0", 87, 0, [_read(0, 3)], False),
    ("write at an older state epoch", 85, 0, [_write(0, 0, 3, 7, [])], False),
    ("write at an older leader epoch", 85, 1, [_write(0, 1, 1, 7, [])], False),
    ("write merging batches", 85, 1, [_write(0, 1, 3, 7, [_b(8, 8, 4, 2), _b(10, 12, 0, 1)])], False),
    ("read merged", 84, 0, [_read(0, 3)], False),
    ("write keeping the start offset", 85, 1, [_write(0, 2, 3, -1, [_b(9, 9, 2, 3)])], False),
    ("read", 84, 0, [_read(0, 3)], False),
    ("read at leader epoch -1", 84, 0, [_read(0, -1)], False),
    ("write at leader epoch -1", 85, 0, [_write(0, 1, -1, 7, [])], False),
    ("initialize at state epoch -1", 83, 0, [_init(0, -1, 0)], False),
    ("initialize at an older state epoch", 83, 0, [_init(0, 0, 4)], False),
    ("write past the batches", 85, 1, [_write(0, 1, 6, 13, [_b(3, 4, 0, 1)], complete=0)], False),
    ("read", 84, 0, [_read(0, 6)], False),
    ("read a missing partition", 84, 0, [_read(7, 0)], False),
    ("read a negative partition", 84, 0, [_read(-1, 0)], False),
    ("write a missing partition", 85, 0, [_write(7, 0, 0, 0, [])], False),
    ("initialize a missing partition", 83, 0, [_init(7, 0, 0)], False),
    ("delete a missing partition", 86, 0, [{"partition": 7}], False),
    ("summary of a missing partition", 87, 1, [_read(7, 0)], False),
    ("delete", 86, 0, [{"partition": 0}], False),
    ("read after delete", 84, 0, [_read(0, 0)], False),
    ("summary after delete", 87, 1, [_read(0, 0)], False),
    ("delete again", 86, 0, [{"partition": 0}], False),
    ("initialize two partitions", 83, 0, [_init(0, 0, 3), _init(1, 0, 4)], False),
    ("read two partitions", 84, 0, [_read(0, 0), _read(1, 0)], False),
    ("read an unknown topic", 84, 0, [_read(0, 0)], True),
    ("write an unknown topic", 85, 0, [_write(0, 0, 0, 0, [])], True),
    ("initialize an unknown topic", 83, 0, [_init(0, 0, 0)], True),
    ("delete an unknown topic", 86, 0, [{"partition": 0}], True),
    ("summary of an unknown topic", 87, 1, [_read(0, 0)], True),
]


LOADING = {14, 15, 16}  # COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR


def _ask_ready(port: int, key: int, version: int, body: dict) -> dict:
    """Each `__share_group_state` partition's coordinator loads on its own: ask again while it does."""
    deadline = time.monotonic() + 90
    while True:
        r = _ask(port, key, version, body)
        codes = {p["error_code"] for t in r["results"] for p in t["partitions"]}
        if not codes & LOADING or time.monotonic() > deadline:
            return r
        time.sleep(0.5)


def _norm(r: dict, tid) -> dict:
    for t in r["results"]:
        t["topic_id"] = "<topic>" if t["topic_id"] == tid else "<unknown>"
    return r


def test_share_state_apis_answer_as_kafka(broker, kafka_node):
    group = f"sst-{int(time.time())}"
    peers = []
    for port in (kafka_node.port, broker.port):
        tid = _topic_id(port)
        found = _coordinator_ready(port, f"{group}:{uuid_text(tid)}:0")
        assert found["port"] == port
        peers.append((port, tid))
    mismatches = []
    for label, key, version, parts, unknown in STEPS:
        answers = []
        for port, tid in peers:
            body = {"group_id": group, "topics": [{"topic_id": UNKNOWN if unknown else tid, "partitions": parts}]}
            answers.append(_norm(_ask_ready(port, key, version, body), tid))
        if answers[0] != answers[1]:
            mismatches.append(f"{label}:\n  Kafka: {answers[0]}\n  pylog: {answers[1]}")
    assert not mismatches, "\n".join(mismatches)


def test_find_coordinator_share_keys_as_kafka(broker, kafka_node):
    for port in (kafka_node.port, broker.port):
        _topic_id(port)
    for key, version in (("g:x:0", 6), ("g", 6), ("g:AAAAAAAAAAAAAAAAAAAAAA:x", 6), ("g:AAAAAAAAAAAAAAAAAAAAAA:0", 5)):
        theirs = _ask(kafka_node.port, 10, version, {"key_type": 2, "coordinator_keys": [key]})["coordinators"]
        ours = _ask(broker.port, 10, version, {"key_type": 2, "coordinator_keys": [key]})["coordinators"]
        assert [c["error_code"] for c in ours] == [c["error_code"] for c in theirs], (key, theirs, ours)


def test_state_written_through_the_apis_survives_kill_9(broker_factory, tmp_path):
    b = broker_factory(tmp_path / "d")
    tid = _topic_id(b.port)
    _coordinator_ready(b.port, f"g:{uuid_text(tid)}:1")
    body = {"group_id": "g", "topics": [{"topic_id": tid, "partitions": [_init(1, 2, 10)]}]}
    assert _ask(b.port, 83, 0, body)["results"][0]["partitions"][0]["error_code"] == 0
    w = {"group_id": "g", "topics": [{"topic_id": tid, "partitions": [
        _write(1, 2, 1, 10, [_b(10, 11, 2, 1), _b(12, 14, 0, 2)])]}]}
    assert _ask(b.port, 85, 1, w)["results"][0]["partitions"][0]["error_code"] == 0
    b.kill9()
    b = broker_factory(tmp_path / "d")
    r = _ask(b.port, 84, 0, {"group_id": "g", "topics": [{"topic_id": tid, "partitions": [_read(1, 1)]}]})
    got = r["results"][0]["partitions"][0]
    assert (got["error_code"], got["state_epoch"], got["start_offset"]) == (0, 2, 12)
    assert got["state_batches"] == [_b(12, 14, 0, 2)]
