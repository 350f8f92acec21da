"""`pylog check-cluster`: usage errors in one line with exit 2, and `analyze` on a saved history
(exit 1 with anomalies, results.json and report.html naming the operations at fault)."""
from __future__ import annotations

import json

from support.cli import pylog

PLANTED = [  # an aborted transaction's value, read by a consumer: G1a
    {"index": 0, "process": "w.0", "type": "invoke", "f": "txn", "time": 0, "value": [["send", "t/0", 1, None]]},
    {"index": 1, "process": "w.0", "type": "fail", "f": "txn", "time": 5, "start": 0, "value": [["send", "t/0", 1, 0]]},
    {"index": 2, "process": "r.0", "type": "invoke", "f": "poll", "time": 6, "value": [["poll"]]},
    {"index": 3, "process": "r.0", "type": "ok", "f": "poll", "time": 9, "start": 6,
     "value": [["poll", {"t/0": [[0, 1]]}]]},
    {"index": 4, "process": "nemesis", "type": "invoke", "f": "kill", "time": 2, "value": {"fault": "kill"}},
    {"index": 5, "process": "nemesis", "type": "ok", "f": "kill", "time": 7, "start": 2, "value": {"fault": "kill"}},
]


def test_run_needs_one_target(tmp_path):
    for args in ([], ["-b", "127.0.0.1:1", "--local", "pylog"]):
        r = pylog("check-cluster", "run", "-w", "queue", "--out", tmp_path, *args)
        assert r.returncode == 2, r.stderr
        assert "give either -b SERVERS or --local pylog|kafka" in r.stderr
        assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_local_kafka_says_what_is_missing(tmp_path):
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("KAFKA_HOME", "KAFKA_CLASSPATH")}
    r = pylog("check-cluster", "run", "-w", "queue", "--local", "kafka", "--out", tmp_path, env=env)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == [
        "pylog: error: --local kafka needs Apache Kafka's jars: set KAFKA_HOME (an unpacked Kafka 4.4.0) or "
        "KAFKA_CLASSPATH (a class path or a file holding one)"]


def test_faults_need_a_way_to_be_injected(tmp_path):
    r = pylog("check-cluster", "run", "-w", "queue", "-b", "127.0.0.1:1", "--fault", "kill", "--out", tmp_path)
    assert r.returncode == 2 and "--fault kill needs --local, or --fault-command kill=CMD" in r.stderr
    r = pylog("check-cluster", "run", "-w", "queue", "-b", "127.0.0.1:1", "--fault", "flood", "--out", tmp_path)
    assert r.returncode == 2 and "--fault flood: not one of kill, pause, rules" in r.stderr
    r = pylog("check-cluster", "run", "-w", "queue", "-b", "127.0.0.1:1", "--fault-command", "kill", "--out", tmp_path)
    assert r.returncode == 2 and "expected KIND=COMMAND" in r.stderr


def test_analyze_a_saved_history(tmp_path):
    (tmp_path / "history.jsonl").write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in PLANTED))
    r = pylog("check-cluster", "analyze", tmp_path)
    assert r.returncode == 1, r.stderr
    assert "G1a: 1" in r.stdout and "[ops 1, 3]" in r.stdout
    assert r.stderr.strip().splitlines()[-1] == "pylog: error: 1 anomalies: G1a 1"
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["valid"] is False and results["anomaly_counts"] == {"G1a": 1}
    assert [e["index"] for e in results["anomalies"][0]["events"]] == [1, 3]
    page = (tmp_path / "report.html").read_text()
    assert 'id="op1"' in page and 'id="op3"' in page and "stroke-width" in page  # the two marked
    assert "kill fault" in page  # the fault window, shaded
    j = pylog("check-cluster", "analyze", "--json", tmp_path)
    assert j.returncode == 1 and json.loads(j.stdout)["anomaly_counts"] == {"G1a": 1}


def test_analyze_clean_and_missing_history(tmp_path):
    (tmp_path / "history.jsonl").write_text("".join(json.dumps(e) + "\n" for e in PLANTED[2:3]))
    r = pylog("check-cluster", "analyze", tmp_path)
    assert r.returncode == 0 and "no anomalies" in r.stdout
    empty = tmp_path / "empty"
    empty.mkdir()
    r = pylog("check-cluster", "analyze", empty)
    assert r.returncode == 2 and "no history.jsonl" in r.stderr


def test_unknown_client_property(tmp_path):
    r = pylog("check-cluster", "run", "-w", "queue", "-b", "127.0.0.1:1", "-X", "no.such.thing=1", "--out", tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip() == "pylog: error: -X no.such.thing: not a Kafka producer or consumer property"


def test_a_cluster_that_cannot_be_reached_is_exit_3(tmp_path):
    import socket
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = pylog("check-cluster", "run", "-w", "queue", "-b", f"127.0.0.1:{port}", "--duration", 1, "--out", tmp_path)
    assert r.returncode == 3, r.stderr
    line = r.stderr.strip()
    assert line.startswith("pylog: error: check-cluster run failed: ") and "\n" not in line
    assert f"the history so far is in {tmp_path}" in line
