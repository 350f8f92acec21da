"""Transactional producers and readers shared by the transaction tests."""
from __future__ import annotations
import itertools
import time
from confluent_kafka.admin import AdminClient, NewTopic

from pylog.core.client import Admin, Consumer, TopicPartition
from support.broker_fixtures import call, connect, read_to_end
from support.waiting import wait_until


READ_COMMITTED, READ_UNCOMMITTED = "read_committed", "read_uncommitted"


def create(b, topic, partitions=1):
    """Create the topic and wait until every partition has a leader: Kafka answers CreateTopics
    once its controller has the topic, before its broker leads the partitions."""
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(15)

    def led():
        t = admin.list_topics(topic, timeout=10).topics.get(topic)
        return t is not None and t.error is None and len(t.partitions) == partitions and all(
            p.leader >= 0 for p in t.partitions.values())
    wait_until(led, 60, f"leaders for topic {topic}", step=0.1)


def read(b, topic, partitions, isolation, timeout=20.0) -> dict[int, list[str]]:
    """Every value of the partitions up to their end (for read_committed: the LSO), per partition."""
    out: dict[int, list[str]] = {p: [] for p in partitions}
    for m in read_to_end(b, topic, partitions, isolation, timeout):
        out[m.partition()].append(m.value().decode())
    return out


def list_offset(b, topic, partition, isolation_level) -> int:
    """ListOffsets latest (-1) at an isolation level: the high watermark or the last stable offset."""
    with connect(b) as s:
        r = call(s, 2, 7, {"replica_id": -1, "isolation_level": isolation_level, "topics": [
            {"name": topic, "partitions": [{"partition_index": partition, "timestamp": -1,
                                            "current_leader_epoch": -1}]}]})
    p = r["topics"][0]["partitions"][0]
    assert p["error_code"] == 0, p
    return p["offset"]


def open_raw_txn(b, tid, topic, value, timeout_ms=60000) -> tuple[int, int]:
    """InitProducerId, AddPartitionsToTxn (partition 0) and one transactional record, over the raw
    protocol: (producer id, epoch) of the transaction left open."""
    from pylog.core.records import BatchBuilder

    with connect(b) as s:
        init = call(s, 22, 4, {"transactional_id": tid, "transaction_timeout_ms": timeout_ms,
                               "producer_id": -1, "producer_epoch": -1})
        pid, epoch = init["producer_id"], init["producer_epoch"]
        r = call(s, 24, 3, {"v3_and_below_transactional_id": tid, "v3_and_below_producer_id": pid,
                            "v3_and_below_producer_epoch": epoch,
                            "v3_and_below_topics": [{"name": topic, "partitions": [0]}]})
        assert r["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"] == 0
        bb = BatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=0, is_transactional=True)
        bb.append(int(time.time() * 1000), None, value)
        batch = bb.build()

        def produced():
            # retried as a producer retries: Kafka's broker may lead the partition a moment after
            # its Metadata says it does (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION)
            r = call(s, 0, 9, {"transactional_id": tid, "acks": -1, "timeout_ms": 5000, "topic_data": [
                {"name": topic, "partition_data": [{"index": 0, "records": bytearray(batch)}]}]})
            code = r["responses"][0]["partition_responses"][0]["error_code"]
            assert code in (0, 3, 6), f"transactional produce to {topic}: error {code}"
            return code == 0
        wait_until(produced, 60, f"the transactional record in {topic}", step=0.1)
    return pid, epoch


_n = itertools.count()


# the brokers every test here runs against: Apache Kafka (the reference) and pylog's own
PEERS = ["kafka", "pylog"]


def new_topic(bootstrap, partitions=2, configs=None) -> str:
    name = f"txn-{next(_n)}-{int(time.time() * 1000) % 10**8}"
    a = Admin({"bootstrap.servers": bootstrap})
    try:
        a.create_topic(name, partitions, 1, configs=configs)
    finally:
        a.close()
    return name


def read_all(bootstrap, topic, partitions, isolation, expect=None, timeout=30.0) -> dict:
    """{partition: [(offset, key, value)]} up to each partition's end (the LSO when read_committed).

    With expect, reads again until that many records are seen: Kafka answers EndTxn before its
    markers are written, so the LSO reaches a committed transaction's end a moment later."""
    deadline = time.monotonic() + timeout
    while True:
        out = _read_to_end(bootstrap, topic, partitions, isolation, deadline)
        if expect is None or sum(map(len, out.values())) >= expect or time.monotonic() >= deadline:
            return out
        time.sleep(0.2)


def _read_to_end(bootstrap, topic, partitions, isolation, deadline) -> dict:
    c = Consumer({"bootstrap.servers": bootstrap, "isolation.level": isolation, "auto.offset.reset": "earliest"})
    try:
        tps = [TopicPartition(topic, p) for p in range(partitions)]
        c.assign(tps)
        ends = c.end_offsets(tps)
        out = {p: [] for p in range(partitions)}
        while any(c.position(tp) < ends[tp] for tp in tps):
            assert time.monotonic() < deadline, f"did not reach {ends} ({isolation})"
            for tp, recs in c.poll(200).items():
                out[tp.partition] += [(r.offset, r.key, r.value) for r in recs]
        return out
    finally:
        c.close()


def values(view) -> list:
    return sorted(v for recs in view.values() for _, _, v in recs)
