"""`pylog console` pointed at an Apache Kafka 4.4.0 node, in a real browser (headless Chromium):
the cluster, topics, the message browser (registry decode with pylog's registry storing its
schemas in Kafka, a record produced from the page), a group's lag falling as it consumes, a
share group (Kafka shows start offsets and lag, not the records in flight), transactions,
ACLs/users/quotas, and Kafka's own log dir read from disk: segments, batches and verdicts."""
from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
import time

import pytest

from pylog.core.client import Consumer, Producer, TopicPartition
from pylog.core.client.membership import attach_group
from pylog.core.client.group_admin import GroupAdmin
from pylog.core.client.schema_registry import RegistryClient, Serializer
from pylog.core.client.share_consumer import ShareConsumer
from pylog.core.errors import RetriableError
from pylog.registry.service import SchemaRegistryService
from support.browser import Browser
from support.cli import pylog

ORDER = {"type": "record", "name": "Order", "fields": [{"name": "id", "type": "int"}, {"name": "item", "type": "string"}]}


class ConsoleProcess:
    """`pylog console ...` as a process; `url` once it says where it serves."""

    def __init__(self, *args: str):
        self.proc = subprocess.Popen([sys.executable, "-m", "pylog.cli", "console", "--listen", "127.0.0.1:0", *args],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [lines.put(x) for x in self.proc.stdout], daemon=True).start()
        try:
            line = lines.get(timeout=60)
        except queue.Empty:
            self.proc.kill()
            raise AssertionError(f"pylog console did not start: {self.proc.stderr.read()}") from None
        assert line.startswith("pylog console on "), line + self.proc.stderr.read()
        self.url = line.split()[3]

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(30)


@pytest.fixture(scope="module")
def env(kafka_node):
    props = {"bootstrap.servers": kafka_node.bootstrap}
    reg = SchemaRegistryService({**props, "client.id": "console-test-registry"}, ["http://127.0.0.1:0"],
                                replication_factor=1)
    reg.start()
    held = []
    try:
        for name, n in (("c-orders", 2), ("c-avro", 1), ("c-shared", 1)):
            r = pylog("topics", "create", name, "-p", n, "-b", kafka_node.bootstrap)
            assert r.returncode == 0, r.stderr
        rc = RegistryClient(reg.urls[0])
        ser = Serializer(rc, "avro", "c-avro-value", json.dumps(ORDER))
        with Producer(props) as p:
            for i in range(100):
                p.send("c-orders", json.dumps({"n": i}), key=f"k{i}", partition=i % 2)
            for i in range(3):
                p.send("c-avro", ser.encode({"id": i, "item": f"gear-{i}"}))
            p.flush(30)
        with GroupAdmin(props) as ga:
            deadline = time.monotonic() + 60
            while True:  # Kafka creates __consumer_offsets on the first FindCoordinator: retriable until then
                try:
                    ga.alter_offsets("c-billing", {TopicPartition("c-orders", p): 10 for p in range(2)})
                    break
                except RetriableError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.2)
        sc = ShareConsumer({**props, "group.id": "c-jobs", "share.acknowledgement.mode": "explicit"})
        held.append(sc)
        sc.subscribe(["c-shared"])
        sc.poll(1.0)
        got, deadline = [], time.monotonic() + 60
        with Producer(props) as p:
            while not got and time.monotonic() < deadline:
                p.send("c-shared", b"job")
                p.flush(30)
                got = sc.poll(2.0)
        assert got, "no share records from Kafka"
        tx = Producer({**props, "transactional.id": "c-tx"})
        held.append(tx)
        tx.init_transactions()
        tx.begin_transaction()
        tx.send("c-orders", b"pending", partition=0)
        tx.flush(30)
        console = ConsoleProcess("-b", kafka_node.bootstrap, "--allow-writes", "--schema-registry", reg.urls[0],
                                 "--log-dir", str(kafka_node.log_dir), "--sample-interval", "1")
        br = Browser()
        br.base = console.url
        try:
            yield {"props": props, "browser": br, "node": kafka_node}
        finally:
            br.close()
            assert console.stop() == 0
    finally:
        for c in held:
            c.close()
        reg.stop()


