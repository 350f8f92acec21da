"""`python -m bench embedded`: start-up of pylog.testing.EmbeddedBroker against its alternatives.

In one run: EmbeddedBroker (a thread of this process) start and stop, `pylog broker start` as a
subprocess, and an Apache Kafka 4.x KRaft node (format excluded), each until a client can use it
(Metadata answered). Median of --runs; ratios against the embedded broker.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))


def main(argv: list[str]) -> int:
    from support.kafka_peer import KAFKA_VERSION, KafkaNode, _metadata_broker_ids

    from bench.broker import free_port
    from pylog.testing import EmbeddedBroker

    ap = argparse.ArgumentParser(prog="python -m bench embedded")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--kafka-runs", type=int, default=3)
    ap.add_argument("--record", action="store_true")
    args = ap.parse_args(argv)

    def ready(port):
        while True:
            try:
                if _metadata_broker_ids("127.0.0.1", port):
                    return
            except OSError:
                time.sleep(0.005)

    EmbeddedBroker().start().stop()  # imports and first-use costs out of the figures
    emb_start, emb_stop = [], []
    for _ in range(args.runs):
        t0 = time.perf_counter()
        b = EmbeddedBroker().start()
        ready(b.port)
        emb_start.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        b.stop()
        emb_stop.append(time.perf_counter() - t0)
    sub = []
    for _ in range(args.runs):
        d = tempfile.mkdtemp()
        port = free_port()
        t0 = time.perf_counter()
        p = subprocess.Popen([sys.executable, "-m", "pylog.cli", "broker", "start", "--listen",
                              f"127.0.0.1:{port}", "--log-dir", d], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        ready(port)
        sub.append(time.perf_counter() - t0)
        p.terminate()
        p.wait(60)
    kafka = []
    for _ in range(args.kafka_runs):
        node = KafkaNode(Path(tempfile.mkdtemp())).format()
        t0 = time.perf_counter()
        node.start(wait=False)
        ready(node.port)
        kafka.append(time.perf_counter() - t0)
        node.stop()
    med = statistics.median
    rows = [("EmbeddedBroker start (thread, to Metadata answered)", med(emb_start)),
            ("EmbeddedBroker stop (clean shutdown)", med(emb_stop)),
            ("`pylog broker start` subprocess, to Metadata answered", med(sub)),
            (f"Apache Kafka {KAFKA_VERSION} KRaft node, to Metadata answered (format excluded)", med(kafka))]
    lines = ["## embedded broker start-up", "",
             f"Command: `python -m bench embedded {' '.join(argv)}`".rstrip() + f" — {time.strftime('%Y-%m-%d')}, "
             f"{os.cpu_count()} cores, Python {sys.version.split()[0]}; median of {args.runs} runs "
             f"({args.kafka_runs} for Kafka); 1-minute load average {os.getloadavg()[0]:.1f}.", "",
             "| what | seconds | x EmbeddedBroker start |", "|---|---:|---:|"]
    lines += [f"| {name} | {s:.3f} | {s / med(emb_start):.1f}x |" for name, s in rows]
    text = "\n".join(lines)
    print(text)
    if args.record:
        with open(Path(__file__).with_name("RESULTS.md"), "a", encoding="utf-8") as f:
            f.write("\n" + text + "\n")
    return 0
