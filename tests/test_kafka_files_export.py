"""The way out: `pylog export-to-kafka` hands a pylog log dir to a fresh Apache Kafka node.

pylog's broker writes topics (every codec, idempotent producer, config
overrides, a compacted topic, committed group offsets); the command adds their
KRaft metadata to a freshly formatted node; Kafka then serves every record at
its original offset under the same topic id, with the same configs and the
group's committed offsets, and takes new writes after them.
"""
from __future__ import annotations

import json
import re
from concurrent.futures import ThreadPoolExecutor

import pytest
from click.testing import CliRunner

from support.broker_fixtures import BrokerProcess
from support.kafka_peer import KafkaNode, shell  # noqa: F401
from pylog.cli.main import cli
from pylog.storage.meta_properties import MetaProperties, write_meta_properties
from support.cli import pylog

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
TOPIC = "exp-codecs"
COMPACTED = "exp-compacted"
GROUP = "exp-group"
CONFIGS = {"retention.ms": "604800000", "max.message.bytes": "2000000", "message.timestamp.type": "CreateTime"}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A pylog log dir written by its broker, exported into a formatted Kafka node, which is then started."""
    from confluent_kafka import Consumer, TopicPartition

    from pylog.core.client import Producer

    root = tmp_path_factory.mktemp("export")
    src = root / "pylog-data"
    # the Kafka node's kafka-storage format JVM runs while pylog's broker is written
    pool = ThreadPoolExecutor(1)
    formatted = pool.submit(KafkaNode(root / "kafka").format)
    pool.shutdown(wait=False)
    b = BrokerProcess(src).start()
    expected = {}  # (topic, partition, offset) -> (key, value)
    try:
        r = pylog("topics", "create", TOPIC, "-p", "3", "--bootstrap", b.bootstrap,
                  *[x for k, v in CONFIGS.items() for x in ("-c", f"{k}={v}")])
        assert r.returncode == 0, r.stderr
        r = pylog("topics", "create", COMPACTED, "-p", "1", "--bootstrap", b.bootstrap, "-c", "cleanup.policy=compact")
        assert r.returncode == 0, r.stderr
        for codec in CODECS:
            with Producer({"bootstrap.servers": b.bootstrap, "compression.type": codec, "linger.ms": 20}) as p:
                futs = [(f"{codec}-k{i}", f"{codec}-v{i}", p.send(TOPIC, f"{codec}-v{i}".encode(),
                                                                 key=f"{codec}-k{i}".encode(),
                                                                 headers=[("h", codec.encode())]))
                        for i in range(40)]
                futs += [(f"u{i % 5}", f"{codec}-{i}", p.send(COMPACTED, f"{codec}-{i}".encode(),
                                                               key=f"u{i % 5}".encode())) for i in range(10)]
                for k, v, f in futs:
                    md = f.get(30)
                    topic = TOPIC if not k.startswith("u") else COMPACTED
                    expected[(topic, md.partition, md.offset)] = (k, v)
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": GROUP, "enable.auto.commit": False})
        committed = {TopicPartition(TOPIC, p, 7 + p) for p in range(3)}
        c.commit(offsets=list(committed), asynchronous=False)
        c.close()
    finally:
        assert b.stop() == 0, b.stderr()
    node = formatted.result()
    run = CliRunner().invoke(cli, ["export-to-kafka", str(src), "-c", str(node.config_path), "--json"],
                             catch_exceptions=False)
    assert run.exit_code == 0, run.output
    summary = json.loads(run.output)
    node.start()
    yield node, src, expected, summary
    node.stop()


def test_help_and_man():
    r = CliRunner().invoke(cli, ["export-to-kafka", "--help"])
    assert r.exit_code == 0 and "kafka-storage.sh format" in r.output and "--kafka-config" in r.output


def consume_all(shell, node, topic: str, expect: int) -> dict:
    """Kafka's console consumer from the beginning: (partition, offset) -> (key, value)."""
    p = shell.run("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", node.bootstrap,
                 "--topic", topic, "--from-beginning", "--max-messages", str(expect), "--timeout-ms", "60000",
                 "--formatter-property", "print.partition=true", "--formatter-property", "print.offset=true",
                 "--formatter-property", "print.key=true", timeout=120)
    got = {}
    for line in p.stdout.splitlines():
        m = re.match(r"^Partition:(\d+)\tOffset:(\d+)\t(.*)\t(.*)$", line)
        assert m, f"unexpected console consumer line {line!r}\n{p.stderr[-2000:]}"
        got[(int(m.group(1)), int(m.group(2)))] = (m.group(3), m.group(4))
    return got


def test_kafka_serves_every_record_at_its_offset(exported, shell):
    node, _, expected, _ = exported
    want = {(p, o): kv for (t, p, o), kv in expected.items() if t == TOPIC}
    assert consume_all(shell, node, TOPIC, len(want)) == want
    want = {(p, o): kv for (t, p, o), kv in expected.items() if t == COMPACTED}
    assert consume_all(shell, node, COMPACTED, len(want)) == want


