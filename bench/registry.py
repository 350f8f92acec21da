"""`python -m bench registry`: pylog's schema registry and schema-aware produce, in one run.

- registrations/s and id lookups/s with --clients concurrent HTTP clients against the registry
  of an EmbeddedBroker, beside `GET /` on the same listener (the HTTP stack's own rate: the
  reference the registry's figures are a ratio of);
- `pylog produce --value-format avro` records/s (a subprocess, JSON lines in) against
  confluent-kafka's AvroSerializer + Producer producing the same records to the same broker.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

SCHEMA = {"type": "record", "name": "Order", "namespace": "bench",
          "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"},
                     {"name": "qty", "type": "int"}, {"name": "price", "type": "double"}]}


def _parallel(clients: int, n: int, fn) -> float:
    """Seconds for `n` calls of fn(i) spread over `clients` threads."""
    def worker(k):
        for i in range(k, n, clients):
            fn(i)
    ts = [threading.Thread(target=worker, args=(k,)) for k in range(clients)]
    t0 = time.perf_counter()
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return time.perf_counter() - t0


def main(argv: list[str]) -> int:
    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    from pylog.core.client.schema_registry import RegistryClient
    from pylog.testing import EmbeddedBroker

    ap = argparse.ArgumentParser(prog="python -m bench registry")
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--registrations", type=int, default=400)
    ap.add_argument("--lookups", type=int, default=4000)
    ap.add_argument("--records", type=int, default=200000)
    ap.add_argument("--record", action="store_true", help="append the table to bench/RESULTS.md")
    args = ap.parse_args(argv)

    rows = []
    with EmbeddedBroker(schema_registry=True) as kafka:
        url = kafka.schema_registry_url
        clients = [RegistryClient(url) for _ in range(args.clients)]
        clients[0].request("PUT", "/config", {"compatibility": "NONE"})
        root = _parallel(args.clients, args.lookups, lambda i: clients[i % args.clients].request("GET", "/"))
        rows.append(("GET / (the HTTP listener alone)", args.lookups / root, 1.0))

        def register(i):
            s = dict(SCHEMA, name=f"Order{i}")
            clients[i % args.clients].register(f"bench-{i % 50}", json.dumps(s))
        took = _parallel(args.clients, args.registrations, register)
        rows.append((f"registrations (new schemas, {args.clients} clients)", args.registrations / took,
                     (args.registrations / took) / (args.lookups / root)))
        took = _parallel(args.clients, args.lookups,
                         lambda i: clients[i % args.clients].request("GET", f"/schemas/ids/{1 + i % args.registrations}"))
        rows.append((f"id lookups (GET /schemas/ids/ID, {args.clients} clients)", args.lookups / took,
                     (args.lookups / took) / (args.lookups / root)))

        values = [{"id": i, "item": f"item-{i % 100}", "qty": i % 7, "price": i / 100} for i in range(args.records)]
        sr = SchemaRegistryClient({"url": url})
        ser = AvroSerializer(sr, json.dumps(SCHEMA))
        p = Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 5, "batch.size": 262144})
        ctx = SerializationContext("bench-ck", MessageField.VALUE)
        t0 = time.perf_counter()
        for v in values:
            while True:
                try:
                    p.produce("bench-ck", value=ser(v, ctx))
                    break
                except BufferError:
                    p.poll(0.05)
        p.flush(120)
        ck = args.records / (time.perf_counter() - t0)
        del p  # librdkafka's producer closes before the broker does
        with tempfile.TemporaryDirectory() as d:
            schema = Path(d) / "order.avsc"
            schema.write_text(json.dumps(SCHEMA))
            lines = Path(d) / "in.jsonl"
            lines.write_text("".join(json.dumps(v) + "\n" for v in values))
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "pylog.cli", "produce", "bench-pylog", "-b", kafka.bootstrap,
                                "--input", str(lines), "--value-format", "avro", "--value-schema", str(schema),
                                "--schema-registry", url, "--json"], capture_output=True, text=True)
            took = time.perf_counter() - t0
            if r.returncode != 0:
                print(r.stderr, file=sys.stderr)
                return 1
        rows.append(("confluent-kafka AvroSerializer + Producer (in process), records/s", ck, 1.0))
        rows.append(("`pylog produce --value-format avro` (subprocess, start-up included), records/s",
                     args.records / took, (args.records / took) / ck))

    lines = ["## schema registry", "",
             f"Command: `python -m bench registry {' '.join(argv)}`".rstrip() + f" — {time.strftime('%Y-%m-%d')}, "
             f"{os.cpu_count()} cores, Python {sys.version.split()[0]}; 1-minute load average "
             f"{os.getloadavg()[0]:.1f}.", "",
             "| what | per second | ratio |", "|---|---:|---:|"]
    lines += [f"| {w} | {v:,.0f} | {r:.2f} |" for w, v, r in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.record:
        with open(Path(__file__).resolve().parent / "RESULTS.md", "a", encoding="utf-8") as f:
            f.write("\n" + text)
    return 0
