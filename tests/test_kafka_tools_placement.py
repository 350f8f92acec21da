"""kafka-leader-election.sh and kafka-reassign-partitions.sh (Kafka 4.4.0's tools) against
pylog's broker and a one-node Apache Kafka 4.4.0: the same exit codes and the same output
(once the node ids and ports are normalised) for an election of every partition and of named
ones, a reassignment listed, generated, executed onto the node the partitions are on, verified
and cancelled, and a reassignment to a broker that does not exist.
"""
from __future__ import annotations

import json
import re

import pytest

from support.kafka_peer import TOOLS, shell  # noqa: F401

ELECT, REASSIGN, TOPICS = TOOLS["leader-election"], TOOLS["reassign-partitions"], TOOLS["topics"]

pytestmark = pytest.mark.timeout(600)


def _node_id(shell, bootstrap) -> int:
    out = shell.run("org.apache.kafka.tools.BrokerApiVersionsCommand", "--bootstrap-server", bootstrap).stdout
    return int(re.search(r"\(id: (\d+) rack", out).group(1))


def _session(shell, bootstrap, tmp_path, topic):
    """Every step's (exit code, normalised output) on one broker."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    assert shell.run(TOPICS, "--bootstrap-server", bootstrap, "--create", "--topic", topic,
                     "--partitions", "2", "--replication-factor", "1").returncode == 0
    node = _node_id(shell, bootstrap)
    steps = {}

    def run(name, main, *args):
        proc = shell.run(main, "--bootstrap-server", bootstrap, *map(str, args), timeout=120)
        out = (proc.stdout + proc.stderr).replace(bootstrap, "<bootstrap>")
        out = re.sub(r"\[(\d+)\]", lambda m: "[<node>]" if int(m.group(1)) == node else m.group(0), out)
        out = re.sub(r'"replicas":\[(\d+)\]', lambda m: '"replicas":[<node>]' if int(m.group(1)) == node
                     else m.group(0), out)
        out = re.sub(r'"log_dirs":\["/[^"]*"\]', '"log_dirs":["<log dir>"]', out)
        steps[name] = (proc.returncode, out.strip())
        return proc

    run("elect all preferred", ELECT, "--election-type", "preferred", "--all-topic-partitions")
    run("elect named preferred", ELECT, "--election-type", "preferred", "--topic", topic, "--partition", "0")
    run("elect named unclean", ELECT, "--election-type", "unclean", "--topic", topic, "--partition", "1")
    run("elect missing partition", ELECT, "--election-type", "preferred", "--topic", topic, "--partition", "9")
    run("list", REASSIGN, "--list")

    topics_file = tmp_path / "topics.json"
    topics_file.write_text(json.dumps({"version": 1, "topics": [{"topic": topic}]}))
    run("generate", REASSIGN, "--generate", "--topics-to-move-json-file", topics_file,
        "--broker-list", node)

    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": p, "replicas": [node], "log_dirs": ["any"]} for p in (0, 1)]}))
    run("execute onto this node", REASSIGN, "--execute", "--reassignment-json-file", plan)
    run("verify", REASSIGN, "--verify", "--reassignment-json-file", plan)
    run("cancel", REASSIGN, "--cancel", "--reassignment-json-file", plan)
    run("list after", REASSIGN, "--list")

    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": 0, "replicas": [node + 5], "log_dirs": ["any"]}]}))
    run("execute onto a missing broker", REASSIGN, "--execute", "--reassignment-json-file", elsewhere)
    return steps


def test_placement_tools_as_on_a_one_node_kafka(shell, broker, kafka_node, tmp_path):
    ours = _session(shell, broker.bootstrap, tmp_path / "pylog", "place44")
    theirs = _session(shell, kafka_node.bootstrap, tmp_path / "kafka", "place44")
    # the scripts operators run must succeed on pylog as on Kafka
    for step in ("elect all preferred", "elect named preferred", "list", "generate",
                 "execute onto this node", "verify", "list after"):
        assert ours[step][0] == 0, (step, ours[step])
    differ = {step: (theirs[step], ours[step]) for step in theirs if theirs[step] != ours[step]}
    assert not differ, "\n".join(f"{s}:\n  Kafka: {k}\n  pylog: {p}" for s, (k, p) in differ.items())
