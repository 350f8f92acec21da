"""pylog's clients and commands against a real Apache Kafka cluster whose brokers die and return.

The run's `kafka_cluster`: three broker-only KRaft nodes and a dedicated controller, so that two
brokers can be down without the cluster losing its metadata quorum. Records are checked against
what was sent: exactly once and in order per key for the idempotent producer, at least once with
commits reaching the end for group consumers.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path
from unittest.mock import ANY

import pytest

from support.broker_fixtures import wait_for
from support.client_fixtures import pylog_cli
from support.kafka_peer import TOOLS, ToolShell

pytestmark = pytest.mark.slow

# Kafka's tools (kafka-topics, kafka-consumer-groups) run in one JVM for the module: the tests poll
# partition state in loops, and a JVM start per poll was most of the module's time on 2 cores.
_TOOLS: list[ToolShell] = []


@pytest.fixture(scope="module")
def cluster(kafka_cluster):
    """The run's 3-broker cluster (support/kafka_fixtures.py: it serves the MirrorMaker test too)."""
    _TOOLS.append(ToolShell())
    yield kafka_cluster
    _TOOLS.pop().close()


# between two kafka-topics runs in a wait: each builds an Admin client in the tool JVM, and the waits
# are on Kafka's own timers (replica lag, broker session), seconds long
POLL = 0.5


def kafka_tool(name: str, *args: str, check: bool = False) -> subprocess.CompletedProcess:
    """kafka-NAME.sh ARGS in the module's tool JVM."""
    return _TOOLS[-1].run(TOOLS[name], *args, check=check)


def kafka_topics(bootstrap: str, *args: str) -> str:
    return kafka_tool("topics", "--bootstrap-server", bootstrap, *args, check=True).stdout


def partition_state(bootstrap: str, topic: str, new: bool = False) -> dict[int, dict]:
    """{partition: {"leader": id, "replicas": [..], "isr": [..]}} from kafka-topics --describe; {} for a
    `new` topic the answering broker does not know yet (its metadata trails the controller's)."""
    r = kafka_tool("topics", "--bootstrap-server", bootstrap, "--describe", "--topic", topic, check=not new)
    if new and r.returncode != 0:
        assert "does not exist" in r.stdout + r.stderr, r.stdout + r.stderr
        return {}
    out = r.stdout
    state = {}
    for m in re.finditer(r"Partition: (\d+)\s+Leader: (-?\d+|none)\s+Replicas: ([\d,]+)\s+Isr: ([\d,]*)", out):
        state[int(m[1])] = {"leader": -1 if m[2] == "none" else int(m[2]),
                            "replicas": [int(x) for x in m[3].split(",")],
                            "isr": [int(x) for x in m[4].split(",") if x]}
    return state


def leader_alone_in_isr(cluster, topic) -> tuple[int, list[int]]:
    """Kill -9 the followers of partition 0 and wait until its ISR is the leader alone."""
    state = partition_state(cluster.bootstrap, topic)[0]
    survivor = state["leader"]
    others = [i for i in state["replicas"] if i != survivor]
    for i in others:
        cluster.node(i).kill9()
    assert wait_for(lambda: partition_state(cluster.node(survivor).bootstrap, topic)[0]["isr"] == [survivor], 120,
                    step=POLL)
    return survivor, others


def create_topic(cluster, name, partitions=3, *configs):
    args = ["--create", "--topic", name, "--partitions", str(partitions), "--replication-factor", "3"]
    for c in configs:
        args += ["--config", c]
    kafka_topics(cluster.bootstrap, *args)
    assert wait_for(lambda: len(partition_state(cluster.bootstrap, name, new=True)) == partitions, 60, step=POLL)


class SlowFeeder:
    """`pylog produce` fed KEY:VALUE lines in small bursts, so broker faults land mid-stream."""

    def __init__(self, tmp: Path, topic: str, bootstrap: str, n: int, *extra: str, burst=1000, pause=0.05):
        self.n = n
        self.out = tmp / f"{topic}.out"
        self.err = tmp / f"{topic}.err"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pylog.cli", "produce", topic, "-b", bootstrap, "-K:", "--json", *extra],
            stdin=subprocess.PIPE, stdout=open(self.out, "w"), stderr=open(self.err, "w"), text=True)
        self.sent = 0
        self.thread = threading.Thread(target=self._feed, args=(burst, pause), daemon=True)
        self.thread.start()

    def _feed(self, burst, pause):
        for i in range(self.n):
            self.proc.stdin.write(f"k{i % 97}:{i}\n")
            self.sent = i + 1
            if i % burst == 0:
                self.proc.stdin.flush()
                time.sleep(pause)
        self.proc.stdin.close()

    def result(self, timeout=300) -> tuple[int, dict, str]:
        self.thread.join(timeout)
        rc = self.proc.wait(timeout)
        out = self.out.read_text()
        return rc, (json.loads(out) if out.strip() else {}), self.err.read_text()