def test_cluster_topics_and_topic_pages(env):
    br = env["browser"]
    br.open("", "overview")
    assert str(env["node"].port) in br.text("#brokers") and "Metrics over time" in br.text("#page")
    def counted():  # the topics page answers from the console's last snapshot (one per sample interval)
        br.open("topics", "topics")
        return {r[0].split()[0]: r for r in br.rows("topics")}.get("c-orders", [None] * 4)[3] == "101"
    br.wait(counted, 60, "c-orders with its 101 records")
    rows = {r[0].split()[0]: r for r in br.rows("topics")}
    assert rows["c-orders"][1] == "2"
    br.open("topic/c-orders", "topic")
    assert [p[0] for p in br.rows("partitions")] == ["0", "1"]
    assert {r[0] for r in br.rows("configs")} >= {"cleanup.policy", "retention.ms", "segment.bytes"}
    br.screenshot("kafka-topic")


def test_messages_registry_decode_and_produce(env):
    br = env["browser"]
    br.open("messages/c-orders?partition=1&start=offset&offset=5&limit=3", "messages")
    rows = br.rows("records")
    assert [r[0] for r in rows] == ["5", "6", "7"] and rows[0][2] == "k11"
    br.open("messages/c-avro?partition=0&start=beginning", "messages")
    value, how = br.rows("records")[1][3].rsplit(" ", 1)
    assert how == "registry" and json.loads(value) == {"id": 1, "item": "gear-1"}
    br.open("messages/c-orders?partition=1&start=end&limit=5", "messages")
    br.fill("produce", {"partition": "1", "key": "kafka-page", "value": "hello kafka"})
    br.submit("produce")
    br.wait(lambda: any(r[2] == "kafka-page" for r in br.rows("records")), 30, "the produced record")
    br.screenshot("kafka-messages")


def test_group_lag_falls_as_it_consumes(env):
    br = env["browser"]
    br.open("groups", "groups")
    kinds = {r[0]: r[1] for r in br.rows("groups")}
    assert kinds["c-billing"] in ("classic", "consumer") and kinds["c-jobs"] == "share"
    br.open("group/c-billing", "group")
    before = int(br.text("#total-lag").replace(",", ""))
    assert before >= 80
    with Consumer({**env["props"], "group.id": "c-billing", "enable.auto.commit": "false",
                   "max.poll.records": "10"}) as c:
        attach_group(c)
        c.subscribe(["c-orders"])
        seen, deadline = 0, time.monotonic() + 60
        while seen < 60 and time.monotonic() < deadline:
            got = sum(len(v) for v in c.poll(1000).values())
            if got:
                seen += got
                c.commit()
    br.wait(lambda: int(br.text("#total-lag").replace(",", "") or before) < before, 60, "lag falling")
    br.screenshot("kafka-group")


def test_share_group_transactions_and_security(env):
    br = env["browser"]
    br.open("share/c-jobs", "share")
    assert [r[0] for r in br.rows("share-partitions")] == ["c-shared"]
    assert "Kafka exposes" in br.text("#page")
    br.open("transactions", "transactions")
    tx = {r[0]: r for r in br.rows("transactions")}
    assert tx["c-tx"][1] == "Ongoing"
    br.open("security", "security")
    assert "Authorizer" in br.text("#page")  # Kafka without an authorizer says so; users and quotas list
    assert br.rows("users") == [] and br.error() == ""


def test_kafka_log_dir_from_disk(env):
    br = env["browser"]
    # verifying reads every partition of the node's dir (the internal topics' 50 partitions each too)
    br.open("logdir?verify=1", "logdir", timeout=180)
    parts = {r[0]: r for r in br.rows("partitions")}
    assert parts["c-orders-0"][4] in ("clean", "repairable")
    br.open("logdir-seg/c-orders-0/00000000000000000000.log", "logdir-seg")
    batches = br.rows("batches")
    assert batches and batches[0][0] == "0" and all(b[-1] == "true" for b in batches)
    br.screenshot("kafka-segment")


def test_a_read_only_console_refuses_writes(env):
    ro = ConsoleProcess("-b", env["node"].bootstrap)
    br = env["browser"]
    old = br.base
    try:
        br.base = ro.url
        br.open("topics", "topics")
        assert "read-only" in br.text("#mode")
        ans = br.fetch("POST", "/api/topics", {"name": "nope", "partitions": 1})
        assert ans["status"] == 403 and "read-only" in ans["body"]["error"]
    finally:
        br.base = old
        br.driver.get(old)
        assert ro.stop() == 0
    r = pylog("topics", "describe", "nope", "-b", env["node"].bootstrap)
    assert r.returncode != 0
