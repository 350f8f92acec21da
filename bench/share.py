"""Share groups (KIP-932): records/s and acknowledgement latency, pylog and Apache Kafka 4.4 in one run.

    python -m bench share [--records N] [--consumers 1,4,16] [--partitions 1,6] [--rounds R] [--no-kafka]

For each (partitions, consumers): a new topic holds N records of 100 B; a new share group
(share.auto.offset.reset=earliest) is read by that many confluent-kafka ShareConsumers, one thread
each, in explicit mode: every record of a poll is accepted and commit_sync() sends the
acknowledgements. records/s is N over the time from the subscriptions to the last record;
ack latency is the commit_sync() round trip (median and p99 over all commits). Both brokers run
with their defaults on loopback, one at a time, the best of --rounds kept.
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import threading
import time
import uuid
from pathlib import Path

from bench.kafka import Kafka, Pylog

SIZE = 100


def _setup(bootstrap: str, topic: str, group: str, partitions: int, n: int) -> None:
    from confluent_kafka import Producer
    from confluent_kafka.admin import (AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic,
                                       ResourceType)

    a = AdminClient({"bootstrap.servers": bootstrap})
    a.create_topics([NewTopic(topic, partitions, 1)])[topic].result(60)
    res = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry("share.auto.offset.reset", "earliest", incremental_operation=AlterConfigOpType.SET)])
    a.incremental_alter_configs([res])[res].result(60)
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.num.messages": 10000})
    value = b"x" * SIZE
    for i in range(n):
        p.produce(topic, value, partition=i % partitions)
        if i % 10000 == 0:
            p.poll(0)
    assert p.flush(120) == 0


def run_once(bootstrap: str, partitions: int, consumers: int, n: int) -> tuple[float, list]:
    """(records/s, [commit_sync seconds])."""
    from confluent_kafka import ShareConsumer

    topic, group = f"bench-share-{uuid.uuid4().hex[:8]}", f"bench-share-g-{uuid.uuid4().hex[:8]}"
    _setup(bootstrap, topic, group, partitions, n)
    got = [0]
    lat: list = []
    lock = threading.Lock()
    done = threading.Event()
    started = threading.Barrier(consumers + 1)

    def member():
        c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                           "share.acknowledgement.mode": "explicit"})
        c.subscribe([topic])
        started.wait()
        try:
            while not done.is_set():
                msgs = [m for m in c.poll(0.2) if m.error() is None]
                if not msgs:
                    continue
                for m in msgs:
                    c.acknowledge(m)
                t0 = time.perf_counter()
                c.commit_sync(60)
                took = time.perf_counter() - t0
                with lock:
                    lat.append(took)
                    got[0] += len(msgs)
                    if got[0] >= n:
                        done.set()
        finally:
            c.close()

    threads = [threading.Thread(target=member, daemon=True) for _ in range(consumers)]
    for t in threads:
        t.start()
    started.wait()
    t0 = time.perf_counter()
    done.wait(600)
    took = time.perf_counter() - t0
    for t in threads:
        t.join(60)
    if got[0] < n:
        raise RuntimeError(f"only {got[0]} of {n} records consumed")
    return n / took, lat


def _pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main(argv) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench share")
    ap.add_argument("--records", type=int, default=50000)
    ap.add_argument("--consumers", default="1,4,16")
    ap.add_argument("--partitions", default="1,6")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--no-kafka", action="store_true")
    a = ap.parse_args(argv)
    consumers = [int(x) for x in a.consumers.split(",")]
    partitions = [int(x) for x in a.partitions.split(",")]
    work = Path(tempfile.mkdtemp(prefix="bench-share-"))
    results: dict = {}
    makers = [("pylog", lambda: Pylog(work / "pylog"))]
    if not a.no_kafka:
        makers.insert(0, ("kafka 4.4", lambda: Kafka(work / "k")))
    try:
        for name, make in makers:
            b = make()
            b.start()
            try:
                run_once(b.bootstrap, 1, 1, 1000)  # warm up
                for p in partitions:
                    for c in consumers:
                        best = None
                        for _ in range(a.rounds):
                            rate, lat = run_once(b.bootstrap, p, c, a.records)
                            if best is None or rate > best[0]:
                                best = (rate, lat)
                        results[(name, p, c)] = best
                        print(f"  {name}: {p} partitions, {c:2d} consumers: {best[0]:9.0f} records/s, ack "
                              f"p50 {statistics.median(best[1]) * 1000:.1f} ms p99 {_pct(best[1], 0.99) * 1000:.1f} ms",
                              flush=True)
            finally:
                b.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print(f"| partitions | consumers | " + " | ".join(f"{n} records/s | {n} ack p50/p99 ms" for n, _ in makers)
          + (" | pylog/kafka |" if not a.no_kafka else " |"))
    print("|---|---|" + "---|---|" * len(makers) + ("---|" if not a.no_kafka else ""))
    for p in partitions:
        for c in consumers:
            cells = []
            for n, _ in makers:
                rate, lat = results[(n, p, c)]
                cells += [f"{rate:,.0f}", f"{statistics.median(lat) * 1000:.1f} / {_pct(lat, 0.99) * 1000:.1f}"]
            ratio = "" if a.no_kafka else \
                f" | {results[('pylog', p, c)][0] / results[('kafka 4.4', p, c)][0]:.2f}"
            print(f"| {p} | {c} | " + " | ".join(cells) + ratio + " |")
    return 0
