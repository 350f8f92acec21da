"""Transactional APIs at each version, raw requests to pylog and a Kafka 4.4.0 node in one test:

- the transaction state records a level-2 transaction (opened by a Produce v12 batch) ends with:
  Kafka 4.4 writes clientTransactionVersion 0 into `__transaction_state` for an EndTxn below v5
  and 2 for EndTxn v5, and so must pylog (Kafka reads it back at retries and when
  InitProducerId aborts an open transaction);
- the error each transactional API answers for an old producer epoch at every version it has
  (INVALID_PRODUCER_EPOCH or PRODUCER_FENCED: librdkafka treats the first as abortable in a
  TxnOffsetCommit and the second as fatal).
"""
from __future__ import annotations

import socket
import time
from types import SimpleNamespace

import pytest

from support.broker_fixtures import call, read_to_end
from pylog.core.protocol import txn_log
from pylog.core.records import BatchBuilder

pytestmark = pytest.mark.timeout(600)


def _ask(port: int, key: int, version: int, body: dict) -> dict:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        return call(s, key, version, body)


def _codes(r) -> list:
    out = []

    def walk(v):
        if isinstance(v, dict):
            for k, x in v.items():
                if k == "error_code" or k == "partition_error_code":
                    out.append(x)
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(r)
    return out


def _ask_retry(port: int, key: int, version: int, body: dict) -> dict:
    """As a client does: again while the coordinator loads or the last transaction's markers are
    still being written (CONCURRENT_TRANSACTIONS)."""
    deadline = time.monotonic() + 90
    while True:
        r = _ask(port, key, version, body)
        if not set(_codes(r)) & {14, 15, 16, 51} or time.monotonic() > deadline:
            return r
        time.sleep(0.3)


def _topic(port: int, topic: str):
    _ask(port, 19, 7, {"topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1, "assignments": [],
                                   "configs": []}], "timeout_ms": 30000, "validate_only": False})
    deadline = time.monotonic() + 60
    while True:
        md = _ask(port, 3, 12, {"topics": [{"name": topic, "topic_id": None}], "allow_auto_topic_creation": False,
                                "include_topic_authorized_operations": False})
        t = md["topics"][0]
        if t["error_code"] == 0 and t["partitions"] and t["partitions"][0]["leader_id"] >= 0:
            return t["topic_id"]
        assert time.monotonic() < deadline, md
        time.sleep(0.2)


def _init(port: int, tid: str, times: int = 1) -> tuple[int, int]:
    deadline = time.monotonic() + 90
    while _ask(port, 10, 4, {"key_type": 1, "coordinator_keys": [tid]})["coordinators"][0]["error_code"]:
        assert time.monotonic() < deadline
        time.sleep(0.5)
    for _ in range(times):
        while True:
            r = _ask(port, 22, 5, {"transactional_id": tid, "transaction_timeout_ms": 60000, "producer_id": -1,
                                   "producer_epoch": -1})
            if r["error_code"] not in (14, 15, 16, 51):  # coordinator not ready, concurrent transactions: retry
                break
            assert time.monotonic() < deadline, r
            time.sleep(0.5)
        assert r["error_code"] == 0, r
    return r["producer_id"], r["producer_epoch"]


def _batch(pid: int, epoch: int, seq: int) -> bytes:
    b = BatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True)
    b.append(1_700_000_000_000, b"k", b"v", [])
    return bytes(b.build())


def _produce_v12(port: int, tid: str, topic: str, pid: int, epoch: int, seq: int) -> None:
    r = _ask_retry(port, 0, 12, {"transactional_id": tid, "acks": -1, "timeout_ms": 30000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": _batch(pid, epoch, seq)}]}]})
    assert _codes(r) == [0], r


def _states(bootstrap: str, tid: str) -> list:
    """(status, clientTransactionVersion) of every `__transaction_state` record of `tid`, in order."""
    info = _ask(int(bootstrap.rsplit(":", 1)[1]), 3, 12, {
        "topics": [{"name": "__transaction_state", "topic_id": None}], "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": False})["topics"][0]
    msgs = read_to_end(SimpleNamespace(bootstrap=bootstrap), "__transaction_state",
                       range(len(info["partitions"])), "read_uncommitted")
    out = []
    for m in sorted(msgs, key=lambda m: (m.partition(), m.offset())):
        if m.value() is not None and txn_log.decode_key(m.key()) == tid:
            v = txn_log.decode_value(m.value())[1]
            out.append((txn_log.TxnState(v["transaction_status"]).kafka_name, v["client_transaction_version"]))
    return out


def _settled(port: int, tid: str) -> None:
    """Until the last transaction's markers are written (Kafka writes them after answering EndTxn)."""
    deadline = time.monotonic() + 60
    while True:
        st = _ask(port, 65, 0, {"transactional_ids": [tid]})["transaction_states"][0]["transaction_state"]
        if st in ("CompleteCommit", "CompleteAbort", "Empty"):
            return
        assert time.monotonic() < deadline, st
        time.sleep(0.2)


def _transactions(port: int, tid: str, topic: str) -> None:
    """A level-2 transaction ended by EndTxn v4, then one ended by EndTxn v5, then an abort by v3."""
    pid, epoch = _init(port, tid)
    _produce_v12(port, tid, topic, pid, epoch, 0)
    assert _ask_retry(port, 26, 4, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                              "committed": True})["error_code"] == 0
    _settled(port, tid)
    _produce_v12(port, tid, topic, pid, epoch, 1)
    r = _ask_retry(port, 26, 5, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch, "committed": True})
    assert r["error_code"] == 0, r
    pid, epoch = r["producer_id"], r["producer_epoch"]
    _settled(port, tid)
    _produce_v12(port, tid, topic, pid, epoch, 0)
    assert _ask_retry(port, 26, 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                              "committed": False})["error_code"] == 0


