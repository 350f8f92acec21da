"""The metrics listener (/metrics, /health, /ready) and `pylog broker status`, driven by confluent-kafka."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from support.broker_fixtures import call, connect
from support.waiting import wait_until
from support.cli import pylog


def metrics_url(b) -> str:
    line = next(x for x in b.stdout_lines if x.strip().startswith("metrics: "))
    return line.split()[1].rsplit("/", 1)[0]


def scrape(url: str) -> dict:
    """{(name, frozenset(labels)): value} of every sample."""
    with urllib.request.urlopen(url + "/metrics", timeout=10) as r:
        assert r.headers["Content-Type"].startswith("text/plain")
        text = r.read().decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def sample(m: dict, name: str, **labels) -> float:
    return m.get((name, frozenset(labels.items())), 0.0)


def get_json(url: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


@pytest.fixture(scope="module")
def mbroker(tmp_path_factory):
    from support.broker_fixtures import BrokerProcess

    b = BrokerProcess(tmp_path_factory.mktemp("metrics") / "data", "--set", "metrics.listener=http://127.0.0.1:0",
                      "--set", "group.initial.rebalance.delay.ms=0").start()
    yield b
    b.stop_clean()


def test_traffic_shows_under_kafka_names(mbroker):
    url = metrics_url(mbroker)
    boot = mbroker.bootstrap
    admin = AdminClient({"bootstrap.servers": boot})
    admin.create_topics([NewTopic("mt", num_partitions=2, replication_factor=1)])["mt"].result(15)
    p = Producer({"bootstrap.servers": boot, "linger.ms": 20, "acks": "all"})
    sent = 0
    for i in range(3000):
        p.produce("mt", value=b"x" * 100, partition=i % 2)
        sent += 100
        if i % 500 == 0:
            p.poll(0)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": boot, "group.id": "mg", "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe(["mt"])
    got = 0
    deadline_polls = 0
    while got < 3000 and deadline_polls < 120:
        msgs = c.consume(1000, 1.0)
        deadline_polls += 1
        got += sum(1 for m in msgs if m.error() is None)
    assert got == 3000
    c.commit(asynchronous=False)

    m = scrape(url)
    assert sample(m, "kafka_server_brokertopicmetrics_messagesin_total", topic="mt") == 3000
    bytes_in = sample(m, "kafka_server_brokertopicmetrics_bytesin_total", topic="mt")
    assert bytes_in > sent  # the values plus batch and record framing
    assert sample(m, "kafka_server_brokertopicmetrics_bytesout_total", topic="mt") >= bytes_in
    size = sum(sample(m, "kafka_log_log_size", topic="mt", partition=str(i)) for i in range(2))
    on_disk = sum(f.stat().st_size for i in range(2) for f in (mbroker.log_dir / f"mt-{i}").glob("*.log"))
    assert size == on_disk == bytes_in
    assert sample(m, "kafka_log_log_numlogsegments", topic="mt", partition="0") == 1
    assert sample(m, "kafka_log_log_logendoffset", topic="mt", partition="0") == 1500
    assert sum(v for (n, lb), v in m.items() if n == "kafka_network_requestmetrics_requests_total"
               and ("request", "Produce") in lb) >= 1
    assert sample(m, "kafka_network_requestmetrics_totaltimems_count", request="Fetch") >= 1
    assert sample(m, "kafka_network_requestmetrics_totaltimems_bucket", request="Fetch", le="+Inf") == \
        sample(m, "kafka_network_requestmetrics_totaltimems_count", request="Fetch")
    assert sample(m, "kafka_network_requestmetrics_errors_total", request="Produce", error="NONE") >= 1
    assert sample(m, "kafka_coordinator_group_groupmetadatamanager_numgroups") >= 1
    for part in ("0", "1"):
        assert ("kafka_consumergroup_lag", frozenset({"consumergroup": "mg", "topic": "mt",
                                                      "partition": part}.items())) in m
        assert sample(m, "kafka_consumergroup_lag", consumergroup="mg", topic="mt", partition=part) == 0
    assert sample(m, "kafka_server_socket_server_metrics_connection_count", listener="PLAINTEXT") >= 1
    assert sample(m, "kafka_log_logmanager_offlinelogdirectorycount") == 0
    assert ("kafka_log_logcleaner_max_clean_time_secs", frozenset()) in m
    c.close()

    # more records: the lag grows by what the group has not committed
    p.produce("mt", value=b"y", partition=0)
    assert p.flush(10) == 0
    m = scrape(url)
    assert sample(m, "kafka_consumergroup_lag", consumergroup="mg", topic="mt", partition="0") == 1


def test_errors_are_counted_by_code(mbroker):
    url = metrics_url(mbroker)
    before = sample(scrape(url), "kafka_network_requestmetrics_errors_total", request="Produce",
                    error="UNKNOWN_TOPIC_OR_PARTITION")
    from support.broker_fixtures import build_batch

    s = connect(mbroker)
    resp = call(s, 0, 9, {"transactional_id": None, "acks": 1, "timeout_ms": 1000, "topic_data": [
        {"name": "no-such-topic", "partition_data": [{"index": 0, "records": build_batch([(b"k", b"v", None)])}]}]})
    s.close()
    assert resp["responses"][0]["partition_responses"][0]["error_code"] == 3
    m = scrape(url)
    assert sample(m, "kafka_network_requestmetrics_errors_total", request="Produce",
                  error="UNKNOWN_TOPIC_OR_PARTITION") == before + 1
    assert sample(m, "kafka_server_brokertopicmetrics_failedproducerequests_total", topic="no-such-topic") == 0


def test_health_ready_and_status_command(mbroker):
    url = metrics_url(mbroker)
    code, body = get_json(url + "/health")
    assert code == 200 and body["live"] is True
    code, body = get_json(url + "/ready")
    assert code == 200 and body["ready"] is True and body["reasons"] == []
    assert body["listeners"][0]["port"] == mbroker.port and body["listeners"][0]["up"]
    assert body["log_dirs"][0]["path"] == str(mbroker.log_dir) and body["log_dirs"][0]["online"]

    r = pylog("broker", "status", "--url", url, "--json")
    assert r.returncode == 0, r.stderr
    snap = json.loads(r.stdout)
    assert snap["ready"] and snap["node_id"] == 1 and snap["listeners"][0]["port"] == mbroker.port
    r = pylog("broker", "status", "--url", url)
    assert r.returncode == 0, r.stderr
    assert "ready" in r.stdout and str(mbroker.log_dir) in r.stdout and "online" in r.stdout

    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(url + "/nope", timeout=10)
    assert e.value.code == 404


def test_status_of_no_broker_is_one_line_and_exit_1(tmp_path):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    r = pylog("broker", "status", "--url", f"http://127.0.0.1:{port}")
    assert r.returncode == 1
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert f"127.0.0.1:{port}" in r.stderr


def test_bad_metrics_listener_is_a_usage_error(tmp_path):
    r = pylog("broker", "start", "--log-dir", str(tmp_path / "d"), "--listen", "127.0.0.1:0",
              "--set", "metrics.listener=ftp://x")
    assert r.returncode == 2
    assert "metrics.listener" in r.stderr and "Traceback" not in r.stderr


def test_kip848_group_members_and_state(mbroker):
    url = metrics_url(mbroker)
    boot = mbroker.bootstrap
    admin = AdminClient({"bootstrap.servers": boot})
    admin.create_topics([NewTopic("mk", num_partitions=2, replication_factor=1)])["mk"].result(15)
    c = Consumer({"bootstrap.servers": boot, "group.id": "mk848", "group.protocol": "consumer",
                  "auto.offset.reset": "earliest"})
    c.subscribe(["mk"])
    try:
        def stable():
            c.poll(0.2)
            m = scrape(url)
            return (sample(m, "kafka_consumergroup_members", consumergroup="mk848") == 1
                    and sample(m, "kafka_coordinator_group_groupmetadatamanager_numgroups_by_state",
                               state="Stable") >= 1)
        wait_until(stable, 60, "the KIP-848 group stable with one member in /metrics")
    finally:
        c.close()
