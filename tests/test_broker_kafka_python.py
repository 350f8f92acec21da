"""kafka-python 3.x (producer, manually assigned consumer, admin) against `pylog broker start`."""
from __future__ import annotations

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewPartitions, NewTopic
from kafka.errors import InvalidReplicationFactorError, TopicAlreadyExistsError, UnknownTopicOrPartitionError


def consume_all(broker, topic, partition, expect, start=0):
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False, group_id=None,
                      consumer_timeout_ms=5000)
    tp = TopicPartition(topic, partition)
    c.assign([tp])
    c.seek(tp, start)
    out = []
    for m in c:
        out.append(m)
        if len(out) >= expect:
            break
    c.close()
    return out


@pytest.fixture(scope="module")
def admin(broker):
    a = KafkaAdminClient(bootstrap_servers=broker.bootstrap, request_timeout_ms=10000)
    yield a
    a.close()


def test_producer_and_assigned_consumer(broker, admin):
    admin.create_topics([NewTopic("kp-basic", num_partitions=3, replication_factor=1)])
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, acks="all", linger_ms=5, compression_type="gzip")
    futures = [p.send("kp-basic", key=f"k{i}".encode(), value=f"v{i}".encode(), partition=i % 3,
                      headers=[("h", b"x")]) for i in range(90)]
    metas = [f.get(timeout=10) for f in futures]
    p.close()
    assert sorted({m.partition for m in metas}) == [0, 1, 2]
    for part in range(3):
        offsets = [m.offset for m in metas if m.partition == part]
        assert offsets == list(range(30))
        msgs = consume_all(broker, "kp-basic", part, 30)
        assert [m.value for m in msgs] == [f"v{i}".encode() for i in range(part, 90, 3)]
        assert [m.key for m in msgs] == [f"k{i}".encode() for i in range(part, 90, 3)]
        assert all(m.headers == [("h", b"x")] for m in msgs)


def test_consumer_long_poll_wakes_on_append(broker):
    import threading
    import time

    p = KafkaProducer(bootstrap_servers=broker.bootstrap)
    p.send("kp-poll", b"first").get(timeout=10)
    # a long max wait: only waking on append can answer the parked fetch within the deadline below
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False,
                      fetch_max_wait_ms=60000, request_timeout_ms=120000)
    tp = TopicPartition("kp-poll", 0)
    c.assign([tp])
    c.seek(tp, 1)
    threading.Timer(0.5, lambda: p.send("kp-poll", b"second").get(timeout=10)).start()
    t0 = time.monotonic()
    got = {}
    while not got and time.monotonic() - t0 < 30:
        got = c.poll(timeout_ms=1000)
    elapsed = time.monotonic() - t0
    c.close()
    p.close()
    assert got, f"the long poll did not wake on append within {elapsed:.1f}s (max wait 60 s)"
    assert [r.value for r in got[tp]] == [b"second"]


def test_admin_create_delete_topics(broker, admin):
    admin.create_topics([NewTopic("kp-admin", num_partitions=2, replication_factor=1,
                                  topic_configs={"retention.ms": "3600000"})])
    assert "kp-admin" in admin.list_topics()
    with pytest.raises(TopicAlreadyExistsError):
        admin.create_topics([NewTopic("kp-admin", num_partitions=1, replication_factor=1)])
    with pytest.raises(InvalidReplicationFactorError):
        admin.create_topics([NewTopic("kp-rf3", num_partitions=1, replication_factor=3)], validate_only=True)
    admin.create_topics([NewTopic("kp-validate", num_partitions=1, replication_factor=1)], validate_only=True)
    assert "kp-validate" not in admin.list_topics()
    admin.create_partitions({"kp-admin": NewPartitions(total_count=4)})
    desc = admin.describe_topics(["kp-admin"])
    assert len(desc[0]["partitions"]) == 4
    admin.delete_topics(["kp-admin"])
    assert "kp-admin" not in admin.list_topics()
    with pytest.raises(UnknownTopicOrPartitionError):
        admin.delete_topics(["kp-admin"])


