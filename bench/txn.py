"""`python -m bench txn`: transactional produce throughput against non-transactional, pylog's broker
against Apache Kafka in the same run (issue 15).

Both brokers with their defaults on loopback (bench.kafka's Kafka and Pylog), one topic of three
partitions per row, 100-byte records. Each client sends the same records three ways: without
transactions (idempotent, acks=all), and in transactions of 1,000 and of 10,000 records (begin,
send, commit; the clock stops when the last commit returns, the non-transactional run's when
flush returns). Clients: pylog's Producer (the `send_many` bulk path) and confluent-kafka
(librdkafka `produce_batch`). A broker that refuses transactions shows the error instead of a
figure. A check after every row reads the topic back with isolation.level=read_committed and
counts the records.

Options: --quick, --rounds N (best of), --records N, --record (append to bench/RESULTS.md).
"""
from __future__ import annotations

import argparse
import itertools
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench.broker import _ck_version
from bench.kafka import Kafka, Pylog, _java_version, create_topic

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.kafka_peer import KAFKA_VERSION  # noqa: E402

SIZE = 100
PARTITIONS = 3
MODES = [("non-transactional", None), ("transactions of 1,000", 1000), ("transactions of 10,000", 10000)]
_ids = itertools.count()


def pylog_produce(bootstrap, topic, n, txn_size) -> float:
    from pylog.core.client import Producer

    props = {"bootstrap.servers": bootstrap, "linger.ms": "5", "batch.size": "262144",
             "buffer.memory": str(256 << 20)}
    if txn_size:
        props["transactional.id"] = f"bench-{os.getpid()}-{next(_ids)}"
    p = Producer(props)
    try:
        if txn_size:
            p.init_transactions()
        step = txn_size or 10000
        values = [b"p" * SIZE] * step
        batches = []
        t0 = time.perf_counter()
        for _ in range(n // step):
            if txn_size:
                p.begin_transaction()
            batches += p.send_many(topic, values)
            if txn_size:
                p.commit_transaction()
        p.flush()
        took = time.perf_counter() - t0
        failed = [b.error for b in batches if b.error is not None]
        if failed:
            raise RuntimeError(f"{len(failed)} batches failed, first: {failed[0]!r}")
        return took
    finally:
        p.close()


def ck_produce(bootstrap, topic, n, txn_size) -> float:
    from confluent_kafka import Producer

    conf = {"bootstrap.servers": bootstrap, "linger.ms": 5, "batch.size": 262144,
            "queue.buffering.max.messages": 2000000, "queue.buffering.max.kbytes": 2097151,
            "enable.idempotence": True}
    if txn_size:
        conf["transactional.id"] = f"bench-ck-{os.getpid()}-{next(_ids)}"
    p = Producer(conf)
    if txn_size:
        p.init_transactions(60)
    step = txn_size or 10000
    msgs = [{"value": b"p" * SIZE}] * step
    t0 = time.perf_counter()
    for _ in range(n // step):
        if txn_size:
            p.begin_transaction()
        while True:
            try:
                p.produce_batch(topic, msgs)
                break
            except BufferError:
                p.poll(0.001)
        p.poll(0)
        if txn_size:
            p.commit_transaction(120)
    if p.flush(300):
        raise RuntimeError("producer did not deliver everything")
    return time.perf_counter() - t0


def committed_count(bootstrap, topic) -> int:
    """Records a read_committed consumer sees (end offsets are the LSO; markers are not records)."""
    from pylog.core.client import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "isolation.level": "read_committed",
                  "auto.offset.reset": "earliest", "max.poll.records": "100000"})
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        c.assign(tps)
        ends = c.end_offsets(tps)
        n = 0
        deadline = time.monotonic() + 600
        while any(c.position(tp) < ends[tp] for tp in tps):
            if time.monotonic() > deadline:
                raise RuntimeError(f"read back {n} records in 600 s, positions "
                                   f"{[c.position(tp) for tp in tps]} of {[ends[tp] for tp in tps]}")
            n += sum(len(r) for r in c.poll(200).values())
        return n
    finally:
        c.close()


CLIENTS = {"pylog": pylog_produce, "confluent-kafka": ck_produce}


