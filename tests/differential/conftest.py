"""One Apache Kafka node and one pylog broker for the whole differential run, with the same
settings, users and single-ACL principals (diff_peers.py), plus the shared topic `dt`."""
from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from diff_peers import ACL_PRINCIPALS, Peer, acl_creation, grant_acls, start_kafka, start_pylog  # noqa: E402
from diff_runner import _batch as batch, create_topics  # noqa: E402
from support.waiting import wait_until  # noqa: E402


def ok(produce_answer: dict):
    """The answer when its one partition was written, else None (a leader still being elected)."""
    return produce_answer if produce_answer["responses"][0]["partition_responses"][0]["error_code"] == 0 else None

SHARED_TOPIC = "dt"


@pytest.fixture(scope="session")
def peers(tmp_path_factory):
    """{"kafka": Peer, "pylog": Peer}, ready: ACLs granted, `dt` created with 3 records; both at
    their default transaction.version (2)."""
    yield from _peers(tmp_path_factory.mktemp("differential"), None)


@pytest.fixture(scope="session")
def peers_tv1(tmp_path_factory):
    """The same pair, both started at transaction.version 1 (Kafka formatted with
    `--feature transaction.version=1`, pylog started with it): scenarios with
    "transaction_version": 1 run here."""
    yield from _peers(tmp_path_factory.mktemp("differential-tv1"), 1)


def _peers(root, transaction_version):
    # the two start, get ready and stop side by side: one after the other was twice the wait. Kafka
    # starts from this thread: its JVM dies with the thread that started it (PR_SET_PDEATHSIG)
    with ThreadPoolExecutor(1) as pool:
        pylog_start = pool.submit(start_pylog, root / "pylog", transaction_version=transaction_version)
        node, kport = start_kafka(root / "kafka", transaction_version=transaction_version)
        broker, pport = pylog_start.result()
    out = {"kafka": Peer("kafka", "127.0.0.1", kport), "pylog": Peer("pylog", "127.0.0.1", pport)}
    creations = [acl_creation(p, r, o) for p, (r, o) in ACL_PRINCIPALS.items()]

    def ready(peer: Peer) -> None:
        grant_acls(peer, creations)
        # its records carry a fixed 2023 timestamp: Kafka's time retention (7 days, checked every
        # 5 minutes) would delete them in the middle of a long run
        create_topics(peer, {SHARED_TOPIC: 1}, {SHARED_TOPIC: {"retention.ms": -1}})
        r = wait_until(lambda: ok(peer.client("admin").call(0, 9, {
            "transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": [
                {"name": SHARED_TOPIC, "partition_data": [
                    {"index": 0, "records": batch({"values": ["a", "b", "c"]})}]}]})), 60)
        # both at the transaction.version the scenarios expect (Kafka's default level is 2)
        finalized = {f["name"]: f["max_version_level"] for f in peer.client("admin").call(18, 3, {
            "client_software_name": "pylog-differential", "client_software_version": "1"})["finalized_features"]}
        assert finalized.get("transaction.version") == (transaction_version or 2), (peer.name, finalized)
        # both coordinators loaded before the first scenario asks for them
        for key_type, key in ((0, "warm-up"), (1, "warm-up")):
            wait_until(lambda: peer.client("admin").call(10, 4, {"key_type": key_type, "coordinator_keys": [key]})[
                "coordinators"][0]["error_code"] == 0, 60)

    try:
        with ThreadPoolExecutor(1) as pool:
            kafka_ready = pool.submit(ready, out["kafka"])
            ready(out["pylog"])
            kafka_ready.result()
        yield out
    finally:
        for peer in out.values():
            peer.close()
        with ThreadPoolExecutor(1) as pool:
            kafka_stop = pool.submit(node.stop)
            broker.stop_clean()
            kafka_stop.result()
