"""Dynamic broker configs with Kafka 4.4.0's kafka-configs against pylog and a one-node Apache
Kafka 4.4.0: set as the cluster default (--entity-default) and per broker, described, applied
without a restart (a record over the new message.max.bytes is refused at once, topics without
an override take the new retention.ms), deleted, refused for a config that is not dynamic, and
kept across a restart of pylog's broker.
"""
from __future__ import annotations

import re
import socket
import time

import pytest

from support.broker_fixtures import BrokerProcess, build_batch, call
from support.kafka_peer import TOOLS, shell  # noqa: F401

CONFIGS, TOPICS = TOOLS["configs"], TOOLS["topics"]

pytestmark = pytest.mark.timeout(600)


def _tool(shell, bootstrap, *args):
    proc = shell.run(CONFIGS, "--bootstrap-server", bootstrap, *map(str, args), timeout=120)
    return proc.returncode, (proc.stdout + proc.stderr).strip()


def _node_id(shell, bootstrap) -> int:
    out = shell.run("org.apache.kafka.tools.BrokerApiVersionsCommand", "--bootstrap-server", bootstrap).stdout
    return int(re.search(r"\(id: (\d+) rack", out).group(1))


def _produce(port: int, topic: str, size: int) -> int:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as s:
        r = call(s, 0, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 30000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": build_batch([(b"k", b"x" * size, [])])}]}]})
    return r["responses"][0]["partition_responses"][0]["error_code"]


def _session(shell, bootstrap, port, topic):
    """Each step's (exit code, output with node ids normalised) on one broker."""
    node = _node_id(shell, bootstrap)
    assert shell.run(TOPICS, "--bootstrap-server", bootstrap, "--create", "--topic", topic,
                     "--partitions", "1", "--replication-factor", "1").returncode == 0
    steps = {}

    def run(name, *args):
        code, out = _tool(shell, bootstrap, *args)
        out = out.replace(bootstrap, "<bootstrap>").replace(f"broker {node}", "broker <node>")
        # Kafka 4 (with eligible leader replicas) writes a cluster-default min.insync.replicas
        # when it formats a cluster; pylog has no ELR and no such record (README lists it)
        out = "\n".join(ln for ln in out.splitlines() if not ln.strip().startswith("min.insync.replicas=1 "))
        steps[name] = (code, out)

    default = ("--entity-type", "brokers", "--entity-default")
    this = ("--entity-type", "brokers", "--entity-name", node)

    def settled(name, *args, expect):
        """Kafka applies a change when its metadata reaches the broker: wait for it."""
        deadline = time.monotonic() + 60
        while True:
            run(name, *args)
            if expect(steps[name][1]) or time.monotonic() > deadline:
                return
            time.sleep(0.5)

    run("set default", *default, "--alter", "--add-config", "log.retention.ms=3600000,message.max.bytes=2000")
    settled("describe default", *default, "--describe", expect=lambda out: "message.max.bytes=2000" in out)
    steps["small record"] = _produce(port, topic, 500)
    steps["record over the new message.max.bytes"] = _produce(port, topic, 3000)
    run("topic retention", "--entity-type", "topics", "--entity-name", topic, "--describe", "--all")
    steps["topic retention"] = (steps["topic retention"][0],
                                [ln.strip() for ln in steps["topic retention"][1].splitlines()
                                 if ln.strip().startswith(("retention.ms=", "max.message.bytes="))])
    run("set per broker", *this, "--alter", "--add-config", "log.retention.ms=7200000")
    settled("describe per broker", *this, "--describe", expect=lambda out: "log.retention.ms=7200000 sensitive" in out)
    run("throttles set", *this, "--alter", "--add-config",
        "leader.replication.throttled.rate=1000000,follower.replication.throttled.rate=1000000")
    run("throttles deleted", *this, "--alter", "--delete-config",
        "leader.replication.throttled.rate,follower.replication.throttled.rate")
    run("delete per broker", *this, "--alter", "--delete-config", "log.retention.ms")
    run("not dynamic", *default, "--alter", "--add-config", "num.partitions=3")
    settled("describe per broker after", *this, "--describe", expect=lambda out: "7200000" not in out)
    run("describe default after", *default, "--describe")
    return steps


def test_dynamic_broker_configs_as_on_kafka(shell, kafka_node, tmp_path):
    b = BrokerProcess(tmp_path / "data").start()
    try:
        ours = _session(shell, b.bootstrap, b.port, "dyn44")
        try:
            theirs = _session(shell, kafka_node.bootstrap, kafka_node.port, "dyn44")
        finally:  # the Kafka node is shared by the whole run
            _tool(shell, kafka_node.bootstrap, "--entity-type", "brokers", "--entity-default", "--alter",
                  "--delete-config", "log.retention.ms,message.max.bytes")
        assert ours["set default"][0] == 0 and ours["small record"] == 0
        assert ours["record over the new message.max.bytes"] == 10  # MESSAGE_TOO_LARGE, without a restart
        differ = {s: (theirs[s], ours[s]) for s in theirs if s != "not dynamic" and theirs[s] != ours[s]}
        assert not differ, "\n".join(f"{s}:\n  Kafka: {k}\n  pylog: {p}" for s, (k, p) in differ.items())
        assert ours["not dynamic"][0] != 0 and theirs["not dynamic"][0] != 0
        assert "num.partitions" in ours["not dynamic"][1]
        # persisted: the cluster default survives a restart and still applies
        b.stop_clean()
        b.start()
        assert _tool(shell, b.bootstrap, "--entity-type", "brokers", "--entity-default", "--describe")[1] == \
            ours["describe default after"][1]
        assert _produce(b.port, "dyn44", 3000) == 10
    finally:
        if b.alive():
            b.stop_clean()
