"""A consumer under consumer_byte_rate gets the quota's rate, on Apache Kafka and on pylog (the
same test against both): a throttled fetch is answered empty with throttle_time_ms and its
bytes do not count against the consumer (Kafka's ClientQuotaManager.unrecordQuotaSensor), and
one fetch never asks for more than the quota allows in the sampled window."""
from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from support import broker_fixtures, kafka_peer  # noqa: F401 - tier marks: both brokers run here

from diff_peers import ADMIN
from diff_runner import _batch, create_topics
from support.waiting import wait_until

BROKERS = ["kafka", "pylog"]
QUOTA = 50_000  # bytes per second
RUN_S, STEADY_FROM_S = 26.0, 13.0  # the first ~11 s may burst: the window starts empty


def set_consumer_quota(peer, client_id: str, rate: float) -> None:
    admin = peer.client(ADMIN)
    entity = [{"entity_type": "user", "entity_name": ADMIN}, {"entity_type": "client-id", "entity_name": client_id}]
    r = admin.call(49, 1, {"entries": [{"entity": entity, "ops": [
        {"key": "consumer_byte_rate", "value": rate, "remove": False}]}], "validate_only": False})
    assert r["entries"][0]["error_code"] == 0, r
    # Kafka applies it once the metadata log reaches the broker
    wait_until(lambda: admin.call(48, 1, {"components": [
        {"entity_type": "client-id", "match_type": 0, "match": client_id}], "strict": False})["entries"], 60,
        "quota visible")


def fill(peer, topic: str, batches: int, batch_bytes: int) -> None:
    value = b"q" * (batch_bytes // 10 - 20)
    admin = peer.client(ADMIN)
    records = _batch({"values": [value] * 10})  # one batch per request, as Kafka requires
    for _ in range(batches):
        r = admin.call(0, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": records}]}]})
        assert r["responses"][0]["partition_responses"][0]["error_code"] == 0, r


def consume(peer, topic: str, client_id: str) -> tuple[list, list]:
    """Fetch as a consumer does for RUN_S, honouring every throttle time (KIP-219):
    ([(seconds since start, bytes delivered)], [throttle_time_ms of each answer])."""
    c = peer.fresh(ADMIN, client_id)
    offset, got, throttles = 0, [], []
    t0 = time.monotonic()
    try:
        while time.monotonic() - t0 < RUN_S:
            r = c.call(1, 12, {"replica_id": -1, "max_wait_ms": 500, "min_bytes": 1, "max_bytes": 52428800,
                               "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                                   {"topic": topic, "partitions": [
                                       {"partition": 0, "current_leader_epoch": -1, "fetch_offset": offset,
                                        "log_start_offset": -1, "partition_max_bytes": 50_000}]}],
                               "forgotten_topics_data": [], "rack_id": ""})
            throttles.append(r["throttle_time_ms"])
            n = 0
            for t in r["responses"]:
                for p in t["partitions"]:
                    assert p["error_code"] == 0, (offset, got[-3:], r)
                    data = bytes(p["records"] or b"")
                    n += len(data)
                    if data:
                        offset = last_offset(data) + 1
            got.append((time.monotonic() - t0, n))
            if r["throttle_time_ms"]:
                time.sleep(r["throttle_time_ms"] / 1000)  # the client waits, as the Java client does
    finally:
        c.close()
    return got, throttles


def last_offset(data: bytes) -> int:
    """The last offset of the last whole batch in a fetch answer's records."""
    pos, last = 0, -1
    while pos + 12 <= len(data):
        base = int.from_bytes(data[pos:pos + 8], "big")
        size = int.from_bytes(data[pos + 8:pos + 12], "big")
        if pos + 12 + size > len(data):
            break
        last = base + int.from_bytes(data[pos + 23:pos + 27], "big")  # last offset delta
        pos += 12 + size
    return last


def measure(peer) -> tuple[float, int, list]:
    """(steady bytes/s, max throttle ms, every throttle) of the consumer on one broker."""
    topic, client_id = "q5-fetch-quota", "q5-consumer"
    # the harness's batches carry a fixed old timestamp: no time retention may delete them
    create_topics(peer, {topic: 1}, {topic: {"retention.ms": -1}})
    fill(peer, topic, batches=400, batch_bytes=10_000)
    set_consumer_quota(peer, client_id, QUOTA)
    got, throttles = consume(peer, topic, client_id)
    steady = sum(n for t, n in got if t >= STEADY_FROM_S) / (RUN_S - STEADY_FROM_S)
    print(peer.name, steady, max(throttles), len(throttles))
    return steady, max(throttles), throttles


@pytest.fixture(scope="module")
def rates(peers):
    """{broker: measure(its peer)}: the two measured side by side (each run lasts RUN_S, paced by the
    quota, not by the machine)."""
    with ThreadPoolExecutor(len(BROKERS)) as pool:
        runs = {name: pool.submit(measure, peers[name]) for name in BROKERS}
        return {name: r.result() for name, r in runs.items()}


@pytest.mark.parametrize("broker", BROKERS)
def test_consumer_gets_its_quota_and_throttles_stay_bounded(rates, broker):
    steady, worst, throttles = rates[broker]
    assert 0.65 * QUOTA <= steady <= 1.25 * QUOTA, (broker, steady, throttles)
    # a throttle asks for the time the window needs to come back under the quota, never more
    # than one window's worth (a throttled fetch's bytes are not counted, so it cannot grow)
    assert 0 < worst <= 11_000, (broker, throttles)


def test_pylog_in_kafkas_band(rates):
    kafka, pylog = rates["kafka"][0], rates["pylog"][0]
    assert abs(kafka - pylog) <= 0.2 * QUOTA, (kafka, pylog)
