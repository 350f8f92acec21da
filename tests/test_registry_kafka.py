"""`pylog schema-registry start` beside Apache Kafka 4.x: confluent-kafka's serialisers
through pylog's registry, schemas stored in the Apache Kafka cluster's `_schemas`."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid

import pytest

from support.registry import free_port, rest, roundtrip

pytest.importorskip("confluent_kafka")
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer  # noqa: E402


@pytest.fixture(scope="module")
def standalone(kafka_node, tmp_path_factory):
    port = free_port()
    log = tmp_path_factory.mktemp("registry") / "registry.log"
    with open(log, "wb") as err:
        proc = subprocess.Popen([sys.executable, "-m", "pylog.cli", "schema-registry", "start",
                                 "-b", kafka_node.bootstrap, "--listen", f"http://127.0.0.1:{port}",
                                 "--replication-factor", "1"],
                                stdout=subprocess.PIPE, stderr=err, text=True)
    line = proc.stdout.readline()
    assert line.startswith("pylog schema registry on"), (line, log.read_text())
    yield f"http://127.0.0.1:{port}", proc
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(60) == 0, log.read_text()


def test_confluent_serializers_beside_apache_kafka(kafka_node, standalone):
    url, _ = standalone
    sr = SchemaRegistryClient({"url": url})
    schema = {"type": "record", "name": "Reading", "fields": [{"name": "sensor", "type": "string"},
                                                               {"name": "value", "type": "double"}]}
    topic = f"readings-{uuid.uuid4().hex[:8]}"
    values = [{"sensor": f"s{i}", "value": i / 2} for i in range(10)]
    got = roundtrip(kafka_node, topic, AvroSerializer(sr, json.dumps(schema)), AvroDeserializer(sr), values)
    assert [g[1] for g in got] == values
    assert sr.get_latest_version(f"{topic}-value").version == 1
    assert sr.register_schema(f"{topic}-value", Schema(json.dumps(schema), "AVRO")) == \
        int.from_bytes(got[0][0][1:5], "big")


def test_store_is_apache_kafkas_topic(kafka_node, standalone, tmp_path):
    url, proc = standalone
    subject = f"k-{uuid.uuid4().hex[:8]}"
    schema = json.dumps({"type": "record", "name": "K", "fields": [{"name": "a", "type": "int"}]})
    sid = rest(f"{url}/subjects/{subject}/versions", "POST", {"schema": schema})[1]["id"]
    # a second registry on the same cluster reads what the first stored
    port = free_port()
    with open(tmp_path / "second.log", "wb") as err:
        p2 = subprocess.Popen([sys.executable, "-m", "pylog.cli", "schema-registry", "start",
                               "-b", kafka_node.bootstrap, "--listen", f"http://127.0.0.1:{port}", "--read-only"],
                              stdout=subprocess.PIPE, stderr=err, text=True)
    try:
        assert p2.stdout.readline().startswith("pylog schema registry on")
        st, body, _ = rest(f"http://127.0.0.1:{port}/schemas/ids/{sid}")
        assert st == 200 and json.loads(body["schema"]) == json.loads(schema)
        st, body, _ = rest(f"http://127.0.0.1:{port}/subjects/{subject}/versions", "POST", {"schema": schema})
        assert (st, body["error_code"]) == (422, 42205)  # --read-only
    finally:
        p2.send_signal(signal.SIGTERM)
        assert p2.wait(60) == 0
    # Apache Kafka's own view of the topic: compacted, one partition, Confluent's keys
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": kafka_node.bootstrap})
    res = ConfigResource(ConfigResource.Type.TOPIC, "_schemas")
    configs = admin.describe_configs([res])[res].result(30)
    assert configs["cleanup.policy"].value == "compact"
    md = admin.list_topics("_schemas", timeout=30)
    assert len(md.topics["_schemas"].partitions) == 1
    c = Consumer({"bootstrap.servers": kafka_node.bootstrap, "group.id": "x-" + uuid.uuid4().hex[:6],
                  "enable.auto.commit": False})
    c.assign([TopicPartition("_schemas", 0, 0)])
    keys = []
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None:
            if keys:
                break
            continue
        if not m.error():
            keys.append(json.loads(m.key()))
    c.close()
    assert {"keytype": "SCHEMA", "subject": subject, "version": 1, "magic": 1} in keys
