"""`python -m bench txn`: transactional produce throughput against non-transactional, pylog's broker
at transaction.version 2 and at 1 against Apache Kafka (at its default, 2) in the same run.

The brokers with their defaults on loopback (bench.kafka's Kafka and Pylog; pylog twice, started
with --feature transaction.version=2 and =1), one topic of three partitions per row, 100-byte
records. Each client sends the same records three ways: without transactions (idempotent,
acks=all), and in transactions of 1,000 and of 10,000 records (begin, send, commit; the clock
stops when the last commit returns, the non-transactional run's when flush returns). Clients:
Kafka's Java producer (the one client here that uses transaction.version 2 when the broker
finalizes it: partitions added by Produce v12, an epoch bump at every EndTxn), pylog's Producer
(the `send_many` bulk path) and confluent-kafka (librdkafka `produce_batch`), both level-1
clients. A broker that refuses transactions shows the error instead of a figure. A check after
every row reads the topic back with isolation.level=read_committed and counts the records.

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
from support.kafka_peer import KAFKA_VERSION, compile_java, java_command  # noqa: E402

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


JAVA_PRODUCER = """
import java.util.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/** Args: bootstrap, topic, records, transaction size (0: none), transactional id. Prints seconds. */
public class TxnBench {
    public static void main(String[] a) throws Exception {
        int n = Integer.parseInt(a[2]), txn = Integer.parseInt(a[3]);
        Properties p = new Properties();
        p.put("bootstrap.servers", a[0]);
        p.put("acks", "all");
        p.put("enable.idempotence", "true");
        p.put("linger.ms", "5");
        p.put("batch.size", "262144");
        p.put("buffer.memory", String.valueOf(256L << 20));
        if (txn > 0) p.put("transactional.id", a[4]);
        byte[] v = new byte[100];
        Arrays.fill(v, (byte) 'p');
        try (Producer<byte[], byte[]> pr = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            if (txn > 0) pr.initTransactions();
            int step = txn > 0 ? txn : 10000;
            long t0 = System.nanoTime();
            for (int i = 0; i < n / step; i++) {
                if (txn > 0) pr.beginTransaction();
                for (int j = 0; j < step; j++) pr.send(new ProducerRecord<>(a[1], null, v));
                if (txn > 0) pr.commitTransaction();
            }
            pr.flush();
            System.out.println((System.nanoTime() - t0) / 1e9);
        }
    }
}
"""


def java_produce(bootstrap, topic, n, txn_size) -> float:
    import subprocess

    classes, name = compile_java(JAVA_PRODUCER)
    proc = subprocess.run(java_command(name, bootstrap, topic, n, txn_size or 0, f"bench-java-{os.getpid()}-{next(_ids)}",
                                      extra_cp=classes), capture_output=True, text=True, timeout=1800)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}")
    return float(proc.stdout.strip().splitlines()[-1])


class PylogAt(Pylog):
    """pylog's broker finalizing transaction.version `level`."""

    def __init__(self, work: Path, level: int):
        super().__init__(work)
        self.name = f"pylog tv{level}"
        self.sets += ["--feature", f"transaction.version={level}"]


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


CLIENTS = {"Java (tv2 where finalized)": java_produce, "pylog (tv1 client)": pylog_produce,
           "confluent-kafka (tv1 client)": ck_produce}
BROKERS = ("kafka", "pylog tv2", "pylog tv1")


def run(brokers, n, rounds) -> dict:
    """{(client, mode): {broker: msgs/s or error text}}."""
    out: dict = {}
    for b in brokers:  # warm-up (connections, JIT, the first segment): not measured
        for client, fn in CLIENTS.items():
            topic = f"txn-warmup-{client.split()[0]}"
            create_topic(b.bootstrap, topic, PARTITIONS)
            fn(b.bootstrap, topic, 10000, None)
    for r in range(rounds):
        for client, fn in CLIENTS.items():
            for mode, txn_size in MODES:
                for b in brokers:
                    row = out.setdefault((client, mode), {})
                    if isinstance(row.get(b.name), str):
                        continue  # refused once: refused again
                    topic = f"txn-{client.split()[0]}-{txn_size or 0}-{r}-{b.name.replace(' ', '')}"
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
    lines = ["## txn: transactional produce throughput, transaction.version 2 against 1 and against Kafka", "",
             f"Command: `{' '.join(['python -m bench txn', *argv])}` — {time.strftime('%Y-%m-%d')}, "
             f"{os.cpu_count()} cores shared by clients and brokers, Apache Kafka {KAFKA_VERSION} (KRaft, one "
             f"combined node, transaction.version 2, Java {_java_version()}) and pylog's broker (Python "
             f"{sys.version.split()[0]}) at transaction.version 2 and 1, each with its defaults; {n:,} x {SIZE} B "
             f"records per row to a topic of {PARTITIONS} partitions, acks=all, idempotent; clients: Kafka's "
             f"Java producer {KAFKA_VERSION}, pylog's Producer and confluent-kafka {_ck_version()}; "
             f"best of the rounds; every row read back with read_committed and counted. 1-minute load "
             f"average {load[0]:.1f} before, {load[1]:.1f} after.", "",
             "| client | mode | Kafka (tv2) msgs/s | pylog tv2 msgs/s | pylog tv1 msgs/s | pylog tv2 / Kafka "
             "| pylog tv2 / tv1 |", "|---|---|---:|---:|---:|---:|---:|"]

    def cell(v):
        return f"{v:,.0f}" if isinstance(v, float) else (v or "-")
    def ratio(a, b):
        return f"{a / b:.2f}x" if isinstance(a, float) and isinstance(b, float) else "-"
    for (client, mode), row in results.items():
        k, p2, p1 = (row.get(b) for b in BROKERS)
        lines.append(f"| {client} | {mode} | {cell(k)} | {cell(p2)} | {cell(p1)} | {ratio(p2, k)} | {ratio(p2, p1)} |")
    lines.append("")
    for client in CLIENTS:
        base = results.get((client, MODES[0][0]), {})
        for mode, _ in MODES[1:]:
            row = results.get((client, mode), {})
            parts = [f"{name} {row[name] / base[name]:.2f}x" for name in BROKERS
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
    brokers = [Kafka(work / "kafka"), PylogAt(work / "pylog-tv2", 2), PylogAt(work / "pylog-tv1", 1)]
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
