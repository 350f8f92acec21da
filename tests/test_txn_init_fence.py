"""InitProducerId for a transactional id whose transaction is open, and ListTransactions with a
bad pattern: pylog's broker answers as Apache Kafka 4.3.1 does, compared over the raw protocol.

Kafka fences the open transaction (epoch + 1), aborts it and answers CONCURRENT_TRANSACTIONS;
the client's retry bumps the epoch again. The fenced producer's KIP-360 re-init is refused.
"""
from __future__ import annotations

import socket
from types import SimpleNamespace

import pytest

from support.broker_fixtures import BrokerProcess, call
from support.txn_clients import create, open_raw_txn
from support.waiting import wait_until

from pylog.core.errors import ErrorCode


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("txn-fence") / "data").start()
    yield b
    b.stop_clean()


def sock(peer) -> socket.socket:
    host, port = peer.bootstrap.rsplit(":", 1)
    return socket.create_connection((host, int(port)), timeout=15)


def init(peer, tid, pid=-1, epoch=-1) -> dict:
    with sock(peer) as s:
        return call(s, 22, 4, {"transactional_id": tid, "transaction_timeout_ms": 60000,
                               "producer_id": pid, "producer_epoch": epoch})


def fence_sequence(peer, topic: str) -> dict:
    """Open a transaction, then init the same transactional id from a new producer until it is
    answered; what each step saw, epochs relative to the first producer's."""
    create(peer, topic)
    tid = f"{topic}-id"

    def coordinator_ready():  # Kafka creates __transaction_state on the first lookup
        with sock(peer) as s:
            return call(s, 10, 3, {"key": tid, "key_type": 1})["error_code"] == ErrorCode.NONE
    wait_until(coordinator_ready, timeout=60, what="the transaction coordinator", step=0.2)
    wait_until(lambda: init(peer, f"{tid}-probe")["error_code"] == ErrorCode.NONE, timeout=60,
               what="InitProducerId served", step=0.2)
    pid, e0 = open_raw_txn(peer, tid, topic, b"open")
    codes = []

    def retry():
        r = init(peer, tid)
        if not codes or codes[-1] != r["error_code"]:
            codes.append(r["error_code"])
        return r if r["error_code"] != ErrorCode.CONCURRENT_TRANSACTIONS else None
    final = wait_until(retry, timeout=60, what="InitProducerId answered", step=0.1)
    fenced = init(peer, tid, pid, e0)  # the first producer's KIP-360 re-init
    with sock(peer) as s:
        prods = call(s, 61, 0, {"topics": [{"name": topic, "partition_indexes": [0]}]})
        desc = call(s, 65, 0, {"transactional_ids": [tid]})["transaction_states"][0]
    ap = prods["topics"][0]["partitions"][0]["active_producers"]
    return {
        "first_epoch": e0,
        "codes": [ErrorCode(c).name for c in codes],
        "same_producer_id": final["producer_id"] == pid,
        "new_epoch": final["producer_epoch"] - e0,
        "fenced_reinit": ErrorCode(fenced["error_code"]).name,
        # the ABORT marker's epoch as the partition's producer state holds it
        "marker_epoch": [(p["producer_id"] == pid, p["producer_epoch"] - e0, p["current_txn_start_offset"])
                         for p in ap],
        "state": (desc["transaction_state"], desc["producer_epoch"] - e0),
    }


def bad_pattern(peer) -> str:
    with sock(peer) as s:
        r = call(s, 66, 2, {"state_filters": [], "producer_id_filters": [], "duration_filter": -1,
                            "transactional_id_pattern": "[unclosed"})
    return ErrorCode(r["error_code"]).name


def peer(node):
    """Apache Kafka's node with the address attributes the raw-protocol helpers use."""
    return SimpleNamespace(host="127.0.0.1", port=node.port, bootstrap=node.bootstrap)


@pytest.fixture(scope="module")
def pylog_seen(broker):
    return fence_sequence(broker, "fence-open"), bad_pattern(broker)


def test_init_with_an_open_transaction_as_apache_kafka(pylog_seen, kafka_node):
    mine, _ = pylog_seen
    assert mine["codes"][0] == "CONCURRENT_TRANSACTIONS"
    assert mine == fence_sequence(peer(kafka_node), "fence-open")


def test_list_transactions_bad_pattern_as_apache_kafka(pylog_seen, kafka_node):
    _, mine = pylog_seen
    assert mine == "INVALID_REGULAR_EXPRESSION"
    assert mine == bad_pattern(peer(kafka_node))
