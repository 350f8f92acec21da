"""Kafka's kafka-share-groups.sh and kafka-console-share-consumer.sh against pylog, and
`pylog share-groups` against Apache Kafka 4.4: the same tool on both brokers after the same
scenario shows the same thing."""
from __future__ import annotations

import json
import re

import pytest

from support import share_scenarios as sc
from support.cli import pylog, pylog_in_process
from support.kafka_peer import ToolShell, run_main

TOOL = "org.apache.kafka.tools.consumer.group.ShareGroupCommand"
CONSOLE = "org.apache.kafka.tools.consumer.ConsoleShareConsumer"


@pytest.fixture(scope="module")
def shell():
    """Kafka's tools in one JVM for the module (a JVM start costs seconds); the console consumer's
    first run below is a process of its own."""
    sh = ToolShell()
    yield sh
    sh.close()


@pytest.fixture(scope="module")
def tool(shell):
    """kafka-share-groups.sh --bootstrap-server BOOTSTRAP ARGS: its output."""
    return lambda bootstrap, *args: shell.run(TOOL, "--bootstrap-server", bootstrap, *args, check=True).stdout


def _table(text: str) -> list[list[str]]:
    return [re.split(r"\s+", line.strip()) for line in text.strip().splitlines() if line.strip()]


def _pylog(which):
    """`pylog` as a real process against pylog's broker, in this process (CliRunner) against Kafka's:
    every command still runs once as a process, for its exit status and stderr."""
    return pylog if which == "pylog" else pylog_in_process


def _consumed(brokers, topic, group, n, partitions=2):
    def scenario(bs):
        sc.fresh(bs, n, partitions, topic=topic, group=group)
        return sc.accept_all(bs, topic, group, n, consumers=2)
    return sc.on_both(brokers, scenario)


@pytest.mark.timeout(900)  # JVM tools and clients on a shared 2-core machine
def test_kafka_share_groups_sh_shows_the_same_on_pylog_and_kafka(share_brokers, tool):
    topic, group = sc.name("tool-t"), sc.name("tool-g")
    _consumed(share_brokers, topic, group, 20)
    for bs in share_brokers.values():
        assert group in tool(bs, "--list").split()
    # reset one partition, then describe: START-OFFSET and LAG the same on both
    views = {}
    for which, bs in share_brokers.items():
        reset = _table(tool(bs, "--group", group, "--reset-offsets", "--to-offset", "4", "--topic", f"{topic}:0",
                             "--execute"))
        assert reset[1] == [group, topic, "0", "4"], which
        views[which] = _table(tool(bs, "--describe", "--group", group))
        state = _table(tool(bs, "--describe", "--group", group, "--state"))
        assert state[1][0] == group and state[1][-2:] == ["Empty", "0"], (which, state)
    assert views["pylog"] == views["kafka"]
    assert [group, topic, "0", "4", "6"] in views["pylog"]
    for which, bs in share_brokers.items():
        out = tool(bs, "--delete-offsets", "--group", group, "--topic", topic)
        assert _table(out)[1] == [topic, "Successful"], which
        out = tool(bs, "--delete", "--group", group)
        assert "was successful" in out, which
        assert group not in tool(bs, "--list").split(), which


@pytest.mark.timeout(900)  # JVM tools and clients on a shared 2-core machine
def test_pylog_share_groups_on_kafka_and_pylog(share_brokers):
    topic, group = sc.name("cli-t"), sc.name("cli-g")
    _consumed(share_brokers, topic, group, 20)
    seen = {}
    for which, bs in share_brokers.items():
        run = _pylog(which)
        r = run("share-groups", "list", "-b", bs, "--json")
        assert r.returncode == 0, r.stderr
        assert {"group_id": group, "state": "Empty"} in json.loads(r.stdout), which
        r = run("share-groups", "reset-offsets", group, "-b", bs, "-t", f"{topic}:1", "--to-earliest",
                "--execute", "--json")
        assert r.returncode == 0, r.stderr
        r = run("share-groups", "describe", group, "-b", bs, "--json")
        assert r.returncode == 0, r.stderr
        seen[which] = [(o["topic"], o["partition"], o["start_offset"], o["lag"])
                       for o in json.loads(r.stdout)[0]["offsets"]]
        r = run("share-groups", "describe", sc.name("missing"), "-b", bs)
        assert r.returncode == 1 and "does not exist" in r.stderr, which
    assert (topic, 1, 0, 10) in seen["pylog"]
    assert seen["pylog"] == seen["kafka"]
    for which, bs in share_brokers.items():
        r = _pylog(which)("share-groups", "delete", group, "-b", bs, "--json")
        assert r.returncode == 0 and json.loads(r.stdout) == [{"group": group, "deleted": True, "error": None}], \
            (which, r.stdout, r.stderr)


@pytest.mark.timeout(900)  # JVM tools and clients on a shared 2-core machine
def test_kafka_console_share_consumer_on_pylog(share_pylog, shell):
    bs = share_pylog.bootstrap
    topic, group = sc.fresh(bs, 12, 1)
    r = run_main(CONSOLE, "--bootstrap-server", bs, "--topic", topic, "--group", group, "--max-messages", "12",
                 "--timeout-ms", "60000", check=True)
    assert sorted(r.stdout.split()) == sorted(f"v{i}" for i in range(12))
    # accepted: a second run sees nothing left (released records would come back on its first fetch,
    # a second after it joins with the shared node's 1 s heartbeats)
    r = shell.run(CONSOLE, "--bootstrap-server", bs, "--topic", topic, "--group", group, "--timeout-ms", "3000")
    assert r.stdout.split() == [] and "Processed a total of 0 messages" in r.stderr, r.stderr