def read_all(bootstrap: str, topic: str, expect: int) -> list[tuple[str, int]]:
    r = pylog_cli("consume", topic, "-b", bootstrap, "--from-beginning", "-e", "-f", "%k %s\\n", timeout=300)
    assert r.returncode == 0, r.stderr
    rows = [(k, int(v)) for k, v in (line.split(" ") for line in r.stdout.splitlines())]
    assert len(rows) >= expect, f"read {len(rows)} of {expect}"
    return rows


def records_of(r) -> int:
    """The record count of a `--json` produce or perf summary; the command must have succeeded."""
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)["records"]


def assert_exactly_once_in_key_order(rows, n):
    values = [v for _, v in rows]
    assert sorted(values) == list(range(n)), (
        f"{len(values)} records, {len(values) - len(set(values))} duplicates, "
        f"{n - len(set(values))} missing")
    per_key = defaultdict(list)
    for k, v in rows:
        per_key[k].append(v)
    for k, vs in per_key.items():
        assert vs == sorted(vs), f"key {k} out of order"


def test_produce_through_leader_kill9_and_restart(cluster, tmp_path):
    cluster.ensure_up()
    create_topic(cluster, "leader-kill", 3, "min.insync.replicas=2")
    leader = partition_state(cluster.bootstrap, "leader-kill")[0]["leader"]
    n = 40_000
    feeder = SlowFeeder(tmp_path, "leader-kill", cluster.bootstrap, n, "--acks", "all")
    assert wait_for(lambda: feeder.sent > n // 4, 120)
    cluster.node(leader).kill9()
    # the controller moves leadership away from the dead broker
    assert wait_for(lambda: partition_state(cluster.bootstrap, "leader-kill")[0]["leader"] not in (leader, -1), 120,
                    step=POLL)
    # the killed broker restarts while the producer finishes on the other two (min.insync.replicas=2)
    cluster.node(leader).start(wait=False)
    rc, summary, err = feeder.result()
    assert rc == 0, err
    assert summary["records"] == n and summary["failures"] == 0
    assert_exactly_once_in_key_order(read_all(cluster.bootstrap, "leader-kill", n), n)
    cluster.ensure_up()  # and it is back


def test_two_brokers_down_not_enough_replicas_then_delivery_resumes_or_times_out(cluster, tmp_path):
    """The ISR shrinks to the leader alone (two brokers killed): acks=all produce is refused with
    NOT_ENOUGH_REPLICAS. One producer keeps retrying and delivers everything once a broker returns;
    another, with a short delivery timeout, fails and reports every line. Both run in the one outage."""
    cluster.ensure_up()
    create_topic(cluster, "isr-shrink", 1, "min.insync.replicas=2")
    create_topic(cluster, "isr-timeout", 1, "min.insync.replicas=2")
    survivor, others = leader_alone_in_isr(cluster, "isr-shrink")
    # the other topic's partition too: led by the survivor (moved there if a killed broker led it)
    assert wait_for(lambda: partition_state(cluster.node(survivor).bootstrap, "isr-timeout")[0]
                    == {"leader": survivor, "replicas": ANY, "isr": [survivor]}, 120, step=POLL)
    n = 3000
    feeder = SlowFeeder(tmp_path, "isr-shrink", cluster.nodes[survivor - 1].bootstrap, n, "--acks", "all",
                        "-X", "delivery.timeout.ms=180000", burst=500, pause=0.02)
    timed_out = pylog_cli("produce", "isr-timeout", "-b", cluster.nodes[survivor - 1].bootstrap, "--acks", "all",
                          "-X", "delivery.timeout.ms=4000", "-X", "request.timeout.ms=2000", "--json",
                          input="".join(f"v{i}\n" for i in range(20)), timeout=120)
    assert wait_for(lambda: feeder.sent == n, 60)
    # nothing can be acknowledged while the ISR is too small; the first producer keeps retrying
    cluster.node(others[0]).start()
    rc, summary, err = feeder.result()
    cluster.node(others[1]).start(wait=False)  # the other one restarts while the records are read back
    assert rc == 0, err
    assert summary["records"] == n and summary["failures"] == 0
    assert_exactly_once_in_key_order(read_all(cluster.bootstrap, "isr-shrink", n), n)
    cluster.ensure_up()
    # the second one delivered nothing: exit 3, and every line is reported
    assert timed_out.returncode == 3, timed_out.stderr
    summary = json.loads(timed_out.stdout)
    assert summary["failures"] == 20
    assert sorted(f["line"] for f in summary["failed"]) == list(range(1, 21))
    # the Java client's wording for records that outlived delivery.timeout.ms
    assert all(re.match(r"Expiring \d+ record\(s\) for isr-timeout-0:\d+ ms has passed", f["error"])
               for f in summary["failed"]), summary["failed"][:3]


def test_dead_bootstrap_server_is_skipped(cluster):
    cluster.ensure_up()
    create_topic(cluster, "dead-bootstrap", 1)
    with __import__("socket").socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    r = pylog_cli("produce", "dead-bootstrap", "-b", f"{dead},{cluster.nodes[1].bootstrap}", "--json",
                  input="a\nb\nc\n", timeout=120)
    assert records_of(r) == 3


def test_group_consumers_ride_through_coordinator_failover(cluster, tmp_path):
    cluster.ensure_up()
    create_topic(cluster, "failover", 6)
    n = 6000
    r = pylog_cli("produce", "failover", "-b", cluster.bootstrap, "--acks", "all",
                  input="".join(f"{i}\n" for i in range(n)), timeout=120)
    assert r.returncode == 0, r.stderr
    outs = [tmp_path / f"member{i}.txt" for i in range(2)]
    # the members auto-commit every second (Kafka's default is 5 s): the test ends on their last commit
    members = [subprocess.Popen([sys.executable, "-m", "pylog.cli", "consume", "failover", "-b", cluster.bootstrap,
                                 "--group", "riders", "--from-beginning", "-f", "%s\\n",
                                 "-X", "auto.commit.interval.ms=1000"],
                                stdout=open(o, "w"), stderr=subprocess.DEVNULL) for o in outs]
    try:
        def seen():
            return {int(x) for o in outs for x in o.read_text().split()}
        assert wait_for(lambda: len(seen()) > 0, 120)
        desc = kafka_tool("consumer-groups", "--bootstrap-server", cluster.bootstrap,
                          "--describe", "--group", "riders", "--state", check=True).stdout
        coordinator = int(re.search(r"\(\s*(\d+)\s*\)", desc)[1])
        cluster.node(coordinator).kill9()
        more = "".join(f"{i}\n" for i in range(n, 2 * n))
        assert wait_for(lambda: pylog_cli("produce", "failover", "-b", cluster.bootstrap, "--acks", "all",
                                          input=more, timeout=120).returncode == 0, 240, step=1)
        cluster.node(coordinator).start(wait=False)  # back while the members read on (ensure_up waits)
        assert wait_for(lambda: seen() >= set(range(2 * n)), 240, step=0.5), f"saw {len(seen())} of {2 * n}"

        def lag_zero():
            d = kafka_tool("consumer-groups", "--bootstrap-server", cluster.bootstrap,
                           "--describe", "--group", "riders").stdout
            lags = re.findall(r"^riders\s+failover\s+\d+\s+(\d+|-)\s+(\d+)\s+(\d+|-)", d, re.M)
            return len(lags) == 6 and all(lag == "0" for _, _, lag in lags)
        assert wait_for(lag_zero, 180, step=1), "committed offsets did not reach the end"
    finally:
        for m in members:
            m.terminate()
        for m in members:
            m.wait(60)
    cluster.ensure_up()


def test_topics_describe_shows_replicas_and_isr(cluster):
    cluster.ensure_up()
    r = pylog_cli("topics", "create", "admin-rf3", "-p", "2", "-r", "3", "-b", cluster.bootstrap,
                  "-c", "min.insync.replicas=2")
    assert r.returncode == 0, r.stderr
    r = pylog_cli("topics", "describe", "admin-rf3", "-b", cluster.bootstrap, "--json")
    assert r.returncode == 0, r.stderr
    described = json.loads(r.stdout)
    kafka_view = partition_state(cluster.bootstrap, "admin-rf3")
    parts = {p["partition"]: p for p in described["partitions"]}
    assert set(parts) == {0, 1}
    for i, p in parts.items():
        assert p["leader"] == kafka_view[i]["leader"]
        assert sorted(p["replicas"]) == sorted(kafka_view[i]["replicas"])
        assert sorted(p["isr"]) == sorted(kafka_view[i]["isr"])


JAVA_GROUP_MEMBER = r"""
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.common.serialization.StringDeserializer;

public class JavaGroupMember {
    // Joins group a[1] on topic a[2], polls until it owns partitions and has read a[3] records, commits, stays
    // a member until stdin closes.
    public static void main(String[] a) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", a[0]);
        p.put("group.id", a[1]);
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("client.id", "java-member");
        int want = Integer.parseInt(a[3]);
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            c.subscribe(List.of(a[2]));
            int seen = 0;
            long deadline = System.currentTimeMillis() + 120000;
            while ((seen < want || c.assignment().isEmpty()) && System.currentTimeMillis() < deadline) {
                seen += c.poll(Duration.ofMillis(200)).count();
            }
            c.commitSync();
            System.out.println("joined " + c.assignment().size() + " seen " + seen);
            System.out.flush();
            while (System.in.read() != -1) { c.poll(Duration.ofMillis(100)); }
        }
    }
}
"""


def test_groups_describe_on_java_and_librdkafka_members(cluster, tmp_path):
    from confluent_kafka import Consumer

    from support.kafka_peer import compile_java, java_command
    cluster.ensure_up()
    create_topic(cluster, "mixed-group", 4)
    r = pylog_cli("produce", "mixed-group", "-b", cluster.bootstrap, input="".join(f"{i}\n" for i in range(400)))
    assert r.returncode == 0, r.stderr
    classes, name = compile_java(JAVA_GROUP_MEMBER)
    java = subprocess.Popen(java_command(name, cluster.bootstrap, "mixed", "mixed-group", "1", extra_cp=classes),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    rdk = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "mixed", "client.id": "rdkafka-member",
                    "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        rdk.subscribe(["mixed-group"])

        def settled():
            rdk.poll(0.2)
            if not rdk.assignment():  # not in the group yet: no `pylog groups` process to ask
                return None
            d = pylog_cli("groups", "describe", "mixed", "-b", cluster.bootstrap, "--members", "--json")
            if d.returncode != 0:
                return None
            g = json.loads(d.stdout)[0]
            members = g.get("members", [])
            owned = sum(len(m.get("assignment", [])) for m in members)
            return g if len(members) == 2 and owned == 4 and g.get("state") == "Stable" else None
        group = wait_for(settled, 180, step=0.5)
        assert group, "the Java and librdkafka members never shared the group"
        clients = sorted(m["client_id"] for m in group["members"])
        assert clients == ["java-member", "rdkafka-member"]
        # the offsets view agrees with kafka-consumer-groups.sh, partition by partition
        d = pylog_cli("groups", "describe", "mixed", "-b", cluster.bootstrap, "--json")
        assert d.returncode == 0, d.stderr
        kafka = kafka_tool("consumer-groups", "--bootstrap-server", cluster.bootstrap,
                           "--describe", "--group", "mixed", check=True).stdout
        rows = json.loads(d.stdout)[0]["offsets"]
        assert sorted(r["partition"] for r in rows) == [0, 1, 2, 3]
        for row in rows:
            m = re.search(rf"^mixed\s+mixed-group\s+{row['partition']}\s+(\S+)\s+(\d+)\s+\S+\s+(\S+)", kafka, re.M)
            assert m, kafka
            current = "-" if row["current_offset"] is None else str(row["current_offset"])
            assert current == m[1]
            assert row["log_end_offset"] == int(m[2])
            assert row["consumer_id"] == m[3]
    finally:
        rdk.close()
        java.stdin.close()
        java.wait(60)


def test_perf_against_the_cluster(cluster):
    cluster.ensure_up()
    create_topic(cluster, "perf3", 3)
    r = pylog_cli("perf", "produce", "perf3", "-b", cluster.bootstrap, "-n", "20000", "-s", "100", "--json",
                  timeout=180)
    assert records_of(r) == 20000
    r = pylog_cli("perf", "consume", "perf3", "-b", cluster.bootstrap, "-n", "20000", "--json", timeout=180)
    assert records_of(r) == 20000


def test_broker_address_change_is_followed(cluster, tmp_path):
    """A broker returns on another port: the client learns the new address from metadata."""
    from support.kafka_peer import free_port
    cluster.ensure_up()
    create_topic(cluster, "moved", 3)
    n = 30_000
    # bootstrap only through brokers 1 and 2: broker 3's address is only ever learned from metadata
    boot12 = f"{cluster.node(1).bootstrap},{cluster.node(2).bootstrap}"
    feeder = SlowFeeder(tmp_path, "moved", boot12, n, "--acks", "all")
    assert wait_for(lambda: feeder.sent > n // 5, 120)
    node = cluster.node(3)
    old_port = node.port
    node.stop()
    node.port = free_port()
    node.write_config().start()  # the formatted dirs are kept
    assert node.port != old_port
    rc, summary, err = feeder.result()
    assert rc == 0, err
    assert summary["records"] == n and summary["failures"] == 0
    assert_exactly_once_in_key_order(read_all(boot12, "moved", n), n)

    def led_by_3():
        return [p for p, s in partition_state(cluster.bootstrap, "moved").items() if s["leader"] == 3]
    # after the preferred-leader election broker 3 leads again, now on its new port
    parts = wait_for(led_by_3, 180, step=1)
    assert parts, "broker 3 never became a leader again"
    r = pylog_cli("produce", "moved", "-b", boot12, "-p", str(parts[0]), "--json", input="after-move\n")
    assert r.returncode == 0, r.stderr
