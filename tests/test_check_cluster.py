"""`pylog check-cluster run` live: each workload against `pylog broker start` with kill -9 and
pauses finds no anomaly (Apache Kafka 4.4.0: test_check_cluster_kafka.py), and a broker made to
misbehave on purpose (a proxy serving aborted transactions to read_committed consumers) is
caught, with the operations at fault."""
from __future__ import annotations

import pytest

from support.broker_fixtures import BrokerProcess
from support.check_cluster import WORKLOADS, assert_clean_with_faults, check
from support.lying_proxy import DroppingProxy, LyingProxy


@pytest.mark.broker_process
@pytest.mark.parametrize("workload", WORKLOADS)
def test_pylog_with_kill_and_pause(tmp_path, workload):
    r, results, out = check(tmp_path, "-w", workload, "--local", "pylog", "--duration", 20, "--fault", "kill",
                            "--fault", "pause", "--fault-interval", 4, "--fault-hold", 2, "--rate", 40)
    assert_clean_with_faults(r, results, out, faults=2)


@pytest.mark.broker_process
def test_aborted_transactions_served_to_read_committed_are_caught(tmp_path):
    proxy = LyingProxy()
    broker = BrokerProcess(tmp_path / "data", "--set", f"advertised.listeners=PLAINTEXT://127.0.0.1:{proxy.port}")
    try:
        broker.start()
        proxy.upstream_port = broker.port
        r, results, out = check(tmp_path, "-w", "queue", "-b", f"127.0.0.1:{proxy.port}", "--duration", 15,
                                "--rate", 40)
    finally:
        proxy.close()
        broker.stop()
    assert proxy.rewritten > 0
    assert r.returncode == 1, r.stdout + r.stderr
    assert results is not None and not results["valid"]
    assert results["anomaly_counts"].get("G1a", 0) >= 1, results["anomaly_counts"]
    a = next(a for a in results["anomalies"] if a["kind"] == "G1a")
    writer, reader = sorted(a["events"], key=lambda e: e["f"] != "txn")
    # the aborted transaction that sent the value, and the read_committed poll that saw it
    assert writer["f"] == "txn" and writer["type"] == "fail"
    assert reader["f"] == "poll" and reader["type"] == "ok"
    assert [a["key"], a["offset"], a["value"]] in [[m[1], m[3], m[2]] for m in writer["value"]]
    assert [a["offset"], a["value"]] in reader["value"][0][1][a["key"]]
    assert "G1a" in r.stdout and f"[ops {a['ops'][0]}, {a['ops'][1]}]" in r.stdout
    assert 'stroke-width="2"' in (out / "report.html").read_text()


@pytest.mark.broker_process
def test_acknowledged_batches_dropped_are_caught(tmp_path):
    proxy = DroppingProxy(every=15, limit=3)
    broker = BrokerProcess(tmp_path / "data", "--set", f"advertised.listeners=PLAINTEXT://127.0.0.1:{proxy.port}")
    try:
        broker.start()
        proxy.upstream_port = broker.port
        r, results, out = check(tmp_path, "-w", "groups", "-b", f"127.0.0.1:{proxy.port}", "--duration", 15,
                                "--rate", 40, "-X", "enable.idempotence=false")
    finally:
        proxy.close()
        broker.stop()
    assert proxy.dropped > 0
    assert r.returncode == 1, r.stdout + r.stderr
    counts = results["anomaly_counts"]
    assert counts.get("lost-write", 0) >= 1 and counts.get("inconsistent-offsets", 0) >= 1, counts
    lost = next(a for a in results["anomalies"] if a["kind"] == "lost-write")
    sender, reader = sorted(lost["events"], key=lambda e: e["f"] != "send")
    # the send the proxy acknowledged itself, and a poll that read past (or at) its offset
    assert sender["f"] == "send" and sender["type"] == "ok"
    assert [lost["key"], lost["value"], lost["offset"]] in [m[1:] for m in sender["value"]]
    assert reader["f"] == "poll" and any(o >= lost["offset"] for o, _v in reader["value"][0][1][lost["key"]])
    assert "lost-write" in r.stdout


@pytest.mark.broker_process
def test_pylog_fault_rules(tmp_path):
    rules = tmp_path / "rules.json"
    rules.write_text('[{"kind": "delay", "api": "Fetch", "ms": 300},'
                     ' {"kind": "error", "api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": 3}]')
    r, results, out = check(tmp_path, "-w", "queue", "--local", "pylog", "--duration", 12, "--fault", "rules",
                            "--fault-rules", rules, "--fault-interval", 3, "--fault-hold", 2, "--rate", 40)
    assert_clean_with_faults(r, results, out, faults=2)
    windows = [line for line in (out / "history.jsonl").read_text().splitlines() if '"nemesis"' in line]
    assert len(windows) >= 4 and all('"f":"rules"' in w for w in windows)