def test_same_topic_ids_partitions_and_configs(exported, shell):
    node, src, _, summary = exported
    ids = {t["name"]: t["topic_id"] for t in summary["topics"]}
    for topic, partitions in ((TOPIC, 3), (COMPACTED, 1)):
        pm = (src / f"{topic}-0" / "partition.metadata").read_text()
        assert f"topic_id: {ids[topic]}" in pm
        p = shell.run("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", node.bootstrap, "--describe",
                     "--topic", topic, check=True)
        first = p.stdout.splitlines()[0]
        assert f"TopicId: {ids[topic]}" in first and f"PartitionCount: {partitions}" in first, p.stdout
    configs = shell.run("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", node.bootstrap, "--describe",
                       "--topic", TOPIC, check=True).stdout.splitlines()[0]
    for k, v in CONFIGS.items():
        assert f"{k}={v}" in configs, configs
    compacted = shell.run("org.apache.kafka.tools.TopicCommand", "--bootstrap-server", node.bootstrap, "--describe",
                         "--topic", COMPACTED, check=True).stdout
    assert "cleanup.policy=compact" in compacted


def test_committed_group_offsets_move_with_the_data(exported, shell):
    node = exported[0]
    p = shell.run("org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--bootstrap-server", node.bootstrap,
                 "--describe", "--group", GROUP, check=True)
    rows = {}
    for line in p.stdout.splitlines():
        cols = line.split()
        if len(cols) >= 5 and cols[0] == GROUP and cols[1] == TOPIC:
            rows[int(cols[2])] = int(cols[3])
    assert rows == {0: 7, 1: 8, 2: 9}, p.stdout


def test_kafka_appends_after_the_exported_records(exported, shell):
    """A new idempotent Kafka producer lands at the old end offset; its producer id is above pylog's."""
    node, _, expected, summary = exported
    end = 1 + max(o for (t, p, o) in expected if t == TOPIC and p == 0)
    p = shell.run("org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server", node.bootstrap, "--topic", TOPIC,
                 "--property", "parse.key=true", "--property", "key.separator=:",
                 "--producer-property", "partitioner.class=org.apache.kafka.clients.producer.RoundRobinPartitioner",
                 input="".join(f"after{i}:v{i}\n" for i in range(3)), check=True)
    assert p.returncode == 0
    got = consume_all(shell, node, TOPIC, sum(1 for k in expected if k[0] == TOPIC) + 3)
    assert got[(0, end)][0].startswith("after")
    dump = shell.run("org.apache.kafka.tools.DumpLogSegments", "--files",
                    str(node.log_dir / f"{TOPIC}-0" / "00000000000000000000.log"), check=True).stdout
    pids = [int(m) for m in re.findall(r"producerId: (\d+)", dump)]
    assert pids[-1] >= summary["next_producer_id"] > max(pids[:-1])


# ------------------------------------------------------------------ refusals (no Kafka process needed)
def _fake_node(tmp_path, roles="broker,controller"):
    data = tmp_path / "kdata"
    data.mkdir()
    write_meta_properties(data, MetaProperties("AAAAAAAAAAAAAAAAAAAAAA", 1, "BBBBBBBBBBBBBBBBBBBBBB"))
    cfg = tmp_path / "server.properties"
    cfg.write_text(f"process.roles={roles}\nnode.id=1\nlog.dirs={data}\n")
    return data, cfg


def test_refuses_broker_only_config(tmp_path):
    _, cfg = _fake_node(tmp_path, roles="broker")
    (tmp_path / "src").mkdir()
    r = pylog("export-to-kafka", tmp_path / "src", "-c", cfg)
    assert r.returncode == 2 and "process.roles" in r.stderr and "Traceback" not in r.stderr


def test_refuses_unformatted_and_started_nodes(tmp_path):
    data, cfg = _fake_node(tmp_path)
    (tmp_path / "src").mkdir()
    r = pylog("export-to-kafka", tmp_path / "src", "-c", cfg)
    assert r.returncode == 1 and "no bootstrap.checkpoint" in r.stderr  # formatted by hand: no bootstrap file
    meta = data / "__cluster_metadata-0"
    meta.mkdir()
    (meta / "00000000000000000000.log").write_bytes(b"x" * 100)
    r = pylog("export-to-kafka", tmp_path / "src", "-c", cfg)
    assert r.returncode == 1 and "already started" in r.stderr
    (meta / "00000000000000000000.log").write_bytes(b"")
    (meta / "00000000000000000000-0000000000.checkpoint").write_bytes(b"")  # Kafka 4.4's bootstrap snapshot
    r = pylog("export-to-kafka", tmp_path / "src", "-c", cfg)
    assert r.returncode == 1 and "no snapshot header" in r.stderr
    (meta / "00000000000000000042-0000000001.checkpoint").write_bytes(b"")  # a snapshot of a started node
    r = pylog("export-to-kafka", tmp_path / "src", "-c", cfg)
    assert r.returncode == 1 and "freshly formatted" in r.stderr
    (data / "meta.properties").unlink()
    r = pylog("export-to-kafka", tmp_path / "src", "-c", cfg)
    assert r.returncode == 1 and "format the node first" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_refuses_a_dir_a_pylog_broker_holds(tmp_path, broker_factory):
    b = broker_factory(tmp_path / "live")
    _, cfg = _fake_node(tmp_path)
    r = pylog("export-to-kafka", b.log_dir, "-c", cfg)
    assert r.returncode == 1 and "locked" in r.stderr
