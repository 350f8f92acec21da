"""Apache Kafka's command-line tools (their main classes, version in tests/kafka/pom.xml)
against `pylog broker start`: kafka-topics, console producer/consumer, kafka-consumer-groups,
kafka-get-offsets, kafka-configs, kafka-delete-records, kafka-log-dirs,
kafka-broker-api-versions. One pylog broker for the module; the tools run in one JVM
(kafka_peer.ToolShell), each through its main class with Kafka's exit code and output.
"""
from __future__ import annotations

import json
import re
import subprocess
import time

import pytest

from support.broker_fixtures import wait_for
from support.kafka_peer import TOOLS, java_command, shell  # noqa: F401
from support.cli import pylog

@pytest.fixture
def tool(broker, shell):
    """tool(NAME, *args): kafka-NAME against the broker; ok=True asserts exit 0, ok=False a failure."""
    def run(name: str, *args, ok: bool = True, input: str | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess:
        proc = shell.run(TOOLS[name], "--bootstrap-server", broker.bootstrap, *map(str, args),
                         input=input, timeout=timeout)
        if ok:
            assert proc.returncode == 0, f"kafka-{name} {args} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
        else:
            assert proc.returncode != 0, f"kafka-{name} {args} succeeded:\n{proc.stdout}"
        return proc
    return run


def pylog_produce_json(broker, topic: str, records: list[dict]) -> None:
    lines = "".join(json.dumps(r) + "\n" for r in records)
    pylog("produce", topic, "--bootstrap", broker.bootstrap, "--format", "json", input=lines, check=True, timeout=60)


def offsets(tool, *args) -> dict[str, int]:
    """kafka-get-offsets output as {"topic:partition": offset}."""
    out = tool("get-offsets", *args).stdout
    return {line.rsplit(":", 1)[0]: int(line.rsplit(":", 1)[1]) for line in out.split()}


def test_kafka_topics(tool, broker):
    tool("topics", "--create", "--topic", "tp", "--partitions", "2",
               "--config", "cleanup.policy=compact", "--config", "segment.bytes=1048576")
    dup = tool("topics", "--create", "--topic", "tp", "--partitions", "2", ok=False)
    assert "TopicExistsException" in dup.stdout + dup.stderr
    tool("topics", "--create", "--topic", "tp", "--partitions", "2", "--if-not-exists")
    rf = tool("topics", "--create", "--topic", "tp-rf3", "--replication-factor", "3", ok=False)
    assert "InvalidReplicationFactorException" in rf.stdout + rf.stderr
    bad = tool("topics", "--create", "--topic", "tp-bad", "--config", "no.such.config=1", ok=False)
    assert "InvalidConfigurationException" in bad.stdout + bad.stderr
    assert "tp" in tool("topics", "--list").stdout.split()

    tool("topics", "--alter", "--topic", "tp", "--partitions", "3")
    shrink = tool("topics", "--alter", "--topic", "tp", "--partitions", "1", ok=False)
    assert "InvalidPartitionsException" in shrink.stdout + shrink.stderr
    desc = tool("topics", "--describe", "--topic", "tp").stdout.splitlines()
    head = dict(re.findall(r"(\w+): (\S*)", desc[0]))
    assert head["Topic"] == "tp" and head["PartitionCount"] == "3" and head["ReplicationFactor"] == "1"
    assert re.match(r"^[A-Za-z0-9_-]{22}$", head["TopicId"])
    assert set(head["Configs"].split(",")) == {"cleanup.policy=compact", "segment.bytes=1048576"}
    parts = [dict(re.findall(r"(\w+): (\S*)", line)) for line in desc[1:]]
    assert [(p["Partition"], p["Leader"], p["Replicas"], p["Isr"]) for p in parts] == [
        (str(i), "1", "1", "1") for i in range(3)]
    # DescribeTopicPartitions: a one-node cluster's ELR and last known ELR are empty, as Kafka prints them
    assert {(p["Elr"], p["LastKnownElr"]) for p in parts} == {("", "")}
    missing = tool("topics", "--describe", "--topic", "tp-missing", ok=False)
    assert "does not exist" in missing.stdout + missing.stderr

    tool("topics", "--delete", "--topic", "tp")
    assert wait_for(lambda: "tp" not in tool("topics", "--list").stdout.split(), 30)
    assert not (broker.log_dir / "tp-0").exists()


@pytest.fixture(scope="module")
def console_topic(broker, shell):
    """Three keyed records with headers written by kafka-console-producer (zstd)."""
    shell.run(TOOLS["topics"], "--bootstrap-server", broker.bootstrap, "--create", "--topic", "console",
              "--partitions", "1", check=True)
    shell.run(TOOLS["console-producer"], "--bootstrap-server", broker.bootstrap, "--topic", "console",
              "--compression-codec", "zstd", "--reader-property", "parse.key=true",
              "--reader-property", "key.separator=:", "--reader-property", "parse.headers=true",
              input="h1:a,h2:b\tk1:v1\nh1:c\tk2:v2\nh1:d\tk1:v3\n", check=True)
    return "console"


def test_console_producer_and_consumer(tool, broker, console_topic):
    out = tool("console-consumer", "--topic", console_topic, "--from-beginning",
                     "--max-messages", "3", "--timeout-ms", "60000", "--group", "console-reader",
                     "--formatter-property", "print.key=true", "--formatter-property", "print.offset=true",
                     "--formatter-property", "print.partition=true", "--formatter-property", "print.headers=true")
    lines = [line for line in out.stdout.splitlines() if line.startswith("Partition:")]
    assert lines == ["Partition:0\tOffset:0\th1:a,h2:b\tk1\tv1",
                     "Partition:0\tOffset:1\th1:c\tk2\tv2",
                     "Partition:0\tOffset:2\th1:d\tk1\tv3"]
    assert "Processed a total of 3 messages" in out.stderr
    batches = pylog("dump-segment", "--json", *sorted((broker.log_dir / "console-0").glob("*.log")),
                    check=True).stdout
    assert {json.loads(b)["compresscodec"] for b in batches.splitlines()[1:]} == {"zstd"}


def group_table(text: str) -> list[dict]:
    """Rows of a kafka-consumer-groups table (header line, then whitespace-separated rows)."""
    lines = [line for line in text.splitlines() if line.strip()]
    start = next(i for i, line in enumerate(lines) if line.startswith("GROUP "))
    names = lines[start].split()
    return [dict(zip(names, line.split())) for line in lines[start + 1:]]


def test_kafka_consumer_groups(tool, broker, console_topic):
    tool("console-consumer", "--topic", console_topic, "--from-beginning", "--max-messages", "3",
               "--timeout-ms", "60000", "--group", "console-group")
    assert "console-group" in tool("consumer-groups", "--list").stdout.split()
    rows = group_table(tool("consumer-groups", "--describe", "--group", "console-group").stdout)
    assert [(r["TOPIC"], r["PARTITION"], r["CURRENT-OFFSET"], r["LOG-END-OFFSET"], r["LAG"], r["CONSUMER-ID"])
            for r in rows] == [("console", "0", "3", "3", "0", "-")]
    state = group_table(tool("consumer-groups", "--describe", "--group", "console-group",
                                   "--state").stdout)
    assert (state[0]["STATE"], state[0]["#MEMBERS"]) == ("Empty", "0")
    assert re.match(rf"{broker.host}:{broker.port}", state[0]["COORDINATOR"])

    # an active member: offsets cannot be reset while it is there
    member = subprocess.Popen(java_command(TOOLS["console-consumer"], "--bootstrap-server", broker.bootstrap,
                                           "--topic", console_topic, "--group", "console-group"),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def stable():
            out = tool("consumer-groups", "--describe", "--group", "console-group",
                             "--members", "--verbose").stdout
            rows = group_table(out) if "CONSUMER-ID" in out else []
            return rows if rows and rows[0].get("CURRENT-ASSIGNMENT") == f"{console_topic}:0" else None
        members = wait_for(stable, 90, 1)
        assert members and members[0]["#PARTITIONS"] == "1" and members[0]["CLIENT-ID"].startswith("console-consumer")
        # Kafka's tool prints the refusal and exits 0
        busy = tool("consumer-groups", "--reset-offsets", "--group", "console-group",
                    "--topic", console_topic, "--to-earliest", "--execute")
        assert "can only be reset if the group 'console-group' is inactive, but the current state is Stable" \
            in busy.stdout
    finally:
        member.terminate()   # the console consumer closes and leaves the group
        member.wait(60)
    assert wait_for(lambda: "Empty" in tool("consumer-groups", "--describe", "--group",
                                                  "console-group", "--state").stdout, 60, 1)

    dry = group_table(tool("consumer-groups", "--reset-offsets", "--group", "console-group",
                                 "--topic", console_topic, "--to-offset", "1", "--dry-run").stdout)
    assert [(r["PARTITION"], r["NEW-OFFSET"]) for r in dry] == [("0", "1")]
    tool("consumer-groups", "--reset-offsets", "--group", "console-group",
               "--topic", f"{console_topic}:0", "--shift-by", "-2", "--execute")
    rows = group_table(tool("consumer-groups", "--describe", "--group", "console-group").stdout)
    assert (rows[0]["CURRENT-OFFSET"], rows[0]["LAG"]) == ("1", "2")
    tool("consumer-groups", "--reset-offsets", "--group", "console-group", "--all-topics",
               "--to-earliest", "--execute")
    rows = group_table(tool("consumer-groups", "--describe", "--group", "console-group").stdout)
    assert rows[0]["CURRENT-OFFSET"] == "0"

    deleted = tool("consumer-groups", "--delete-offsets", "--group", "console-group",
                         "--topic", console_topic).stdout
    assert re.search(rf"{console_topic}\s+0\s+Successful", deleted)
    tool("consumer-groups", "--delete", "--group", "console-group")
    assert "console-group" not in tool("consumer-groups", "--list").stdout.split()
    again = tool("consumer-groups", "--delete", "--group", "console-group")   # Kafka's tool exits 0
    assert "could not be deleted due to: org.apache.kafka.common.errors.GroupIdNotFoundException" in again.stdout


def test_kafka_get_offsets(tool, broker):
    tool("topics", "--create", "--topic", "when", "--partitions", "2")
    now = int(time.time() * 1000)
    stamps = [now - 9000, now - 8000, now - 7000, now + 1000, now - 6000, now - 5000]
    pylog_produce_json(broker, "when", [{"value": f"v{i}", "partition": 0, "timestamp": t}
                                        for i, t in enumerate(stamps)])
    assert offsets(tool, "--topic", "when") == {"when:0": 6, "when:1": 0}
    assert offsets(tool, "--topic", "when", "--time", "-1") == {"when:0": 6, "when:1": 0}
    assert offsets(tool, "--topic", "when", "--time", "-2") == {"when:0": 0, "when:1": 0}
    assert offsets(tool, "--topic-partitions", "when:0", "--time", "-3") == {"when:0": 3}   # max timestamp
    assert offsets(tool, "--topic-partitions", "when:0", "--time", "earliest") == {"when:0": 0}
    assert offsets(tool, "--topic-partitions", "when:0", "--time", str(now - 7500)) == {"when:0": 2}
    # no record at or after the timestamp: Kafka's tool prints nothing for the partition
    assert offsets(tool, "--topic-partitions", "when:0", "--time", str(now + 60_000)) == {}
    everything = offsets(tool, "--exclude-internal-topics")
    assert everything["when:0"] == 6 and not [k for k in everything if k.startswith("__")]


def config_lines(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in re.finditer(r"^  ([\w.]+)=(.*)$", text, re.M)}


def test_kafka_configs_topic(tool, broker):
    tool("topics", "--create", "--topic", "cfg", "--config", "segment.bytes=1048576")
    describe = ("--entity-type", "topics", "--entity-name", "cfg", "--describe")
    got = config_lines(tool("configs", *describe).stdout)
    assert got == {"segment.bytes": "1048576 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:segment.bytes=1048576, "
                                    "DEFAULT_CONFIG:log.segment.bytes=1073741824}"}
    tool("configs", "--entity-type", "topics", "--entity-name", "cfg", "--alter",
               "--add-config", "retention.ms=1000,cleanup.policy=[compact,delete]")
    tool("configs", "--entity-type", "topics", "--entity-name", "cfg", "--alter",
               "--delete-config", "segment.bytes")
    got = config_lines(tool("configs", *describe).stdout)
    assert got == {
        "cleanup.policy": "compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, "
                          "DEFAULT_CONFIG:log.cleanup.policy=delete}",
        # Kafka names a default synonym only when the primary broker property (log.retention.ms) has a value
        "retention.ms": "1000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=1000}",
    }
    everything = config_lines(tool("configs", *describe, "--all").stdout)
    assert everything["segment.bytes"] == ("1073741824 sensitive=false "
                                           "synonyms={DEFAULT_CONFIG:log.segment.bytes=1073741824}")
    assert everything["segment.ms"] == "604800000 sensitive=false synonyms={}"
    assert everything["flush.ms"] == "9223372036854775807 sensitive=false synonyms={}"
    assert everything["max.message.bytes"] == ("1048588 sensitive=false "
                                               "synonyms={DEFAULT_CONFIG:message.max.bytes=1048588}")
    # topic configs pylog does not list (README): tiered storage, compression levels
    assert not [k for k in everything if k.startswith(("remote.", "local.retention.", "compression.")) and
                k != "compression.type"]
    # the replication throttles kafka-reassign-partitions sets and clears (nothing to throttle on one node)
    assert everything["leader.replication.throttled.replicas"] == " sensitive=false synonyms={}"
    bad = tool("configs", "--entity-type", "topics", "--entity-name", "cfg", "--alter",
                     "--add-config", "retention.ms=abc", ok=False)
    assert "InvalidConfigurationException" in bad.stdout + bad.stderr
    broker_cfg = config_lines(tool("configs", "--entity-type", "brokers", "--entity-name", "1",
                                         "--describe", "--all").stdout)
    assert broker_cfg["log.retention.hours"] == "168 sensitive=false synonyms={DEFAULT_CONFIG:log.retention.hours=168}"
    # as Kafka lists it: log.retention.hours is the synonym that has a value
    assert broker_cfg["log.retention.ms"] == "null sensitive=false synonyms={DEFAULT_CONFIG:log.retention.hours=168}"
    assert broker_cfg["advertised.listeners"].startswith(f"PLAINTEXT://{broker.host}:{broker.port} ")


def test_kafka_delete_records_and_log_dirs(tool, broker, tmp_path):
    tool("topics", "--create", "--topic", "trim", "--partitions", "1")
    pylog_produce_json(broker, "trim", [{"key": f"k{i}", "value": f"v{i}"} for i in range(5)])
    spec = tmp_path / "delete.json"
    spec.write_text(json.dumps({"partitions": [{"topic": "trim", "partition": 0, "offset": 3}], "version": 1}))
    out = tool("delete-records", "--offset-json-file", spec).stdout
    assert "partition: trim-0\tlow_watermark: 3" in out
    assert offsets(tool, "--topic", "trim", "--time", "-2") == {"trim:0": 3}
    spec.write_text(json.dumps({"partitions": [{"topic": "trim", "partition": 0, "offset": 99}], "version": 1}))
    beyond = tool("delete-records", "--offset-json-file", spec).stdout
    assert "partition: trim-0\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException" in beyond

    out = tool("log-dirs", "--describe", "--topic-list", "trim").stdout
    report = json.loads(out.splitlines()[-1])
    [b] = report["brokers"]
    assert b["broker"] == 1
    [d] = b["logDirs"]
    assert d["logDir"] == str(broker.log_dir) and d["error"] is None
    [p] = d["partitions"]
    assert p["partition"] == "trim-0" and p["size"] == sum(
        f.stat().st_size for f in (broker.log_dir / "trim-0").glob("*.log"))
    assert (p["offsetLag"], p["isFuture"]) == (0, False)


SERVED = ["Produce", "Fetch", "ListOffsets", "Metadata", "OffsetCommit", "OffsetFetch", "FindCoordinator",
          "JoinGroup", "Heartbeat", "LeaveGroup", "SyncGroup", "DescribeGroups", "ListGroups", "ApiVersions",
          "CreateTopics", "DeleteTopics", "DeleteRecords", "InitProducerId", "OffsetForLeaderEpoch",
          "DescribeConfigs", "AlterConfigs", "DescribeLogDirs", "CreatePartitions", "DeleteGroups",
          "IncrementalAlterConfigs", "OffsetDelete", "DescribeCluster", "ConsumerGroupHeartbeat",
          "ConsumerGroupDescribe", "AddPartitionsToTxn", "AddOffsetsToTxn", "EndTxn", "TxnOffsetCommit",
          "WriteTxnMarkers", "DescribeTransactions", "ListTransactions", "DescribeProducers",
          "DescribeClientQuotas", "AlterClientQuotas"]
SERVED += ["ShareGroupHeartbeat", "ShareGroupDescribe", "ShareFetch", "ShareAcknowledge",
           "DescribeShareGroupOffsets", "AlterShareGroupOffsets", "DeleteShareGroupOffsets"]
SERVED += ["StreamsGroupHeartbeat", "StreamsGroupDescribe", "DescribeTopicPartitions", "UpdateFeatures",
           "CreateDelegationToken", "RenewDelegationToken", "ExpireDelegationToken", "DescribeDelegationToken"]
# the APIs a one-node broker leaves out (README): replica moves between log dirs, broker and voter changes
ONE_NODE = {"AlterReplicaLogDirs", "UnregisterBroker", "AddRaftVoter", "RemoveRaftVoter", "UnregisterController"}
# nor does a Kafka 4.4.0 node without a client-telemetry receiver advertise these (tests/test_kafka44_versions.py)
ONE_NODE |= {"GetTelemetrySubscriptions", "PushTelemetry"}


def test_kafka_broker_api_versions(tool, broker):
    out = tool("broker-api-versions").stdout
    assert re.search(rf"^{broker.host}:{broker.port} \(id: 1 rack: null isFenced: false\) -> \(", out, re.M)
    apis = dict(re.findall(r"^\s+(\w+)\(\d+\): (.*?),?$", out, re.M))
    assert set(SERVED) <= set(apis), set(SERVED) - set(apis)
    for name in apis.keys() - ONE_NODE:
        m = re.fullmatch(r"(\d+)(?: to (\d+))? \[usable: (\d+)\]", apis[name])
        assert m, f"{name}: {apis[name]}"
        # the client uses the broker's newest version: pylog claims nothing newer than Kafka 4.4.0 knows
        assert m.group(3) == (m.group(2) or m.group(1)), f"{name}: {apis[name]}"
    # not served (README): what has no meaning on one node, and client telemetry
    for name in ONE_NODE & apis.keys():
        assert apis[name] == "UNSUPPORTED", name
    assert "AlterReplicaLogDirs" in apis
