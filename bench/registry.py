"""`python -m bench registry`: pylog's schema registry and schema-aware produce, in one run.

- the reference: GET / (the listener's cheapest answer) per second from the same clients, so every
  row's ratio says how close it comes to what the HTTP stack itself allows in the same run;
  each keep-alive row is the best of --repeats runs;
- registrations, id lookups and subject-version lookups per second from --clients keep-alive
  HTTP/1.1 connections (bench/registry_load.py, in --procs processes of their own) against the
  registry of an EmbeddedBroker;
- the same three through confluent-kafka's SchemaRegistryClient, its caches cleared before each call;
- with --records N: `pylog produce --value-format avro` records/s (a subprocess, JSON lines in)
  against confluent-kafka's AvroSerializer + Producer producing the same records to the same broker.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCHEMA = {"type": "record", "name": "Order", "namespace": "bench",
          "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"},
                     {"name": "qty", "type": "int"}, {"name": "price", "type": "double"}]}


def _load(url: str, kind: str, n: int, clients: int, procs: int, offset: int = 0) -> float:
    """Requests per second of `kind` from `clients` keep-alive connections over `procs` processes."""
    per = n // procs
    ps = [subprocess.Popen([sys.executable, "-m", "bench.registry_load", url, kind, str(per),
                            str(max(1, clients // procs)), str(offset + k * per)],
                           stdout=subprocess.PIPE, text=True, cwd=Path(__file__).resolve().parent.parent)
          for k in range(procs)]
    outs = [json.loads(p.communicate()[0]) for p in ps]
    bad = sum(o["error_count"] for o in outs)
    if bad:
        raise SystemExit(f"{kind}: {bad} requests failed, e.g. {outs[0]['errors'] or outs[-1]['errors']}")
    return per * procs / max(o["seconds"] for o in outs)


def _best(url: str, kind: str, n: int, args) -> float:
    """The best of --repeats runs of _load: the shared machine's other jobs only ever slow a run down.
    Each run registers schemas of its own (offsets 100,000 apart)."""
    return max(_load(url, kind, n, args.clients, args.procs, offset=r * 100_000) for r in range(args.repeats))


def main(argv: list[str]) -> int:
    from pylog.core.client.schema_registry import RegistryClient
    from pylog.testing import EmbeddedBroker

    ap = argparse.ArgumentParser(prog="python -m bench registry")
    ap.add_argument("--clients", type=int, default=8, help="keep-alive connections in all")
    ap.add_argument("--procs", type=int, default=2, help="client processes the connections are spread over")
    ap.add_argument("--registrations", type=int, default=2000, help="registrations per run")
    ap.add_argument("--repeats", type=int, default=3, help="runs of each keep-alive row; the best one counts")
    ap.add_argument("--lookups", type=int, default=100000, help="requests per run of each lookup row")
    ap.add_argument("--ck-calls", type=int, default=4000, help="calls through confluent-kafka's client per kind")
    ap.add_argument("--records", type=int, default=0, help="also time schema-aware produce with this many records")
    ap.add_argument("--record", action="store_true", help="append the table to bench/RESULTS.md")
    args = ap.parse_args(argv)

    rows = []  # (what, per second, the per-second figure it is compared with)
    with EmbeddedBroker(schema_registry=True) as kafka:
        url = kafka.schema_registry_url
        RegistryClient(url).request("PUT", "/config", {"compatibility": "NONE"})
        _load(url, "root", min(args.lookups, 5000), args.clients, args.procs)  # warm-up, not counted
        ref = _best(url, "root", args.lookups, args)
        rows.append((f"reference: GET / (the listener's cheapest answer, {args.clients} keep-alive clients)", ref, ref))
        reg = _best(url, "register", args.registrations, args)
        rows.append((f"registrations (new schemas, POST /subjects/S/versions, {args.clients} keep-alive clients)",
                     reg, ref))
        rows.append((f"id lookups (GET /schemas/ids/ID, {args.clients} keep-alive clients)",
                     _best(url, "ids", args.lookups, args), ref))
        rows.append((f"subject-version lookups (GET /subjects/S/versions/V, {args.clients} keep-alive clients)",
                     _best(url, "versions", args.lookups, args), ref))
        for kind, what in (("ck-ids", "get_schema(id)"), ("ck-versions", "get_version(subject, version)"),
                           ("ck-register", "register_schema (new schemas)")):
            rows.append((f"confluent-kafka SchemaRegistryClient.{what}, caches cleared per call, "
                         f"{args.clients} threads", _load(url, kind, args.ck_calls, args.clients, args.procs,
                                                          offset=10 ** 6), ref))
        if args.records:
            rows += _produce(kafka, url, args.records)

    lines = ["## schema registry", "",
             f"Command: `python -m bench registry {' '.join(argv)}`".rstrip() + f" — {time.strftime('%Y-%m-%d')}, "
             f"{os.cpu_count()} cores, Python {sys.version.split()[0]}; 1-minute load average "
             f"{os.getloadavg()[0]:.1f}. Keep-alive rows: the best of {args.repeats} runs; ratio: against the "
             f"reference row (the produce rows: against confluent-kafka's).", "",
             "| what | per second | ratio |", "|---|---:|---:|"]
    lines += [f"| {w} | {v:,.0f} | {v / r:.2f} |" for w, v, r in rows]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.record:
        with open(Path(__file__).resolve().parent / "RESULTS.md", "a", encoding="utf-8") as f:
            f.write("\n" + text)
    return 0


def _produce(kafka, url, records) -> list:
    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    rows = []
    if True:
        values = [{"id": i, "item": f"item-{i % 100}", "qty": i % 7, "price": i / 100} for i in range(records)]
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
        ck = records / (time.perf_counter() - t0)
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
                raise SystemExit(r.stderr)
        rows.append(("confluent-kafka AvroSerializer + Producer (in process), records/s", ck, ck))
        rows.append(("`pylog produce --value-format avro` (subprocess, start-up included), records/s",
                     records / took, ck))
    return rows
