"""`python -m bench kafka`: Apache Kafka 4.x and `pylog broker start` side by side, one run, one machine.

Both brokers run with their defaults on loopback, one at a time per workload (interleaved, best of
the rounds). Durability is the same on both: neither fsyncs per request (Kafka's
log.flush.interval.messages and pylog's flush settings are left at their defaults; both flush on
segment roll and shutdown), replication factor 1.

Rows:
  * produce/consume with librdkafka (confluent-kafka produce_batch / consume), with Kafka's own
    ProducerPerformance / ConsumerPerformance (Java client 4.x) and with `pylog perf`:
    100 B and 1 KiB, acks=1 and all, one and 12 partitions. librdkafka's consume rows read a log
    written the same way on both brokers (900 KB batches from a raw producer, spread evenly over the
    partitions): a log librdkafka writes itself has a layout that depends on the broker (it closes
    its batches sooner against a broker that acknowledges sooner), and a consumer reading more,
    smaller batches measures the layout, not the broker;
  * start-up time (process start to Metadata answered) and resident memory, empty and with
    --data-gb of data; recovery time after kill -9 with the same data;
  * the log cleaner: the same compacted topic cleaned by Kafka's cleaner (MB/s from its own
    log line) and by pylog's (`pylog compact --json`, MB/s from its statistics).

Options: --quick, --rounds N, --data-gb G (default 1; the goal's figure is 10), --record.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.broker import _ck_version, ck_consume, ck_produce, free_port, raw_produce

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from support.kafka_peer import KAFKA_VERSION, KafkaNode, _metadata_broker_ids, run_main  # noqa: E402

PRODUCER_CONF = {"linger.ms": 1, "batch.num.messages": 1000000, "batch.size": 1000000,
                 "queue.buffering.max.messages": 4000000, "queue.buffering.max.kbytes": 2097151}


def rss_mb(pid: int) -> float:
    """Resident memory of a process in MB (VmRSS)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def wait_metadata(port: int, node_id: int, timeout: float = 600) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if node_id in _metadata_broker_ids("127.0.0.1", port):
                return
        except OSError:
            pass
        time.sleep(0.02)
    raise RuntimeError(f"no Metadata answer on port {port} in {timeout}s")


class Kafka:
    """A single Apache Kafka KRaft node with its defaults (the harness's node settings)."""

    name = "kafka"

    def __init__(self, work: Path, overrides: dict | None = None):
        # the harness's test settings put the initial rebalance delay at 0; here Kafka keeps its
        # default (3 s), as pylog does
        self.node = KafkaNode(work / "kafka", 1, overrides={"num.partitions": 1,
                                                           "group.initial.rebalance.delay.ms": 3000,
                                                           **(overrides or {})}).format()
        self.bootstrap = self.node.bootstrap

    def start(self) -> float:
        t0 = time.perf_counter()
        self.node.start(wait=False)
        wait_metadata(self.node.port, 1)
        return time.perf_counter() - t0

    @property
    def pid(self) -> int:
        return self.node.proc.pid

    def stop(self) -> None:
        self.node.stop(120)

    def kill9(self) -> None:
        self.node.kill9()

    @property
    def data_dir(self) -> Path:
        return self.node.log_dir


class Pylog:
    """`pylog broker start` with its defaults on a log dir of its own."""

    name = "pylog"

    def __init__(self, work: Path, overrides: dict | None = None):
        work.mkdir(parents=True, exist_ok=True)
        self.dir = work / "pylog-data"
        self.port = free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.log = work / "pylog-broker.log"
        self.sets = [a for k, v in (overrides or {}).items() for a in ("--set", f"{k}={v}")]
        self.proc = None

    def start(self) -> float:
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pylog.cli", "broker", "start", "--listen", self.bootstrap, "--log-dir",
             str(self.dir), "--log-level", "warning", *self.sets],
            stdout=subprocess.DEVNULL, stderr=open(self.log, "ab"))
        wait_metadata(self.port, 1)
        return time.perf_counter() - t0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(300)

    def kill9(self) -> None:
        self.proc.kill()
        self.proc.wait(30)

    @property
    def data_dir(self) -> Path:
        return self.dir


# ---- workloads -----------------------------------------------------------------------------

def create_topic(bootstrap: str, topic: str, partitions: int, configs: dict | None = None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1,
                                  config={k: str(v) for k, v in (configs or {}).items()})])[topic].result(60)


