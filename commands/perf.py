"""`pylog perf produce|consume`: throughput and latency, like Kafka's perf-test tools."""
from __future__ import annotations

import os
import time
from operator import attrgetter

import click
from rich.table import Table

from pylog.commands.console import emit_json, err, out
from pylog.commands.completion import topic_names
from pylog.commands.options import bootstrap_option, json_option, properties_options, topic_argument
from pylog.core.config import CONSUMER_CONFIGS, PRODUCER_CONFIGS
from pylog.core.errors import DataError

from pylog.commands.client_common import client_props, producer_options


_KEY = attrgetter("key")
_VALUE = attrgetter("value")


def percentiles(samples: list[tuple[float, int]]) -> dict:
    """Weighted (value, count) samples -> avg/p50/p95/p99/max in ms."""
    if not samples:
        return {"avg": 0.0, "p50": 0.0, "p95": 0.0, "p99": 0.0, "max": 0.0}
    samples = sorted(samples)
    total = sum(c for _, c in samples)
    avg = sum(v * c for v, c in samples) / total
    res = {"avg": avg}
    for name, q in (("p50", 0.50), ("p95", 0.95), ("p99", 0.99)):
        target = q * total
        acc = 0
        for v, c in samples:
            acc += c
            if acc >= target:
                res[name] = v
                break
    res["max"] = samples[-1][0]
    return {k: round(v * 1000, 2) for k, v in res.items()}


def _report(kind, result, as_json):
    if as_json:
        emit_json(result)
        return
    t = Table(box=None, show_header=False)
    t.add_column(style="bold")
    t.add_column(justify="right")
    t.add_row("records", f"{result['records']:,}")
    t.add_row("records/s", f"{result['records_per_s']:,.0f}")
    t.add_row("MB/s", f"{result['mb_per_s']:.2f}")
    t.add_row("elapsed s", f"{result['elapsed_s']:.2f}")
    lat = result["latency_ms"]
    t.add_row(f"{result['latency_kind']} latency ms avg/p50/p95/p99/max",
              f"{lat['avg']:.1f} / {lat['p50']:.1f} / {lat['p95']:.1f} / {lat['p99']:.1f} / {lat['max']:.1f}")
    if result.get("failures"):
        t.add_row("failures", str(result["failures"]))
    out.print(t)


@click.group("perf")
def perf():
    """Throughput and latency tests (like kafka-producer-perf-test / kafka-consumer-perf-test)."""


@perf.command("produce")
@topic_argument(shell_complete=topic_names, short=False)
@bootstrap_option
@click.option("--num-records", "-n", type=click.IntRange(min=1), default=100000, show_default=True,
              help="Records to send.")
@click.option("--record-size", "-s", type=click.IntRange(min=0), default=100, show_default=True,
              help="Value size in bytes (random, incompressible-ish payload reused for every record).")
@click.option("--throughput", "-t", type=int, default=-1, show_default=True,
              help="Cap on records/s; -1 for no cap.")
@producer_options
@click.option("--api", type=click.Choice(["bulk", "send"]), default="bulk", show_default=True,
              help="bulk: Producer.send_many() in chunks of 1000 values; send: one Producer.send() call "
                   "per record (like Kafka's perf tool).")
