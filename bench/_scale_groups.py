"""The consumer-group and share-consumer curves of `python -m bench scale`.

Consumer groups: for n groups, n librdkafka consumers (classic protocol, one member per group, each
its own group.id) subscribe at once to a topic of GROUP_PARTITIONS partitions that holds
max(--group-records / n, 100) records of 100 B; every group reads the whole topic. One Python thread
drives them all (consume(timeout=0) in turn), so the client's cost stays one core's worth whatever n.
  * join (s): from the subscriptions until every group holds its assignment (JoinGroup + SyncGroup
    of n groups; the brokers run with group.initial.rebalance.delay.ms=0 for this curve),
  * consume (rec/s): records read by all groups together over the time from every group joined to
    the last record read (n times the topic),
  * commit (s): every group commits its offsets at once (asynchronous commits, until every one is
    acknowledged),
  * RSS (MB) and descriptors with the n groups connected and committed.
Share consumers: n confluent-kafka ShareConsumers (one thread each, explicit acknowledgement,
commit_sync after each poll) in one share group read a topic of SHARE_PARTITIONS partitions holding
--share-records records: records/s from the subscriptions to the last record, the median
acknowledgement round trip, how many distinct records were delivered (the goal: all) and how many
deliveries came again (a record delivered more than once), RSS and descriptors.
"""
from __future__ import annotations

import os
import statistics
import threading
import time
import uuid

GROUP_PARTITIONS = 10
SHARE_PARTITIONS = 6
SIZE = 100


def _descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _produce(bootstrap: str, topic: str, partitions: int, n: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept until the answer: its futures die with it
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(120)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": 10000,
                  "message.timeout.ms": 120000})
    value = b"g" * SIZE
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, partition=i % partitions)
                break
            except BufferError:
                p.poll(0.01)
        if i % 10000 == 0:
            p.poll(0)
    if p.flush(300):
        raise RuntimeError(f"{topic}: not every record was delivered")


def groups_point(b, n: int, total_records: int, timeout: float = 900) -> dict:
    """n consumer groups of one member each reading one topic; see the module's docstring."""
    from confluent_kafka import Consumer

    per_group = max(total_records // n, 100)
    topic = f"groups-{n}-{uuid.uuid4().hex[:6]}"
    _produce(b.bootstrap, topic, GROUP_PARTITIONS, per_group)
    run = uuid.uuid4().hex[:6]
    acked = [0]

    def on_commit(err, _parts):  # served by each consumer's consume(): one thread
        if err is None:
            acked[0] += 1
    assigned = [False] * n
    consumers = []
    for i in range(n):
        def on_assign(_c, parts, i=i):
            if parts:
                assigned[i] = True
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": f"scale-{run}-{i}", "enable.auto.commit": False,
                      "auto.offset.reset": "earliest", "session.timeout.ms": 45000, "log_level": 0,
                      "partition.assignment.strategy": "range", "fetch.wait.max.ms": 100,
                      "queued.max.messages.kbytes": 1024, "on_commit": on_commit})
        consumers.append((c, on_assign))
    got = [0] * n
    last = [dict() for _ in range(n)]
    t0 = time.perf_counter()
    for c, on_assign in consumers:
        c.subscribe([topic], on_assign=on_assign)
    joined = None
    deadline = t0 + timeout
    pending = set(range(n))
    while pending and time.perf_counter() < deadline:
        idle = True
        for i in list(pending):
            msgs = consumers[i][0].consume(10000, 0)
            for m in msgs:
                if m.error() is None:
                    got[i] += 1
                    last[i][m.partition()] = m.offset() + 1
            if msgs:
                idle = False
            if got[i] >= per_group:
                pending.discard(i)
        if joined is None and all(assigned):
            joined = time.perf_counter()
        if idle:
            time.sleep(0.001)
    done = time.perf_counter()
    row = {"join (s)": (joined or done) - t0}
    if pending:
        for c, _ in consumers:
            c.close()
        raise RuntimeError(f"{b.name}: {len(pending)} of {n} groups did not read their {per_group} records")
    row["consume (rec/s)"] = n * per_group / max(done - joined, 1e-6)
    from confluent_kafka import TopicPartition

    t1 = time.perf_counter()
    for i, (c, _) in enumerate(consumers):
        c.commit(offsets=[TopicPartition(topic, p, o) for p, o in last[i].items()], asynchronous=True)
    # librdkafka serves commit callbacks from poll(): consume(0) polls each consumer in turn
    deadline = time.perf_counter() + timeout
    while acked[0] < n and time.perf_counter() < deadline:
        for c, _ in consumers:
            c.consume(1, 0)
        time.sleep(0.001)
    row["commit (s)"] = time.perf_counter() - t1 if acked[0] >= n else float("nan")
    from bench.kafka import rss_mb

    row["RSS (MB)"] = rss_mb(b.pid)
    row["descriptors"] = _descriptors(b.pid)
    row["records per group"] = per_group
    _close_all([c for c, _ in consumers])
    return row


def _close_all(consumers: list) -> None:
    """Close consumers a few at a time in threads (each close leaves its group: one round trip)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(16) as ex:
        list(ex.map(lambda c: c.close(), consumers))


def share_point(b, n: int, records: int, timeout: float = 900) -> dict:
    """n share consumers of one share group reading `records` records; see the module's docstring."""
    from confluent_kafka import ShareConsumer

    from bench.share import _setup

    topic, group = f"share-{n}-{uuid.uuid4().hex[:6]}", f"share-g-{uuid.uuid4().hex[:6]}"
    _setup(b.bootstrap, topic, group, SHARE_PARTITIONS, records)
    seen: set = set()
    deliveries = [0]
    lat: list = []
    lock = threading.Lock()
    done = threading.Event()
    started = threading.Barrier(n + 1)
    errors: list = []

    def member():
        try:
            c = ShareConsumer({"bootstrap.servers": b.bootstrap, "group.id": group,
                               "share.acknowledgement.mode": "explicit", "log_level": 3})
            c.subscribe([topic])
        except Exception as e:  # noqa: BLE001 - reported with the point
            errors.append(e)
            started.abort()
            return
        started.wait()
        try:
            while not done.is_set():
                msgs = [m for m in c.poll(0.2) if m.error() is None]
                if not msgs:
                    continue
                for m in msgs:
                    c.acknowledge(m)
                s = time.perf_counter()
                c.commit_sync(60)
                took = time.perf_counter() - s
                with lock:
                    lat.append(took)
                    deliveries[0] += len(msgs)
                    seen.update((m.partition(), m.offset()) for m in msgs)
                    if len(seen) >= records:
                        done.set()
        finally:
            c.close()

    threads = [threading.Thread(target=member, daemon=True) for _ in range(n)]
    for t in threads:
        t.start()
    started.wait()
    t0 = time.perf_counter()
    done.wait(timeout)
    took = time.perf_counter() - t0
    from bench.kafka import rss_mb

    rss, fds = rss_mb(b.pid), _descriptors(b.pid)
    done.set()
    for t in threads:
        t.join(120)
    if errors:
        raise errors[0]
    return {"records/s": len(seen) / took, "ack p50 (ms)": statistics.median(lat) * 1000 if lat else float("nan"),
            "delivered (%)": 100.0 * len(seen) / records, "delivered again": deliveries[0] - len(seen),
            "RSS (MB)": rss, "descriptors": fds}
