"""`python -m bench soak`: mixed load against one pylog broker for a while; errors, throughput, memory.

Producers (confluent-kafka, idempotent, acks=all, lz4, each paced to
--rate records/s), consumers in one group committing as they go, a second
group whose member comes and goes (rebalances), and an admin thread creating,
describing and deleting topics and listing groups, all at once for
--seconds. The broker's resident memory is sampled every second. At the end
the consumers catch up and every acknowledged record must have been read.

tests/test_broker_load.py runs `run()` for a bounded time in CI and asserts on
its figures; this command runs it longer and --record appends the figures
to bench/RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time
import urllib.request
from pathlib import Path

TOPIC = "soak"
PARTITIONS = 6


def rss_kib(pid: int) -> int:
    """The process's resident set (VmRSS), KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


class _Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.acked = self.produce_errors = self.consume_errors = self.admin_ops = self.admin_errors = 0
        self.rebalances = 0
        self.seen: set = set()  # (partition, offset) read by the group
        self.errors: list[str] = []

    def error(self, what: str) -> None:
        with self.lock:
            if len(self.errors) < 20:
                self.errors.append(what)


def _producer(bootstrap, stop, counts: _Counts, rate: int, size: int, idx: int) -> None:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 5,
                  "compression.type": "lz4", "client.id": f"soak-producer-{idx}"})

    def done(err, msg):
        with counts.lock:
            if err is None:
                counts.acked += 1
            else:
                counts.produce_errors += 1
        if err is not None:
            counts.error(f"produce: {err}")

    value = os.urandom(size)
    t0 = time.monotonic()
    sent = 0
    while not stop.is_set():
        due = int((time.monotonic() - t0) * rate) - sent
        for _ in range(min(due, 1000)):
            try:
                p.produce(TOPIC, value=value, key=str(sent).encode(), on_delivery=done)
            except BufferError:
                break
            sent += 1
        p.poll(0.01)
    left = p.flush(60)
    if left:
        counts.error(f"produce: {left} records not delivered at the end")
        with counts.lock:
            counts.produce_errors += left


def _consumer(bootstrap, stop, counts: _Counts, idx: int) -> None:
    from confluent_kafka import Consumer, KafkaError

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-group", "auto.offset.reset": "earliest",
                  "enable.auto.commit": True, "auto.commit.interval.ms": 500, "client.id": f"soak-consumer-{idx}"})
    c.subscribe([TOPIC])
    try:
        while not stop.is_set():
            for m in c.consume(500, 0.2):
                err = m.error()
                if err is None:
                    with counts.lock:
                        counts.seen.add((m.partition(), m.offset()))
                elif err.code() != KafkaError._PARTITION_EOF:
                    with counts.lock:
                        counts.consume_errors += 1
                    counts.error(f"consume: {err}")
    finally:
        c.close()


def _churn(bootstrap, stop, counts: _Counts) -> None:
    """A member of a second group that joins, reads a little and leaves, again and again."""
    from confluent_kafka import Consumer

    while not stop.is_set():
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "soak-churn", "auto.offset.reset": "latest",
                      "client.id": "soak-churn"})
        c.subscribe([TOPIC])
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and not stop.is_set():
            c.poll(0.2)
        c.close()
        with counts.lock:
            counts.rebalances += 1


def _admin(bootstrap, stop, counts: _Counts) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    # log_level 4: librdkafka notes every deleted topic of its cache at close
    a = AdminClient({"bootstrap.servers": bootstrap, "client.id": "soak-admin", "log_level": 4})
    n = 0
    while not stop.is_set():
        name = f"soak-admin-{n}"
        n += 1
        try:
            a.create_topics([NewTopic(name, num_partitions=2, replication_factor=1)])[name].result(15)
            md = a.list_topics(name, timeout=15)
            assert md.topics[name].error is None and len(md.topics[name].partitions) == 2
            a.list_consumer_groups().result(15)
            a.delete_topics([name])[name].result(15)
            with counts.lock:
                counts.admin_ops += 4
        except Exception as e:  # noqa: BLE001 - counted and reported
            with counts.lock:
                counts.admin_errors += 1
            counts.error(f"admin: {e}")
        stop.wait(0.5)