def fill_same_layout(bootstrap: str, topic: str, n: int, size: int, partitions: int) -> None:
    """A new topic holding at least `n` records of `size` bytes in the same batches on any broker
    (raw_produce's 900 KB batches, n / partitions records on each partition)."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    create_topic(bootstrap, topic, partitions)
    # a raw producer does not retry: wait until every partition's leader answers ListOffsets
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-fill"})
    deadline = time.monotonic() + 60
    try:
        for p in range(partitions):
            while True:
                try:
                    c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)
                    break
                except KafkaException:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
    finally:
        c.close()
    for p in range(partitions):
        raw_produce(bootstrap, topic, -(-n // partitions), size, 1, partition=p)


def java_produce(bootstrap, topic, n, size, acks) -> float:
    """Kafka's ProducerPerformance (kafka-producer-perf-test.sh); records/s from its own summary."""
    r = run_main("org.apache.kafka.tools.ProducerPerformance", "--topic", topic, "--num-records", n,
                 "--record-size", size, "--throughput", "-1", "--producer-props", f"bootstrap.servers={bootstrap}",
                 f"acks={acks}", "linger.ms=5", "batch.size=65536", timeout=900, check=True)
    m = re.findall(r"(\d+) records sent, ([\d.]+) records/sec", r.stdout)
    if not m or int(m[-1][0]) != n:
        raise RuntimeError(f"ProducerPerformance: {r.stdout[-500:]}")
    return n / float(m[-1][1])


def java_consume(bootstrap, topic, expect) -> float:
    """Kafka's ConsumerPerformance (kafka-consumer-perf-test.sh); fetch time from its own summary."""
    r = run_main("org.apache.kafka.tools.ConsumerPerformance", "--bootstrap-server", bootstrap, "--topic", topic,
                 "--messages", expect, "--timeout", "60000", timeout=900, check=True)
    lines = [line for line in r.stdout.splitlines() if line and line[0].isdigit()]
    if not lines:
        raise RuntimeError(f"ConsumerPerformance: {r.stdout[-500:]}")
    cols = [c.strip() for c in lines[-1].split(",")]
    # start, end, MB, MB/s, nMsg, nMsg/s, rebalance ms, fetch ms, fetch MB/s, fetch nMsg/s
    if int(cols[4]) < expect:
        raise RuntimeError(f"ConsumerPerformance read {cols[4]} of {expect}")
    return expect / float(cols[9])


def pylog_perf_produce(bootstrap, topic, n, size, acks) -> float:
    r = subprocess.run([sys.executable, "-m", "pylog.cli", "perf", "produce", topic, "-b", bootstrap, "-n", str(n),
                        "-s", str(size), "--acks", acks, "--json"], capture_output=True, text=True, timeout=900)
    if r.returncode:
        raise RuntimeError(f"pylog perf produce: {r.stderr[-500:]}")
    return n / json.loads(r.stdout)["records_per_s"]


def pylog_perf_consume(bootstrap, topic, expect) -> float:
    r = subprocess.run([sys.executable, "-m", "pylog.cli", "perf", "consume", topic, "-b", bootstrap, "-n",
                        str(expect), "--json"], capture_output=True, text=True, timeout=900)
    if r.returncode:
        raise RuntimeError(f"pylog perf consume: {r.stderr[-500:]}")
    return expect / json.loads(r.stdout)["records_per_s"]


def throughput(brokers, counts, rounds) -> dict:
    """{workload: {broker: (msgs/s, MB/s)}}, best of `rounds`, brokers interleaved."""
    out: dict[str, dict] = {}

    def keep(key, name, n, size, took):
        best = out.setdefault(key, {}).get(name)
        if best is None or n / took > best[0]:
            out[key][name] = (n / took, n * size / took)

    # (label, produce(bootstrap, topic, n, size, acks), consume(bootstrap, topic, n)) on one partition
    one_partition = [
        ("Java ProducerPerformance / ConsumerPerformance", java_produce, java_consume),
        ("pylog perf", pylog_perf_produce, pylog_perf_consume),
    ]
    for r in range(rounds):
        for size in (100, 1024):
            n = counts[size]
            for parts in (1, 12):
                for acks in ("1", "all"):
                    for b in brokers:
                        topic = f"rdk-{size}-{parts}-{acks}-{r}"
                        create_topic(b.bootstrap, topic, parts)
                        keep(f"librdkafka produce {size} B, {parts} part., acks={acks}", b.name, n, size,
                             ck_produce(b.bootstrap, topic, n, size, acks, partitions=parts))
                for b in brokers:
                    topic = f"rdc-{size}-{parts}-{r}"
                    fill_same_layout(b.bootstrap, topic, n, size, parts)
                    keep(f"librdkafka consume {size} B, {parts} part.", b.name, n, size,
                         ck_consume(b.bootstrap, topic, n, partitions=parts))
            for i, (label, produce, consume) in enumerate(one_partition):
                for acks in ("1", "all"):
                    for b in brokers:
                        topic = f"c{i}-{size}-{acks}-{r}"
                        create_topic(b.bootstrap, topic, 1)
                        keep(f"{label}: produce {size} B, acks={acks}", b.name, n, size,
                             produce(b.bootstrap, topic, n, size, acks))
                for b in brokers:
                    keep(f"{label}: consume {size} B", b.name, n, size, consume(b.bootstrap, f"c{i}-{size}-1-{r}", n))
    return out