def test_admin_describe_and_alter_configs(broker, admin):
    admin.create_topics([NewTopic("kp-configs", num_partitions=1, replication_factor=1,
                                  topic_configs={"cleanup.policy": "compact"})])
    res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-configs")], config_filter="all",
                                 include_synonyms=True)
    configs = res["topic"]["kp-configs"]
    assert configs["cleanup.policy"]["value"] == "compact"
    assert configs["cleanup.policy"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert configs["retention.ms"]["value"] == "604800000"
    assert configs["retention.ms"]["config_source"] == "DEFAULT_CONFIG"
    # as Kafka 4.3.1 reports it: a default synonym only when the primary broker property has a value
    assert configs["retention.ms"]["synonyms"] == []
    assert {"name": "log.segment.bytes", "value": "1073741824", "source": "DEFAULT_CONFIG"} in \
        configs["segment.bytes"]["synonyms"]
    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-configs",
                                        configs={"retention.ms": "1000", "cleanup.policy": "delete"})])
    res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-configs")])
    modified = {k: v["value"] for k, v in res["topic"]["kp-configs"].items()}
    assert modified == {"retention.ms": "1000", "cleanup.policy": "delete"}
    # IncrementalAlterConfigs (kafka-python's default): SET, DELETE, APPEND, SUBTRACT
    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-configs", configs={
        "retention.ms": ("DELETE", None), "cleanup.policy": ("APPEND", "compact"),
        "segment.bytes": ("SET", "1048576")})])
    res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-configs")])
    assert {k: v["value"] for k, v in res["topic"]["kp-configs"].items()} == {
        "cleanup.policy": "delete,compact", "segment.bytes": "1048576"}
    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-configs", configs={
        "cleanup.policy": ("SUBTRACT", "delete")})])
    res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-configs")])
    assert res["topic"]["kp-configs"]["cleanup.policy"]["value"] == "compact"
    # plain AlterConfigs (kafka-python re-sends the other overrides, since the request replaces them all)
    admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-configs", configs={"retention.ms": "2000",
                                                                                         "segment.bytes": "2097152"})],
                        incremental=False)
    res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-configs")])
    expected = {"retention.ms": "2000", "cleanup.policy": "compact", "segment.bytes": "2097152"}
    assert {k: v["value"] for k, v in res["topic"]["kp-configs"].items()} == expected
    # a bad value is refused and changes nothing
    result = admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-configs",
                                                 configs={"retention.ms": "soon"})])
    assert "INVALID_CONFIG" in repr(result["topic"]["kp-configs"]) or \
        "InvalidConfiguration" in repr(result["topic"]["kp-configs"]), result
    res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-configs")])
    assert {k: v["value"] for k, v in res["topic"]["kp-configs"].items()} == expected
    res = admin.describe_configs([ConfigResource(ConfigResourceType.BROKER, "1")], config_filter="all")
    configs = res["broker"]["1"]
    assert configs["num.partitions"]["value"] == "1"
    assert configs["log.retention.hours"]["value"] == "168"
    assert configs["node.id"]["value"] == "1"


def test_admin_delete_records(broker, admin):
    admin.create_topics([NewTopic("kp-delrec", num_partitions=1, replication_factor=1)])
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    for i in range(10):
        p.send("kp-delrec", f"v{i}".encode()).get(timeout=10)
    p.close()
    tp = TopicPartition("kp-delrec", 0)
    res = admin.delete_records({tp: 6})
    assert res[tp]["low_watermark"] == 6
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, group_id=None, enable_auto_commit=False)
    assert c.beginning_offsets([tp])[tp] == 6
    assert c.end_offsets([tp])[tp] == 10
    c.close()
    msgs = consume_all(broker, "kp-delrec", 0, 4, start=6)
    assert [m.value for m in msgs] == [b"v6", b"v7", b"v8", b"v9"]


def test_idempotent_producer(broker, admin):
    admin.create_topics([NewTopic("kp-idem", num_partitions=1, replication_factor=1)])
    p = KafkaProducer(bootstrap_servers=broker.bootstrap, enable_idempotence=True, acks="all", linger_ms=2)
    metas = [p.send("kp-idem", f"v{i}".encode()).get(timeout=10) for i in range(50)]
    p.close()
    assert [m.offset for m in metas] == list(range(50))
    msgs = consume_all(broker, "kp-idem", 0, 50)
    assert [m.value for m in msgs] == [f"v{i}".encode() for i in range(50)]
