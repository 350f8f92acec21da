"""`pylog topics ...` and `pylog perf ...` against pylog's broker."""
from __future__ import annotations

import json

from support.cli import pylog_in_process
from support.client_fixtures import pylog_cli


def test_topics_lifecycle(broker):
    bs = broker.bootstrap
    run = pylog_in_process  # each command and each failing exit also runs here as a real process
    r = pylog_cli("topics", "create", "tp-a", "-b", bs, "-p", "3", "-c", "retention.ms=60000", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == {"topic": "tp-a", "created": True, "partitions": 3, "replication_factor": 1,
                                    "configs": {"retention.ms": "60000"}}
    r = pylog_cli("topics", "create", "tp-a", "-b", bs)
    assert r.returncode == 1 and "already exists" in r.stderr
    assert run("topics", "create", "tp-a", "-b", bs, "--if-not-exists").returncode == 0
    r = pylog_cli("topics", "create", "tp-b", "-b", bs, "-c", "retention.ms=soon")
    assert r.returncode == 2 and "retention.ms" in r.stderr
    assert pylog_cli("produce", "tp-a", "-b", bs, "-p", "1", input="x\ny\n").returncode == 0

    r = pylog_cli("topics", "list", "-b", bs, "--json")
    listed = {t["topic"]: t for t in json.loads(r.stdout)}
    assert listed["tp-a"]["partitions"] == 3
    r = run("topics", "list", "-b", bs)
    assert "tp-a" in r.stdout and "partitions" in r.stdout

    r = pylog_cli("topics", "describe", "tp-a", "-b", bs, "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert [(p["partition"], p["start_offset"], p["end_offset"]) for p in d["partitions"]] == [
        (0, 0, 0), (1, 0, 2), (2, 0, 0)]
    assert d["configs"].get("retention.ms") == "60000"
    r = run("topics", "describe", "tp-a", "-b", bs)
    assert "leader" in r.stdout and "retention.ms" in r.stdout

    r = pylog_cli("topics", "alter-config", "tp-a", "-b", bs, "--set", "retention.ms=120000", "--set",
                  "cleanup.policy=compact")
    assert r.returncode == 0, r.stderr
    d = json.loads(run("topics", "describe", "tp-a", "-b", bs, "--json", "--no-offsets").stdout)
    assert d["configs"]["retention.ms"] == "120000" and d["configs"]["cleanup.policy"] == "compact"
    assert "start_offset" not in d["partitions"][0]
    r = run("topics", "alter-config", "tp-a", "-b", bs, "--delete", "cleanup.policy")
    assert r.returncode == 0, r.stderr
    d = json.loads(run("topics", "describe", "tp-a", "-b", bs, "--json").stdout)
    assert "cleanup.policy" not in d["configs"]
    assert pylog_cli("topics", "alter-config", "tp-a", "-b", bs).returncode == 2

    r = pylog_cli("topics", "delete", "tp-a", "-b", bs, "--json")
    assert r.returncode == 0 and json.loads(r.stdout) == {"topic": "tp-a", "deleted": True}
    r = pylog_cli("topics", "delete", "tp-a", "-b", bs)
    assert r.returncode == 1 and "tp-a" in r.stderr
    assert run("topics", "delete", "tp-a", "-b", bs, "--if-exists").returncode == 0
    r = pylog_cli("topics", "describe", "tp-a", "-b", bs)
    assert r.returncode == 1 and "Traceback" not in r.stderr


def test_perf_produce_and_consume(broker):
    bs = broker.bootstrap
    assert pylog_cli("topics", "create", "perf-t", "-b", bs, "-p", "2").returncode == 0
    r = pylog_cli("perf", "produce", "perf-t", "-b", bs, "-n", "20000", "-s", "100", "--acks", "1",
                  "--compression", "lz4", "--batch-size", "8192", "--linger-ms", "2", "--json")
    assert r.returncode == 0, r.stderr
    s = json.loads(r.stdout)
    assert s["records"] == 20000 and s["failures"] == 0 and s["records_per_s"] > 0
    assert set(s["latency_ms"]) == {"avg", "p50", "p95", "p99", "max"}
    assert {c for p in (0, 1) for c in stored_codecs(broker, "perf-t", p)} == {"lz4"}  # --compression took effect
    r = pylog_cli("perf", "produce", "perf-t", "-b", bs, "-n", "3000", "--api", "send", "--throughput", "3000")
    assert r.returncode == 0, r.stderr
    assert "records/s" in r.stdout and "p99" in r.stdout
    r = pylog_cli("perf", "consume", "perf-t", "-b", bs, "-n", "23000", "--json")
    assert r.returncode == 0, r.stderr
    c = json.loads(r.stdout)
    assert c["records"] == 23000 and c["bytes"] == 2300000


def stored_codecs(broker, topic, partition):
    """The compression codec of each batch the broker stored, in order (`pylog dump-segment --json`)."""
    segs = sorted((broker.log_dir / f"{topic}-{partition}").glob("*.log"))
    r = pylog_cli("dump-segment", "--json", *segs)
    assert r.returncode == 0, r.stderr
    return [o["compresscodec"] for o in map(json.loads, r.stdout.splitlines()) if o["type"] == "batch"]


def test_remaining_options(broker, tmp_path):
    bs = broker.bootstrap
    r = pylog_cli("topics", "create", "opt-t", "-b", bs, "-p", "2", "-r", "1", "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["replication_factor"] == 1
    r = pylog_cli("topics", "create", "opt-t2", "-b", bs, "-r", "3")
    assert r.returncode == 1 and "replication" in r.stderr.lower()
    # client properties from a Java .properties file; -X overrides it (the codec shows in the stored batches)
    props = tmp_path / "client.properties"
    props.write_text("compression.type=gzip\nlinger.ms=1\nacks=1\n")
    r = pylog_cli("produce", "opt-t", "-b", bs, "--config", str(props), "-p", "0", input="a\nb\n")
    assert r.returncode == 0, r.stderr
    r = pylog_cli("produce", "opt-t", "-b", bs, "--config", str(props), "-X", "acks=all", "-X", "compression.type=lz4",
                  "-p", "0", input="c\nd\n")
    assert r.returncode == 0, r.stderr
    assert stored_codecs(broker, "opt-t", 0) == ["gzip", "lz4"]
    bad = tmp_path / "bad.properties"
    bad.write_text("compression.type=brotli\n")
    r = pylog_cli("produce", "opt-t", "-b", bs, "--config", str(bad), input="a\n")
    assert r.returncode == 2 and "compression.type" in r.stderr
    r = pylog_cli("topics", "list", "-b", bs, "--internal", "--json")
    assert r.returncode == 0 and "opt-t" in {t["topic"] for t in json.loads(r.stdout)}
    r = pylog_cli("topics", "describe", "opt-t", "-b", bs, "--all-configs", "--json")
    cfg = json.loads(r.stdout)["configs"]
    assert "retention.ms" in cfg and "cleanup.policy" in cfg  # defaults included
    r = pylog_cli("perf", "consume", "opt-t", "-b", bs, "-n", "5", "--from-latest", "--timeout-ms", "500",
                  "--json")
    assert r.returncode == 0 and json.loads(r.stdout)["records"] == 0
    assert "only 0 of 5" in r.stderr