def du_gb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e9


def lifecycle(make, work: Path, data_gb: float) -> dict:
    """Start-up time and RSS empty, then with data_gb of data, then recovery after kill -9."""
    b = make(work)
    res = {"start empty (s)": b.start()}
    time.sleep(2)  # resident memory once start-up work settled
    res["RSS empty (MB)"] = rss_mb(b.pid)
    topic = "bulk"
    create_topic(b.bootstrap, topic, 12)
    size = 1024
    n = int(data_gb * 1e9 / size)
    ck_produce(b.bootstrap, topic, n - n % 10000, size, "1", partitions=12)
    res["data (GB on disk)"] = du_gb(b.data_dir)
    b.stop()
    res["start with data (s)"] = b.start()
    time.sleep(2)
    res["RSS with data (MB)"] = rss_mb(b.pid)
    # the unflushed tail is what recovery has to scan: write more, then kill -9
    ck_produce(b.bootstrap, topic, 200_000, size, "1", partitions=12)
    b.kill9()
    res["recovery after kill -9 (s)"] = b.start()
    b.stop()
    shutil.rmtree(b.data_dir, ignore_errors=True)
    return res


def cleaner(work: Path, records: int, keys: int) -> dict:
    """The same compacted topic cleaned by Kafka's cleaner and by pylog's; MB/s from each one's statistics."""
    from confluent_kafka import Producer

    # filled as a plain topic, then switched to compact: each cleaner then cleans the whole log in one go
    configs = {"cleanup.policy": "delete", "retention.ms": -1, "segment.bytes": 4 << 20,
               "min.cleanable.dirty.ratio": 0.01, "min.compaction.lag.ms": 0}
    out = {}

    def fill(bootstrap):
        from confluent_kafka.admin import AdminClient, ConfigResource

        create_topic(bootstrap, "compacted", 1, configs)
        p = Producer({"bootstrap.servers": bootstrap, "acks": "1", **PRODUCER_CONF})
        value = b"v" * 100
        for i in range(records):
            while True:
                try:
                    p.produce("compacted", value, key=b"key-%d" % (i % keys), partition=0)
                    break
                except BufferError:
                    p.poll(0.01)
        if p.flush(300):
            raise RuntimeError("cleaner fill: not delivered")
        admin = AdminClient({"bootstrap.servers": bootstrap})
        res = ConfigResource("topic", "compacted", set_config={**{k: str(v) for k, v in configs.items()},
                                                               "cleanup.policy": "compact"})
        for f in admin.alter_configs([res]).values():
            f.result(60)

    kafka = Kafka(work / "cleaner-kafka", {"log.cleaner.backoff.ms": 1000})
    kafka.start()
    fill(kafka.bootstrap)
    log = kafka.node.stderr_path
    deadline = time.monotonic() + 600
    stats = None
    while time.monotonic() < deadline and stats is None:
        stats = re.search(r"([\d.,]+) MB of log processed in ([\d.,]+) seconds \(([\d.,]+) MB/sec\)",
                          log.read_text(errors="replace"))
        time.sleep(0.5)
    kafka.stop()
    if stats is None:
        raise RuntimeError("Kafka's cleaner did not report a cleaning")
    out["kafka"] = {k: float(v.replace(",", "")) for k, v in zip(("MB", "seconds", "MB/s"), stats.groups())}

    py = Pylog(work / "cleaner-pylog", {"log.cleaner.enable": "false"})
    (work / "cleaner-pylog").mkdir(parents=True, exist_ok=True)
    py.start()
    fill(py.bootstrap)
    py.stop()
    r = subprocess.run([sys.executable, "-m", "pylog.cli", "compact", str(py.data_dir), "--json"],
                       capture_output=True, text=True, timeout=900)
    if r.returncode:
        raise RuntimeError(f"pylog compact: {r.stderr[-500:]}")
    part = [p for p in json.loads(r.stdout)["partitions"] if p.get("cleaned")][0]
    out["pylog"] = {"MB": part["bytes_read"] / 1e6, "seconds": part["bytes_read"] / 1e6 / part["mb_per_sec"],
                    "MB/s": part["mb_per_sec"]}
    return out


