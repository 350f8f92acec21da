"""A Fetch answer is Kafka's byte slice of the log (LogSegment.read / FileRecords.slice), on Apache
Kafka and on pylog alike: the same batches written to both, then fetched with budgets below, at and
above batch boundaries, from a batch's first offset and from inside it, and across partitions under
the request's max_bytes. The answers must be the same bytes: the first batch whole even over the
partition's budget (minOneMessage), then the budget's bytes ending in a partial batch; a later
partition whose first batch does not fit its share is answered empty (firstEntryIncomplete)."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from support import broker_fixtures, kafka_peer  # noqa: F401 - tier marks: both brokers run here

from diff_peers import ADMIN
from diff_runner import _batch, create_topics
from support.waiting import wait_until

BROKERS = ["kafka", "pylog"]
TOPIC, MULTI = "fs-slices", "fs-slices-3"
# record sizes of each batch: 2-4 records of 100 B to 6 KB, so batches of ~300 B to ~18 KB
BATCHES = [[100, 200], [3000, 3000, 3000], [50, 60, 70, 80], [6000, 6000, 6000], [500], [1200, 1300],
           [4000, 100, 4000], [90, 90]]
BUDGETS = [1, 100, 350, 1000, 4096, 9000, 9500, 20000, 40000, 1 << 20]


def _written(answer: dict) -> dict | None:
    return answer if answer["responses"][0]["partition_responses"][0]["error_code"] == 0 else None


def produce(peer, topic: str, partition: int) -> None:
    admin = peer.client(ADMIN)
    for i, sizes in enumerate(BATCHES):
        records = _batch({"values": [bytes([97 + (i + j) % 26]) * n for j, n in enumerate(sizes)],
                          "keys": [f"k{i}-{j}" for j in range(len(sizes))]})
        body = {"transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": [
            {"name": topic, "partition_data": [{"index": partition, "records": records}]}]}
        # Kafka answers NOT_LEADER until the new partition's leadership reaches its broker
        wait_until(lambda: _written(admin.call(0, 9, body)), 60, f"{peer.name}: produce to {topic}-{partition}")


def fetch(peer, partitions: list[tuple[str, int, int, int]], max_bytes: int) -> list[tuple[int, int, bytes]]:
    """[(partition, error code, records bytes with each batch's partition leader epoch zeroed)]
    for (topic, partition, fetch offset, partition max bytes) in request order."""
    topics: dict[str, list] = {}
    for t, p, off, pmb in partitions:
        topics.setdefault(t, []).append({"partition": p, "current_leader_epoch": -1, "fetch_offset": off,
                                         "log_start_offset": -1, "partition_max_bytes": pmb})
    r = peer.client(ADMIN).call(1, 12, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": max_bytes, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
        "forgotten_topics_data": [], "rack_id": ""})
    out = []
    for t in r["responses"]:
        for p in t["partitions"]:
            out.append((p["partition_index"], p["error_code"], _without_epochs(bytes(p["records"] or b""))))
    return out


def _without_epochs(data: bytes) -> bytes:
    """The partition leader epoch (bytes 12-15 of a batch) is each broker's own: zero it in every batch
    whose header is in the answer."""
    buf = bytearray(data)
    pos = 0
    while pos + 16 <= len(buf):
        buf[pos + 12:pos + 16] = b"\0\0\0\0"
        pos += 12 + int.from_bytes(buf[pos + 8:pos + 12], "big")
    return bytes(buf)


def answers(peer) -> dict:
    create_topics(peer, {TOPIC: 1, MULTI: 3}, {TOPIC: {"retention.ms": -1}, MULTI: {"retention.ms": -1}})
    produce(peer, TOPIC, 0)
    for p in range(3):
        produce(peer, MULTI, p)
    out = {}
    for budget in BUDGETS:
        for off in (0, 2, 3, 6, 9):  # batch starts (0, 2, 9) and offsets inside a batch (3, 6)
            out[("one", budget, off)] = fetch(peer, [(TOPIC, 0, off, budget)], 50 << 20)
    # the request's max_bytes shared by three partitions: the first partition's first batch whole
    # whatever the budget, then each partition gets what is left
    for max_bytes in (1, 500, 9000, 20000, 30000, 60000):
        for pmb in (4096, 20000, 1 << 20):
            out[("three", max_bytes, pmb)] = fetch(peer, [(MULTI, p, 0, pmb) for p in range(3)], max_bytes)
    return out


@pytest.fixture(scope="module")
def both(peers):
    with ThreadPoolExecutor(len(BROKERS)) as pool:
        runs = {name: pool.submit(answers, peers[name]) for name in BROKERS}
        return {name: r.result() for name, r in runs.items()}


def _shape(answer: list) -> list:
    return [(p, code, len(data)) for p, code, data in answer]


def test_fetch_answers_are_kafkas_byte_slices(both):
    kafka, pylog = both["kafka"], both["pylog"]
    assert kafka.keys() == pylog.keys()
    sizes = {k: (_shape(kafka[k]), _shape(pylog[k])) for k in kafka if _shape(kafka[k]) != _shape(pylog[k])}
    assert not sizes, f"answer sizes differ (kafka, pylog): {sizes}"
    differ = [k for k in kafka if kafka[k] != pylog[k]]
    assert not differ, f"same sizes, different bytes: {differ}"


def test_the_comparison_covers_partial_tails_and_empty_partitions(both):
    """The answers above include slices ending mid-batch and partitions left empty by the budget."""
    partial = empty_later = 0
    for key, answer in both["kafka"].items():
        for i, (_, _, data) in enumerate(answer):
            pos = 0
            while pos + 12 <= len(data):
                pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
            partial += pos != len(data)
            empty_later += i > 0 and not data
    assert partial >= 10 and empty_later >= 2, (partial, empty_later)