def run(brokers, n, rounds) -> dict:
    """{(client, mode): {broker: msgs/s or error text}}."""
    out: dict = {}
    for b in brokers:  # warm-up (connections, JIT, the first segment): not measured
        for client, fn in CLIENTS.items():
            topic = f"txn-warmup-{client}"
            create_topic(b.bootstrap, topic, PARTITIONS)
            fn(b.bootstrap, topic, 10000, None)
    for r in range(rounds):
        for client, fn in CLIENTS.items():
            for mode, txn_size in MODES:
                for b in brokers:
                    row = out.setdefault((client, mode), {})
                    if isinstance(row.get(b.name), str):
                        continue  # refused once: refused again
                    topic = f"txn-{client}-{txn_size or 0}-{r}"
                    try:
                        create_topic(b.bootstrap, topic, PARTITIONS)
                        took = fn(b.bootstrap, topic, n, txn_size)
                    except Exception as e:  # noqa: BLE001 - shown in the table
                        print(f"round {r + 1} {client} {mode} on {b.name} failed: {e!r} "
                              f"(cause: {getattr(e, 'cause', None)!r})", file=sys.stderr)
                        row[b.name] = f"{type(e).__name__}: {str(e).splitlines()[0][:80]}"
                        continue
                    try:
                        seen = committed_count(b.bootstrap, topic)
                    except RuntimeError as e:
                        seen = str(e)
                    if seen != n:
                        print(f"round {r + 1} {client} {mode} on {b.name}: read_committed saw {seen} of {n}",
                              file=sys.stderr)
                        row[b.name] = f"read_committed saw {seen} of {n}"
                        continue
                    row[b.name] = max(row.get(b.name) or 0, n / took)
                    print(f"round {r + 1} {client} {mode} on {b.name}: {n / took:,.0f} msgs/s", file=sys.stderr)
    return out


def render(argv, n, results, load) -> str:
    lines = ["## txn: transactional produce throughput (issue 15)", "",
             f"Command: `{' '.join(['python -m bench txn', *argv])}` — {time.strftime('%Y-%m-%d')}, "
             f"{os.cpu_count()} cores shared by clients and brokers, Apache Kafka {KAFKA_VERSION} (KRaft, one "
             f"combined node, Java {_java_version()}) and pylog's broker (Python {sys.version.split()[0]}), "
             f"each with its defaults; {n:,} x {SIZE} B records per row to a topic of {PARTITIONS} "
             f"partitions, acks=all, idempotent; clients: pylog's Producer and confluent-kafka {_ck_version()}; "
             f"best of the rounds; every row read back with read_committed and counted. 1-minute load "
             f"average {load[0]:.1f} before, {load[1]:.1f} after.", "",
             "| client | mode | Kafka msgs/s | pylog broker msgs/s | pylog / Kafka |", "|---|---|---:|---:|---:|"]

    def cell(v):
        return f"{v:,.0f}" if isinstance(v, float) else (v or "-")
    for (client, mode), row in results.items():
        k, p = row.get("kafka"), row.get("pylog")
        ratio = f"{p / k:.2f}x" if isinstance(k, float) and isinstance(p, float) else "-"
        lines.append(f"| {client} | {mode} | {cell(k)} | {cell(p)} | {ratio} |")
    lines.append("")
    for client in CLIENTS:
        base = results.get((client, MODES[0][0]), {})
        for mode, _ in MODES[1:]:
            row = results.get((client, mode), {})
            parts = [f"{name} {row[name] / base[name]:.2f}x" for name in ("kafka", "pylog")
                     if isinstance(row.get(name), float) and isinstance(base.get(name), float)]
            if parts:
                lines.append(f"- {client}, {mode} against non-transactional: " + ", ".join(parts))
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench txn")
    ap.add_argument("--quick", action="store_true", help="fewer records, one round")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--records", type=int, default=None, help="records per row (a multiple of 10,000)")
    ap.add_argument("--record", action="store_true", help="append the figures to bench/RESULTS.md")
    args = ap.parse_args(argv)
    n = args.records or (100_000 if args.quick else 500_000)
    n -= n % 10000
    rounds = 1 if args.quick else args.rounds
    work = Path(tempfile.mkdtemp(prefix="pylog-bench-txn-"))
    load0 = os.getloadavg()[0]
    brokers = [Kafka(work / "kafka"), Pylog(work / "pylog")]
    try:
        for b in brokers:
            b.start()
        results = run(brokers, n, rounds)
    finally:
        for b in brokers:
            try:
                b.stop()
            except Exception:  # noqa: BLE001 - the other broker still stops
                pass
        shutil.rmtree(work, ignore_errors=True)
    text = render(argv, n, results, (load0, os.getloadavg()[0]))
    print(text)
    if args.record:
        with open(Path(__file__).with_name("RESULTS.md"), "a", encoding="utf-8") as f:
            f.write("\n" + text + "\n")
    return 0
