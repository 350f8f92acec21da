"""KIP-848 consumer groups: join-to-stable time with `group.protocol=consumer`.

    python -m bench groups848 [--members 1,3,10] [--runs 3] [--no-kafka]

librdkafka consumers (one thread each) join a new group on a 10-partition topic
at once; "join to stable" is from the moment all have subscribed until every
partition is owned exactly once by N members (bench.groups.rebalance_time).
Brokers: pylog (`pylog broker start`) and Apache Kafka (the version tests/kafka/pom.xml pins; tests/support/kafka_peer),
both with their defaults (heartbeat interval 5 s; the broker computes the
assignment, so there is no initial rebalance delay). For comparison the same
clients with the classic protocol on pylog (initial delay 0).
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
from pathlib import Path

from bench.groups import PARTITIONS, PylogBroker, consumer_conf, create_topic, rebalance_time


def conf848(bootstrap, group):
    return {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
            "enable.auto.commit": False, "auto.offset.reset": "earliest", "log_level": 0}


class KafkaBroker:
    name = "kafka 4.3.1"

    def __init__(self):
        from bench.kafka import Kafka

        self.dir = tempfile.mkdtemp(prefix="bench-groups848-")
        self.kafka = Kafka(Path(self.dir))
        self.kafka.start()
        self.bootstrap = self.kafka.bootstrap

    def stop(self):
        self.kafka.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


def main(argv) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench groups848")
    ap.add_argument("--members", default="1,3,10")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--no-kafka", action="store_true")
    a = ap.parse_args(argv)
    members = [int(x) for x in a.members.split(",")]
    rows = []
    kinds = [("pylog", "consumer", lambda: PylogBroker(0), conf848),
             ("pylog", "classic (initial delay 0)", lambda: PylogBroker(0), consumer_conf)]
    if not a.no_kafka:
        kinds.append(("kafka 4.3.1", "consumer", KafkaBroker, conf848))
    for name, protocol, make, conf in kinds:
        b = make()
        try:
            topic = "bench-groups848"
            create_topic(b.bootstrap, topic)
            rebalance_time(b.bootstrap, topic, 1, conf=conf)  # warm up connections and metadata
            cells = []
            for n in members:
                ts = [rebalance_time(b.bootstrap, topic, n, conf=conf) for _ in range(a.runs)]
                cells.append(statistics.median(ts))
                print(f"  {name} {protocol}: {n:2d} members: join->stable median {cells[-1] * 1000:.0f} ms "
                      f"(runs: {', '.join(f'{t * 1000:.0f}' for t in ts)})", flush=True)
            rows.append((name, protocol, cells))
        finally:
            b.stop()
    print()
    print(f"| broker | protocol | " + " | ".join(f"{n} members join->stable (median ms, {PARTITIONS} partitions)"
                                                 for n in members) + " |")
    print("|---|---|" + "---|" * len(members))
    for name, protocol, cells in rows:
        print(f"| {name} | {protocol} | " + " | ".join(f"{c * 1000:.0f}" for c in cells) + " |")
    return 0
