"""confluent-kafka (librdkafka 2.16) against `pylog broker start`."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewPartitions,
    NewTopic,
)


def consumer(broker, **extra) -> Consumer:
    conf = {"bootstrap.servers": broker.bootstrap, "group.id": "unused-assign-only", "enable.auto.commit": False,
            "enable.partition.eof": True}
    conf.update(extra)
    return Consumer(conf)


def read_partition(broker, topic, partition, start=0, timeout=15.0):
    c = consumer(broker)
    c.assign([TopicPartition(topic, partition, start)])
    out = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # _PARTITION_EOF
                break
            raise KafkaException(m.error())
        out.append(m)
    c.close()
    return out


@pytest.fixture(scope="module")
def admin(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def test_idempotent_producer_acks_all_and_assigned_consumer(broker, admin):
    admin.create_topics([NewTopic("ck-idem", num_partitions=2, replication_factor=1)])["ck-idem"].result(10)
    p = Producer({"bootstrap.servers": broker.bootstrap, "enable.idempotence": True, "acks": "all",
                  "linger.ms": 5, "compression.type": "lz4"})
    acked = []
    for i in range(2000):
        p.produce("ck-idem", key=str(i).encode(), value=f"value-{i}".encode(), partition=i % 2,
                  headers={"n": str(i).encode()},
                  on_delivery=lambda err, m: acked.append((err, m.partition(), m.offset())))
        if i % 500 == 0:
            p.poll(0)
    assert p.flush(30) == 0
    assert all(err is None for err, _, _ in acked)
    for part in range(2):
        assert sorted(o for _, pp, o in acked if pp == part) == list(range(1000))
        msgs = read_partition(broker, "ck-idem", part)
        assert [m.value() for m in msgs] == [f"value-{i}".encode() for i in range(part, 2000, 2)]
        assert [m.headers() for m in msgs[:2]] == [[("n", str(part).encode())], [("n", str(part + 2).encode())]]


def test_offsets_for_times_and_watermarks(broker, admin):
    admin.create_topics([NewTopic("ck-times", num_partitions=1, replication_factor=1)])["ck-times"].result(10)
    base = int(time.time() * 1000) - 60_000
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(5):
        p.produce("ck-times", value=b"x", partition=0, timestamp=base + i * 1000)
    assert p.flush(10) == 0
    c = consumer(broker)
    res = c.offsets_for_times([TopicPartition("ck-times", 0, base + 2500)], timeout=10)
    assert res[0].offset == 3
    res = c.offsets_for_times([TopicPartition("ck-times", 0, base + 10_000)], timeout=10)
    assert res[0].offset == -1  # past the last record: librdkafka's OFFSET_END
    assert c.get_watermark_offsets(TopicPartition("ck-times", 0), timeout=10) == (0, 5)
    c.close()


def test_admin_client(broker, admin):
    fs = admin.create_topics([NewTopic("ck-admin", num_partitions=1, replication_factor=1,
                                       config={"retention.bytes": "1048576"}),
                              NewTopic("ck-bad name", num_partitions=1, replication_factor=1),
                              NewTopic("ck-rf2", num_partitions=1, replication_factor=2)])
    fs["ck-admin"].result(10)
    with pytest.raises(KafkaException, match="TOPIC_EXCEPTION"):
        fs["ck-bad name"].result(10)
    with pytest.raises(KafkaException, match="REPLICATION_FACTOR|replication factor"):
        fs["ck-rf2"].result(10)
    md = admin.list_topics(timeout=10)
    assert "ck-admin" in md.topics and md.brokers[1].port == broker.port
    admin.create_partitions([NewPartitions("ck-admin", 3)])["ck-admin"].result(10)
    assert len(admin.list_topics(timeout=10).topics["ck-admin"].partitions) == 3

    res = ConfigResource(ConfigResource.Type.TOPIC, "ck-admin")
    configs = admin.describe_configs([res])[res].result(10)
    assert configs["retention.bytes"].value == "1048576"
    assert configs["retention.ms"].is_default
    inc = ConfigResource(ConfigResource.Type.TOPIC, "ck-admin", incremental_configs=[
        ConfigEntry("max.message.bytes", "2000000", incremental_operation=AlterConfigOpType.SET)])
    admin.incremental_alter_configs([inc])[inc].result(10)
    configs = admin.describe_configs([res])[res].result(10)
    assert configs["max.message.bytes"].value == "2000000"

    brk = ConfigResource(ConfigResource.Type.BROKER, "1")
    bconf = admin.describe_configs([brk])[brk].result(10)
    assert bconf["auto.create.topics.enable"].value == "true"

    cluster = admin.describe_cluster().result(10)
    assert [n.id for n in cluster.nodes] == [1] and cluster.controller.id == 1

    admin.delete_topics(["ck-admin"])["ck-admin"].result(10)
    assert "ck-admin" not in admin.list_topics(timeout=10).topics


def test_admin_offsets_describe_topics_delete_records(broker, admin):
    from confluent_kafka import IsolationLevel, TopicCollection
    from confluent_kafka.admin import OffsetSpec

    admin.create_topics([NewTopic("ck-offsets", num_partitions=2, replication_factor=1)])["ck-offsets"].result(10)
    p = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 0})
    for i in range(10):
        p.produce("ck-offsets", f"v{i}".encode(), partition=0, timestamp=1_000_000 + i * 10)
    assert p.flush(10) == 0
    tp0, tp1 = TopicPartition("ck-offsets", 0), TopicPartition("ck-offsets", 1)
    res = admin.list_offsets({tp0: OffsetSpec.latest(), tp1: OffsetSpec.earliest()})
    assert {k.partition: f.result().offset for k, f in res.items()} == {0: 10, 1: 0}
    res = admin.list_offsets({tp0: OffsetSpec.max_timestamp()})
    r = list(res.values())[0].result()
    assert (r.offset, r.timestamp) == (9, 1_000_090)
    res = admin.list_offsets({tp0: OffsetSpec.for_timestamp(1_000_045)}, isolation_level=IsolationLevel.READ_COMMITTED)
    r = list(res.values())[0].result()
    assert (r.offset, r.timestamp) == (5, 1_000_050)

    desc = admin.describe_topics(TopicCollection(["ck-offsets"]))["ck-offsets"].result(10)
    assert len(desc.partitions) == 2 and str(desc.topic_id) != "AAAAAAAAAAAAAAAAAAAAAA"
    assert [n.id for n in desc.partitions[0].replicas] == [1]

    deleted = admin.delete_records([TopicPartition("ck-offsets", 0, 4)])
    assert list(deleted.values())[0].result(10).low_watermark == 4
    res = admin.list_offsets({tp0: OffsetSpec.earliest()})
    assert list(res.values())[0].result().offset == 4
