"""Share-group scenarios driven with confluent-kafka's ShareConsumer, run the same way against
pylog and Apache Kafka: each returns what the consumers saw (offsets, delivery counts), so a
test can assert the outcome and compare the two brokers.
"""
from __future__ import annotations

import threading
import time
import uuid

from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

DEADLINE = 90.0


def name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def on_both(brokers: dict, scenario) -> dict:
    """Run `scenario(bootstrap)` on every broker of {name: bootstrap} at once: {name: result}."""
    out, errors = {}, []

    def run(which):
        try:
            out[which] = scenario(brokers[which])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append((which, e))

    threads = [threading.Thread(target=run, args=(w,)) for w in brokers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    return out


def fresh(bootstrap: str, n: int, partitions: int = 1, topic: str | None = None, group: str | None = None,
          **group_configs) -> tuple[str, str]:
    """A new topic with `n` records and a share group reading it from the earliest offset."""
    topic, group = topic or name("share-t"), group or name("share-g")
    create_topic(bootstrap, topic, partitions)
    set_group_configs(bootstrap, group, share_auto_offset_reset="earliest", **group_configs)
    produce(bootstrap, topic, n, partitions)
    return topic, group


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    a = AdminClient({"bootstrap.servers": bootstrap})
    a.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)


def set_group_configs(bootstrap: str, group: str, **configs) -> None:
    """IncrementalAlterConfigs on the GROUP resource (as kafka-configs --entity-type groups)."""
    a = AdminClient({"bootstrap.servers": bootstrap})
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(k.replace("_", "."), str(v), incremental_operation=AlterConfigOpType.SET)
        for k, v in configs.items()])
    a.incremental_alter_configs([res])[res].result(60)


def produce(bootstrap: str, topic: str, n: int, partitions: int = 1) -> None:
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for i in range(n):
        p.produce(topic, value=b"v%d" % i, partition=i % partitions)
    assert p.flush(60) == 0


def consumer(bootstrap: str, group: str, explicit: bool = False) -> ShareConsumer:
    conf = {"bootstrap.servers": bootstrap, "group.id": group}
    if explicit:
        conf["share.acknowledgement.mode"] = "explicit"
    return ShareConsumer(conf)


def poll_records(c: ShareConsumer, timeout: float = 1.0) -> list:
    out = []
    for m in c.poll(timeout):
        if m.error() is None:
            out.append(m)
    return out


def accept_all(bootstrap: str, topic: str, group: str, n: int, consumers: int) -> dict:
    """`consumers` share consumers (implicit acknowledgement) read `n` records together:
    {member index: [(partition, offset, delivery count)]}."""
    seen: dict[int, list] = {i: [] for i in range(consumers)}
    total = [0]
    lock = threading.Lock()
    stop = threading.Event()

    def run(i):
        c = consumer(bootstrap, group)
        c.subscribe([topic])
        try:
            while not stop.is_set():
                for m in poll_records(c, 0.5):
                    with lock:
                        seen[i].append((m.partition(), m.offset(), m.delivery_count()))
                        total[0] += 1
                        if total[0] >= n:
                            stop.set()
            c.commit_sync(30)
        finally:
            c.close()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(consumers)]
    for t in threads:
        t.start()
    stop.wait(DEADLINE)
    stop.set()
    for t in threads:
        t.join(60)
    return seen


def explicit_run(bootstrap: str, topic: str, group: str, n: int, decide, until) -> list:
    """One explicit-mode consumer: every record gets `decide(offset, delivery_count)` (an
    AcknowledgeType); runs until `until(log)` is true. Returns [(offset, delivery count, type)]."""
    c = consumer(bootstrap, group, explicit=True)
    c.subscribe([topic])
    out: list = []
    deadline = time.monotonic() + DEADLINE
    try:
        while time.monotonic() < deadline and not until(out):
            msgs = poll_records(c, 0.5)
            for m in msgs:
                t = decide(m.offset(), m.delivery_count())
                c.acknowledge(m, t)
                out.append((m.offset(), m.delivery_count(), t))
            if msgs:
                c.commit_sync(30)
    finally:
        c.close()
    return out


def accepted(log: list) -> list:
    return sorted(o for o, _, t in log if t == AcknowledgeType.ACCEPT)


def lock_timeout_handover(bootstrap: str, topic: str, group: str, n: int) -> tuple[list, list]:
    """Consumer A acquires records and never acknowledges them (it keeps heartbeating); after the
    acquisition lock runs out consumer B gets them with delivery count 2. Returns (A's, B's)."""
    a = consumer(bootstrap, group, explicit=True)
    a.subscribe([topic])
    got_a: list = []
    deadline = time.monotonic() + DEADLINE
    while not got_a and time.monotonic() < deadline:
        got_a = [(m.offset(), m.delivery_count()) for m in poll_records(a, 0.5)]
    b = consumer(bootstrap, group)
    b.subscribe([topic])
    got_b: list = []
    try:
        while len(got_b) < len(got_a) and time.monotonic() < deadline:
            got_b += [(m.offset(), m.delivery_count()) for m in poll_records(b, 0.5)]
        b.commit_sync(30)
    finally:
        b.close()
        # a's records were accepted by b: a closes holding nothing it may still acknowledge
        a.close()
    return got_a, got_b
