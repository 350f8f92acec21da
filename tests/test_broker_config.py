"""`pylog broker start` options: server.properties, --set, --advertised, several log dirs, node id."""
from __future__ import annotations

import json
import shutil
import subprocess

from support.broker_fixtures import BrokerProcess, call, connect

KCAT = shutil.which("kcat") or "/usr/bin/kcat"


def test_properties_file_set_advertised_and_two_log_dirs(tmp_path):
    props = tmp_path / "server.properties"
    props.write_text(
        "# a Kafka KRaft file: keys pylog has no use for are skipped with a warning\n"
        "process.roles=broker,controller\n"
        "controller.quorum.voters=1@localhost:9093\n"
        "num.partitions=3\n"
        "log.retention.hours=24\n"
        "auto.create.topics.enable=true\n")
    second = tmp_path / "second-dir"
    b = BrokerProcess(tmp_path / "first-dir", "--log-dir", str(second), "--config", str(props),
                      "--set", "node.id=5", "--set", "num.partitions=4", "--advertised", "localhost:1")
    b.start()
    try:
        assert any("log dirs:" in line and "second-dir" in line for line in b.stdout_lines)
        assert "ignoring unknown broker properties: controller.quorum.voters, process.roles" in b.stderr()
        s = connect(b)
        md = call(s, 3, 12, {"topics": [{"name": "cfg-auto"}], "allow_auto_topic_creation": True})
        assert md["brokers"] == [{"node_id": 5, "host": "localhost", "port": 1, "rack": None}]
        assert md["controller_id"] == 5
        (t,) = md["topics"]
        assert len(t["partitions"]) == 4  # --set beats the file
        assert {p["leader_id"] for p in t["partitions"]} == {5}
        conf = call(s, 32, 4, {"resources": [{"resource_type": 2, "resource_name": "cfg-auto",
                                              "configuration_keys": ["retention.ms"]}], "include_synonyms": True})
        (c,) = conf["results"][0]["configs"]
        # Kafka 4.3.1 answers the same: synonyms start at log.retention.ms (unset), so none are listed
        # and the source is DEFAULT_CONFIG (test_kafka_tools.py checks the defaults with kafka-configs)
        assert c["value"] == str(24 * 3600 * 1000) and c["config_source"] == 5
        assert c["synonyms"] == []
        conf = call(s, 32, 4, {"resources": [{"resource_type": 4, "resource_name": "5",
                                              "configuration_keys": ["log.retention.hours"]}], "include_synonyms": True})
        (c,) = conf["results"][0]["configs"]
        assert c["synonyms"] == [{"name": "log.retention.hours", "value": "24", "source": 4},
                                 {"name": "log.retention.hours", "value": "168", "source": 5}]
        dirs = call(s, 35, 4, {"topics": None})["results"]
        assert sorted(d["log_dir"].rsplit("/", 1)[1] for d in dirs) == ["first-dir", "second-dir"]
        placed = {d["log_dir"].rsplit("/", 1)[1]: sum(len(t["partitions"]) for t in d["topics"]) for d in dirs}
        assert placed["first-dir"] >= 1 and placed["second-dir"] >= 1  # spread over both dirs
        s.close()
    finally:
        assert b.stop() == 0


def test_kcat_works_with_a_non_default_node_id(tmp_path):
    b = BrokerProcess(tmp_path / "data", "--set", "node.id=7").start()
    try:
        r = subprocess.run([KCAT, "-b", b.bootstrap, "-P", "-t", "node7"], input="a\nb\n", text=True,
                           capture_output=True, timeout=30)
        assert r.returncode == 0, r.stderr
        r = subprocess.run([KCAT, "-b", b.bootstrap, "-C", "-t", "node7", "-e", "-J"], text=True,
                           capture_output=True, timeout=30)
        msgs = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
        assert [m["payload"] for m in msgs] == ["a", "b"] and {m["broker"] for m in msgs} == {7}
    finally:
        assert b.stop() == 0