def test_client_transaction_version_recorded_as_kafka(broker, kafka_node):
    tid, topic = f"ctv-{int(time.time())}", "ctv46"
    for port in (kafka_node.port, broker.port):
        _topic(port, topic)
        _transactions(port, tid, topic)
    ours, theirs = _states(broker.bootstrap, tid), _states(kafka_node.bootstrap, tid)
    assert ("PrepareCommit", 0) in ours and ("PrepareCommit", 2) in ours
    assert ours == theirs, f"Kafka {theirs}\n pylog {ours}"


# ---- an old producer epoch, API by API and version by version ---------------------------

def _old_epoch_requests(tid: str, pid: int, old: int, topic: str, topic_id, group: str):
    for v in range(0, 4):
        yield f"AddPartitionsToTxn v{v}", 24, v, {
            "v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
            "v3_and_below_producer_epoch": old, "v3_and_below_topics": [{"name": topic, "partitions": [0]}]}
    for v in range(0, 5):
        yield f"AddOffsetsToTxn v{v}", 25, v, {"transactional_id": tid, "producer_id": pid, "producer_epoch": old,
                                                "group_id": group}
    for v in range(0, 7):
        yield f"TxnOffsetCommit v{v}", 28, v, {
            "transactional_id": tid, "group_id": group, "producer_id": pid, "producer_epoch": old,
            "generation_id_or_member_epoch": -1, "member_id": "", "group_instance_id": None,
            "topics": [{"name": topic, "topic_id": topic_id, "partitions": [
                {"partition_index": 0, "committed_offset": 0, "committed_leader_epoch": -1,
                 "committed_metadata": ""}]}]}
    for v in range(3, 14):
        yield f"Produce v{v}", 0, v, {"transactional_id": tid, "acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": topic, "topic_id": topic_id, "partition_data": [{"index": 0, "records": _batch(pid, old, 0)}]}]}
    for v in range(0, 6):
        yield f"EndTxn v{v}", 26, v, {"transactional_id": tid, "producer_id": pid, "producer_epoch": old,
                                      "committed": True}
    for v in range(3, 6):  # an id without an epoch, then the epoch before the current one
        yield f"InitProducerId v{v} no epoch", 22, v, {"transactional_id": tid, "transaction_timeout_ms": 60000,
                                                       "producer_id": pid, "producer_epoch": -1}
    for v in range(3, 6):
        yield f"InitProducerId v{v}", 22, v, {"transactional_id": tid, "transaction_timeout_ms": 60000,
                                              "producer_id": pid, "producer_epoch": old}


@pytest.mark.parametrize("ongoing", [False, True], ids=["empty", "ongoing"])
def test_old_epoch_errors_as_kafka(broker, kafka_node, ongoing):
    u = f"{int(time.time())}-{int(ongoing)}"
    tid, topic, group = f"oe-{u}", f"oe-{u}", f"oe-{u}"
    answers = {}
    for port in (kafka_node.port, broker.port):
        topic_id = _topic(port, topic)
        pid, epoch = _init(port, tid, times=2)  # the first producer's epoch is now old
        if ongoing:
            r = _ask(port, 24, 3, {"v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
                                   "v3_and_below_producer_epoch": epoch,
                                   "v3_and_below_topics": [{"name": topic, "partitions": [0]}]})
            assert set(_codes(r)) == {0}, r
        deadline = time.monotonic() + 90  # the group's coordinator (Kafka creates __consumer_offsets)
        while _ask(port, 10, 4, {"key_type": 0, "coordinator_keys": [group]})["coordinators"][0]["error_code"]:
            assert time.monotonic() < deadline
            time.sleep(0.5)
        answers[port] = [(label, _codes(_ask(port, key, v, body)))
                         for label, key, v, body in _old_epoch_requests(tid, pid, epoch - 1, topic, topic_id, group)
                         if not (ongoing and key == 22)]  # its abort's markers complete at Kafka's pace
    differ = [f"{label}: Kafka {k}, pylog {p}" for (label, k), (_, p) in
              zip(answers[kafka_node.port], answers[broker.port]) if k != p]
    assert not differ, "\n".join(differ)