def render(argv, counts, tp, life, clean, load) -> str:
    lines = ["## kafka: Apache Kafka and pylog side by side", "",
             f"Command: `python -m bench kafka {' '.join(argv)}`".rstrip() + f" — {time.strftime('%Y-%m-%d')}, "
             f"{os.cpu_count()} cores shared by clients and broker, Apache Kafka {KAFKA_VERSION} (KRaft, one "
             f"combined node, Java {_java_version()}) and pylog (Python {sys.version.split()[0]}), each with its "
             "defaults, replication factor 1, no fsync per request on either; clients: confluent-kafka "
             f"{_ck_version()}, Kafka's ProducerPerformance/ConsumerPerformance {KAFKA_VERSION}, `pylog perf`. "
             f"{counts[100]:,} x 100 B and {counts[1024]:,} x 1 KiB per row, best of the rounds; 1-minute load "
             f"average {load[0]:.1f} before, {load[1]:.1f} after.", "",
             "| workload | Kafka msgs/s | pylog msgs/s | Kafka MB/s | pylog MB/s | pylog / Kafka |",
             "|---|---:|---:|---:|---:|---:|"]
    for key, row in tp.items():
        k, p = row.get("kafka"), row.get("pylog")
        lines.append(f"| {key} | {k[0]:,.0f} | {p[0]:,.0f} | {k[1] / 1e6:,.1f} | {p[1] / 1e6:,.1f} | "
                     f"{p[0] / k[0]:.2f}x |")
    if life["kafka"]:
        lines += ["", "| lifecycle | Kafka | pylog | pylog / Kafka |", "|---|---:|---:|---:|"]
        for key in life["kafka"]:
            k, p = life["kafka"][key], life["pylog"][key]
            lines.append(f"| {key} | {k:,.2f} | {p:,.2f} | {p / k:.2f}x |")
    if clean:
        lines += ["", "| log cleaner (one compacted partition) | Kafka | pylog | pylog / Kafka |",
                  "|---|---:|---:|---:|"]
        for key in ("MB", "seconds", "MB/s"):
            lines.append(f"| {key} | {clean['kafka'][key]:,.2f} | {clean['pylog'][key]:,.2f} | "
                         f"{clean['pylog'][key] / clean['kafka'][key]:.2f}x |")
    return "\n".join(lines)


def _java_version() -> str:
    r = subprocess.run(["java", "-version"], capture_output=True, text=True)
    m = re.search(r'version "([^"]+)"', r.stderr)
    return m[1] if m else "?"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench kafka")
    ap.add_argument("--quick", action="store_true", help="smaller counts, one round unless --rounds, 0.2 GB of data")
    ap.add_argument("--rounds", type=int, default=None, help="rounds per row, best kept (default 2; --quick 1)")
    ap.add_argument("--data-gb", type=float, default=1.0)
    ap.add_argument("--skip", action="append", default=[], choices=["throughput", "lifecycle", "cleaner"])
    ap.add_argument("--record", action="store_true", help="append the figures to bench/RESULTS.md")
    args = ap.parse_args(argv)
    counts = {100: 200_000, 1024: 60_000} if args.quick else {100: 1_000_000, 1024: 300_000}
    rounds = args.rounds or (1 if args.quick else 2)
    data_gb = 0.2 if args.quick else args.data_gb
    work = Path(tempfile.mkdtemp(prefix="pylog-bench-kafka-"))
    load0 = os.getloadavg()[0]
    try:
        tp, life, clean = {}, {"kafka": {}, "pylog": {}}, None
        if "throughput" not in args.skip:
            brokers = [Kafka(work / "tp"), Pylog(work / "tp")]
            for b in brokers:
                b.start()
            try:
                tp = throughput(brokers, counts, rounds)
            finally:
                for b in brokers:
                    b.stop()
        if "lifecycle" not in args.skip:
            life = {"kafka": lifecycle(lambda w: Kafka(w), work / "life", data_gb),
                    "pylog": lifecycle(lambda w: Pylog(w), work / "life", data_gb)}
        if "cleaner" not in args.skip:
            clean = cleaner(work, 2_000_000 if not args.quick else 400_000, 10_000)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    text = render(argv, counts, tp, life, clean, (load0, os.getloadavg()[0]))
    print(text)
    if args.record:
        with open(Path(__file__).with_name("RESULTS.md"), "a", encoding="utf-8") as f:
            f.write("\n" + text + "\n")
    return 0