def run(bootstrap: str, seconds: float, *, broker_pid: int | None = None, producers: int = 2, consumers: int = 2,
        rate: int = 2000, size: int = 200, catch_up_s: float = 60.0) -> dict:
    """Run the mixed load for `seconds`; the figures as a dict (see the module text)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(TOPIC, num_partitions=PARTITIONS, replication_factor=1)])[TOPIC].result(30)
    counts = _Counts()
    stop_producing, stop_rest = threading.Event(), threading.Event()
    threads = [threading.Thread(target=_producer, args=(bootstrap, stop_producing, counts, rate, size, i))
               for i in range(producers)]
    threads += [threading.Thread(target=_consumer, args=(bootstrap, stop_rest, counts, i)) for i in range(consumers)]
    threads += [threading.Thread(target=_churn, args=(bootstrap, stop_rest, counts)),
                threading.Thread(target=_admin, args=(bootstrap, stop_rest, counts))]
    rss = []
    t0 = time.monotonic()
    for t in threads:
        t.daemon = True
        t.start()
    while time.monotonic() - t0 < seconds:
        if broker_pid:
            rss.append(rss_kib(broker_pid))
        time.sleep(1.0)
    stop_producing.set()
    for t in threads[:producers]:
        t.join(90)
    produced_s = time.monotonic() - t0
    deadline = time.monotonic() + catch_up_s
    while time.monotonic() < deadline:
        with counts.lock:
            if len(counts.seen) >= counts.acked:
                break
        if broker_pid:
            rss.append(rss_kib(broker_pid))
        time.sleep(0.5)
    stop_rest.set()
    for t in threads[producers:]:
        t.join(60)
    return {
        "seconds": round(produced_s, 1), "producers": producers, "consumers": consumers, "rate_per_producer": rate,
        "record_bytes": size, "acked": counts.acked, "produce_errors": counts.produce_errors,
        "consumed_unique": len(counts.seen), "consume_errors": counts.consume_errors,
        "admin_ops": counts.admin_ops, "admin_errors": counts.admin_errors, "churn_cycles": counts.rebalances,
        "acked_per_s": round(counts.acked / produced_s), "errors": counts.errors,
        "rss_start_kib": rss[0] if rss else None, "rss_max_kib": max(rss) if rss else None,
        "rss_end_kib": rss[-1] if rss else None,
    }


def render(res: dict, argv: list[str], metrics: dict | None) -> str:
    mib = lambda k: "-" if k is None else f"{k / 1024:.0f} MiB"  # noqa: E731
    lines = [f"## soak ({time.strftime('%Y-%m-%d')}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f})", "",
             f"`python -m bench soak {' '.join(argv)}`".replace("  ", " "), "",
             "| figure | value |", "|---|---|"]
    rows = [
        ("load", f"{res['producers']} idempotent producers x {res['rate_per_producer']} rec/s of "
                 f"{res['record_bytes']} B, {res['consumers']} consumers in one group, a churning second group, "
                 f"admin create/describe/list/delete"),
        ("duration", f"{res['seconds']} s"),
        ("records acknowledged", f"{res['acked']:,} ({res['acked_per_s']:,}/s)"),
        ("records read back (unique)", f"{res['consumed_unique']:,}"),
        ("produce / consume / admin errors", f"{res['produce_errors']} / {res['consume_errors']} / "
                                             f"{res['admin_errors']}"),
        ("admin operations", f"{res['admin_ops']:,}"),
        ("churn group joins", f"{res['churn_cycles']}"),
        ("broker RSS start / max / end", f"{mib(res['rss_start_kib'])} / {mib(res['rss_max_kib'])} / "
                                         f"{mib(res['rss_end_kib'])}"),
    ]
    if metrics:
        rows.append(("broker requests answered (kafka_network_requestmetrics_requests_total)",
                     f"{int(metrics.get('requests', 0)):,}"))
    lines += [f"| {a} | {b} |" for a, b in rows]
    return "\n".join(lines)


def request_total(url: str) -> dict:
    """Sum of kafka_network_requestmetrics_requests_total from the broker's /metrics."""
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    total = 0.0
    for line in text.splitlines():
        if line.startswith("kafka_network_requestmetrics_requests_total{"):
            total += float(line.rsplit(" ", 1)[1])
    return {"requests": total}


def main(argv: list[str]) -> int:
    from bench._util import free_port, start_pylog_broker

    ap = argparse.ArgumentParser(prog="python -m bench soak")
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--producers", type=int, default=4)
    ap.add_argument("--consumers", type=int, default=3)
    ap.add_argument("--rate", type=int, default=5000, help="records per second per producer")
    ap.add_argument("--size", type=int, default=200, help="record value bytes")
    ap.add_argument("--record", action="store_true", help="append the figures to bench/RESULTS.md")
    args = ap.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="pylog-bench-soak-"))
    mport = free_port()
    proc, addr = start_pylog_broker(["--log-dir", work / "data", "--listen", "127.0.0.1:0",
                                     "--set", f"metrics.listener=http://127.0.0.1:{mport}",
                                     "--set", "group.initial.rebalance.delay.ms=0"])
    try:
        res = run(addr, args.seconds, broker_pid=proc.pid, producers=args.producers, consumers=args.consumers,
                  rate=args.rate, size=args.size)
        metrics = request_total(f"http://127.0.0.1:{mport}")
    finally:
        proc.terminate()
        proc.wait(60)
        shutil.rmtree(work, ignore_errors=True)
    text = render(res, argv, metrics)
    print(text)
    print(json.dumps(res), file=sys.stderr)
    if args.record:
        with open(Path(__file__).with_name("RESULTS.md"), "a", encoding="utf-8") as f:
            f.write("\n" + text + "\n")
    ok = not (res["produce_errors"] or res["consume_errors"] or res["admin_errors"]) and \
        res["consumed_unique"] >= res["acked"]
    return 0 if ok else 1
