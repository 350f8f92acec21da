"""Fault rules on a running `pylog broker start`: `pylog broker faults add|list|clear` over the
metrics listener (only with --allow-faults, 403 otherwise), `--faults FILE` at start-up, the
INFO log line and the metric of every injected fault, and rules that never match changing
nothing for real clients."""
from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from support.broker_fixtures import BrokerProcess
from support.cli import pylog

NEVER = Path(__file__).parent / "faults_never_match.json"


def metrics_url(b) -> str:
    line = next(x for x in b.stdout_lines if x.strip().startswith("metrics: "))
    return line.split()[1].rsplit("/", 1)[0]


def cli(*args, check=True):
    r = pylog("broker", "faults", *args, timeout=60)
    if check:
        assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    return r


@pytest.fixture(scope="module")
def fbroker(tmp_path_factory):
    d = tmp_path_factory.mktemp("faults-admin")
    rules = d / "rules.json"
    rules.write_text(json.dumps([{"id": "from-file", "api": "Fetch", "topic": "nothing-here", "kind": "delay",
                                  "ms": 100}]))
    b = BrokerProcess(d / "data", "--set", "metrics.listener=http://127.0.0.1:0", "--faults", str(rules)).start()
    yield b
    b.stop_clean()


def test_start_up_warns_and_loads_the_file(fbroker):
    assert "fault injection is enabled" in fbroker.stderr()
    assert any("fault injection enabled, 1 rule(s) loaded" in x for x in fbroker.stdout_lines)
    out = json.loads(cli("list", "--metrics-url", metrics_url(fbroker), "--json").stdout)
    assert [r["id"] for r in out["rules"]] == ["from-file"]


def test_cli_rule_fires_is_logged_counted_and_cleared(fbroker):
    url, boot = metrics_url(fbroker), fbroker.bootstrap
    admin = AdminClient({"bootstrap.servers": boot})
    admin.create_topics([NewTopic("orders", 1, 1)])["orders"].result(30)
    r = cli("add", "--metrics-url", url, "--api", "Produce", "--topic", "orders", "--error", "NOT_ENOUGH_REPLICAS",
            "--count", "2", "--json")
    rule = json.loads(r.stdout)
    assert rule["kind"] == "error" and rule["error"] == "NOT_ENOUGH_REPLICAS" and rule["hits"] == 0
    p = Producer({"bootstrap.servers": boot, "enable.idempotence": True, "linger.ms": 0})
    errors = []
    for i in range(3):
        p.produce("orders", f"o{i}".encode(), on_delivery=lambda e, m: errors.append(e))
    assert p.flush(60) == 0 and errors == [None] * 3  # retried past the two injected errors
    listed = {x["id"]: x for x in json.loads(cli("list", "--metrics-url", url, "--json").stdout)["rules"]}
    assert listed[rule["id"]]["hits"] == 2 and listed[rule["id"]]["state"] == "done"
    table = cli("list", "--metrics-url", url).stdout
    assert rule["id"] in table and "NOT_ENOUGH_REPLICAS" in table
    log = fbroker.stderr(None)
    assert log.count(f"fault injected by rule {rule['id']} ") == 2 and " INFO " in log
    with urllib.request.urlopen(url + "/metrics", timeout=10) as m:
        text = m.read().decode()
    assert f'pylog_broker_faults_injected_total{{kind="error",request="Produce",rule="{rule["id"]}"}} 2.0' in text
    assert "cleared 1 fault rule(s)" in cli("clear", rule["id"], "--metrics-url", url).stdout
    assert json.loads(cli("clear", "--metrics-url", url, "--json").stdout) == {"cleared": 1}  # the file's
    assert "no fault rules" in cli("list", "--metrics-url", url).stdout


def test_bad_rules_are_one_line_errors(fbroker, tmp_path):
    url = metrics_url(fbroker)
    r = cli("add", "--metrics-url", url, "--api", "Produce", "--error", "NO_SUCH_ERROR", check=False)
    assert r.returncode != 0 and "NO_SUCH_ERROR" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    r = cli("add", "--metrics-url", url, "--api", "Produce", check=False)
    assert r.returncode != 0 and "say what the rule does" in r.stderr
    r = cli("add", "--metrics-url", url, "--api", "NoSuchApi", "--close", check=False)
    assert r.returncode != 0 and "NoSuchApi" in r.stderr
    r = cli("clear", "r999", "--metrics-url", url, check=False)
    assert r.returncode != 0 and "r999" in r.stderr
    bad = tmp_path / "bad.json"
    bad.write_text('[{"kind": "delay"}]')
    r = pylog("broker", "start", "--listen", "127.0.0.1:0", "--log-dir", tmp_path / "d", "--faults", bad, timeout=60)
    assert r.returncode != 0 and "bad.json, rule 1" in r.stderr and "Traceback" not in r.stderr


def test_without_allow_faults_the_endpoints_answer_403(tmp_path):
    b = BrokerProcess(tmp_path / "data", "--set", "metrics.listener=http://127.0.0.1:0").start()
    try:
        url = metrics_url(b)
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(url + "/faults", timeout=10)
        assert e.value.code == 403
        req = urllib.request.Request(url + "/faults", data=b'{"error": "NOT_LEADER_OR_FOLLOWER"}', method="POST")
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=10)
        assert e.value.code == 403
        r = cli("list", "--metrics-url", url, check=False)
        assert r.returncode == 1 and "--allow-faults" in r.stderr
        assert "fault injection" not in b.stderr()
    finally:
        b.stop_clean()


def test_rules_that_never_match_change_nothing(tmp_path):
    """Produce, a consumer group and a transaction with every kind of rule loaded (none matching)."""
    b = BrokerProcess(tmp_path / "data", "--set", "metrics.listener=http://127.0.0.1:0", "--faults", str(NEVER),
                      "--set", "group.initial.rebalance.delay.ms=0").start()
    try:
        boot, url = b.bootstrap, metrics_url(b)
        admin = AdminClient({"bootstrap.servers": boot})
        admin.create_topics([NewTopic("plain", 2, 1)])["plain"].result(30)
        p = Producer({"bootstrap.servers": boot, "transactional.id": "tx-plain", "linger.ms": 5})
        p.init_transactions(30)
        p.begin_transaction()
        for i in range(100):
            p.produce("plain", f"m{i}".encode(), key=str(i).encode())
        p.commit_transaction(30)
        c = Consumer({"bootstrap.servers": boot, "group.id": "g-plain", "auto.offset.reset": "earliest",
                      "isolation.level": "read_committed"})
        c.subscribe(["plain"])
        got, deadline = [], time.monotonic() + 60
        while len(got) < 100 and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value().decode())
        c.commit(asynchronous=False)
        c.close()
        assert sorted(got) == sorted(f"m{i}" for i in range(100))
        rules = json.loads(cli("list", "--metrics-url", url, "--json").stdout)["rules"]
        assert len(rules) == 8 and all(r["hits"] == 0 for r in rules)
        assert "fault injected" not in b.stderr(None)
    finally:
        b.stop_clean()