@properties_options
@json_option
def perf_produce(topic, bootstrap, num_records, record_size, throughput, acks, compression, batch_size,
                 linger_ms, api, properties, as_json):
    """Send --num-records records of --record-size bytes to TOPIC as fast as allowed.

    Reports records/s, MB/s (of values) and latency from a record's send to its
    acknowledgement (avg/p50/p95/p99/max, measured per batch and weighted by
    its records). Exit 1 if any record failed.
    """
    from pylog.core.client import Producer

    props = client_props(bootstrap, properties, PRODUCER_CONFIGS, **{
        "acks": acks, "compression.type": compression, "batch.size": batch_size, "linger.ms": linger_ms})
    payload = os.urandom(record_size)
    chunk = 1000 if throughput <= 0 else max(1, min(1000, throughput // 100))
    producer = Producer(props)
    batches = []
    seen = set()
    try:
        producer.partitions_for(topic)
        start = time.monotonic()
        sent = 0
        while sent < num_records:
            n = min(chunk, num_records - sent)
            if api == "bulk":
                new = producer.send_many(topic, [payload] * n)
            else:
                send = producer.send
                new = [send(topic, payload).batch for _ in range(n)]
            for b in new:
                if b is not None and id(b) not in seen:
                    seen.add(id(b))
                    batches.append(b)
            sent += n
            if throughput > 0:
                ahead = sent / throughput - (time.monotonic() - start)
                if ahead > 0:
                    time.sleep(ahead)
        producer.flush()
        elapsed = time.monotonic() - start
    finally:
        producer.close()
    failed = sum(b.count for b in batches if b.error is not None)
    ok = sum(b.count for b in batches if b.error is None)
    lat = percentiles([(b.done_at - b.created, b.count) for b in batches if b.error is None])
    result = {
        "topic": topic, "api": api, "records": ok, "failures": failed, "record_size": record_size,
        "elapsed_s": round(elapsed, 3), "records_per_s": round(ok / elapsed, 1),
        "mb_per_s": round(ok * record_size / elapsed / 1048576, 3), "latency_kind": "send-to-ack",
        "latency_ms": lat,
    }
    _report("produce", result, as_json)
    if failed:
        first = next(b.error for b in batches if b.error is not None)
        raise DataError(f"{failed} records failed: {first}")


@perf.command("consume")
@topic_argument(shell_complete=topic_names, short=False)
@bootstrap_option
@click.option("--messages", "-n", type=click.IntRange(min=1), default=100000, show_default=True,
              help="Records to consume.")
@click.option("--timeout-ms", type=click.IntRange(min=0), default=10000, show_default=True,
              help="Stop when no record arrives for this long.")
@click.option("--from-latest", is_flag=True, help="Start at the end instead of the beginning.")
@properties_options
@json_option
def perf_consume(topic, bootstrap, messages, timeout_ms, from_latest, properties, as_json):
    """Consume --messages records from TOPIC (all partitions, from the beginning).

    Reports records/s, MB/s (keys + values) and poll latency (time each poll()
    call took to return records).
    """
    from pylog.core.client import Consumer, TopicPartition

    props = client_props(bootstrap, properties, CONSUMER_CONFIGS, **{
        "auto.offset.reset": "latest" if from_latest else "earliest", "enable.auto.commit": "false"})
    consumer = Consumer(props)
    count = 0
    nbytes = 0
    polls = []
    try:
        parts = consumer.partitions_for(topic)
        consumer.assign([TopicPartition(topic, p) for p in parts])
        start = time.monotonic()
        last = start
        while count < messages:
            t0 = time.monotonic()
            recs = consumer.poll(100)
            t1 = time.monotonic()
            if recs:
                last = t1
                n = 0
                for rs in recs.values():
                    n += len(rs)
                    # key + value bytes, summed at C speed (None and b"" count 0)
                    nbytes += sum(map(len, filter(None, map(_VALUE, rs))))
                    nbytes += sum(map(len, filter(None, map(_KEY, rs))))
                count += n
                polls.append((t1 - t0, n))
            elif (t1 - last) * 1000 >= timeout_ms:
                break
        elapsed = max(1e-9, last - start)
    finally:
        consumer.close()
    result = {
        "topic": topic, "records": count, "bytes": nbytes, "elapsed_s": round(elapsed, 3),
        "records_per_s": round(count / elapsed, 1), "mb_per_s": round(nbytes / elapsed / 1048576, 3),
        "latency_kind": "poll", "latency_ms": percentiles(polls),
    }
    _report("consume", result, as_json)
    if count < messages:
        err.print(f"only {count} of {messages} records arrived within --timeout-ms", style="yellow")
