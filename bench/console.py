"""The web console's answer time per page, on big data: a topic of 1,000,000 records and a group
of 10,000 partitions, against `pylog broker start`.

    python -m bench console [--records N] [--partitions P] [--rounds R] [--no-browser]

The broker gets a topic `big` (1 partition, N records of 100 B, produced in bulk), a topic `wide`
of P partitions with one record in each, a group `wide-group` with committed offsets on all P
partitions, a registry subject with two versions, and an open transaction. A console
(pylog.console, in this process, writes allowed) reads it. Each page's JSON answer is timed over
R rounds (median and worst, seconds, over loopback HTTP); then, unless --no-browser, headless
Chromium opens the heaviest pages and the time from navigation to the drawn page is taken (the
page sets data-ready once its tables are in the DOM).
"""
from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
import urllib.request
from pathlib import Path

from bench.kafka import Pylog

AVRO = {"type": "record", "name": "Row", "fields": [{"name": "id", "type": "int"}]}


def _fill(bootstrap: str, records: int, partitions: int, registry: str) -> dict:
    from pylog.core.client import Producer, TopicPartition
    from pylog.core.client.admin import Admin
    from pylog.core.client.group_admin import GroupAdmin
    from pylog.core.client.schema_registry import RegistryClient

    props = {"bootstrap.servers": bootstrap}
    took = {}
    with Admin({**props, "request.timeout.ms": "900000"}) as a:
        a.create_topic("big", 1)
        t0 = time.perf_counter()
        a.create_topic("wide", partitions, timeout_ms=900000)
        took["create wide"] = time.perf_counter() - t0
    value = b"v" * 100
    t0 = time.perf_counter()
    with Producer({**props, "linger.ms": "20", "batch.size": "262144"}) as p:
        chunk = [value] * 10000
        for i in range(records // len(chunk)):
            if i == records // len(chunk) // 2:
                p.flush(300)
                took["mid_ts"] = int(time.time() * 1000)
            p.send_many("big", chunk, partition=0)
        p.send_many("wide", [b"w"] * partitions, partitions=list(range(partitions)))
        p.flush(300)
    took["produce"] = time.perf_counter() - t0
    with GroupAdmin({**props, "request.timeout.ms": "300000"}) as ga:
        ga.alter_offsets("wide-group", {TopicPartition("wide", p): 0 for p in range(partitions)})
    reg = RegistryClient(registry)
    reg.register("rows-value", json.dumps(AVRO))
    reg.register("rows-value", json.dumps({**AVRO, "fields": AVRO["fields"] + [
        {"name": "tag", "type": "string", "default": ""}]}))
    tx = Producer({**props, "transactional.id": "bench-tx"})
    tx.init_transactions()
    tx.begin_transaction()
    tx.send("big", b"open", partition=0)
    tx.flush(30)
    took["tx"] = tx
    return took


def _get(url: str) -> tuple[float, int]:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=120) as r:  # noqa: S310 - the local console
        body = r.read()
    return time.perf_counter() - t0, len(body)


def pages(records: int, partitions: int, mid_ts: int) -> list[tuple[str, str]]:
    mid = records // 2
    return [
        ("cluster", "/api/overview"),
        ("topics", "/api/topics"),
        ("topic big (1 partition)", "/api/topics/big"),
        (f"topic wide ({partitions:,} partitions)", "/api/topics/wide"),
        ("messages big from offset 0", "/api/topics/big/messages?start=offset&offset=0&limit=50"),
        (f"messages big from offset {mid:,}", f"/api/topics/big/messages?start=offset&offset={mid}&limit=50"),
        ("messages big, the end", "/api/topics/big/messages?start=end&limit=50"),
        ("messages big, from a time mid-way", f"/api/topics/big/messages?start=time&timestamp={mid_ts}&limit=50"),
        ("messages big from offset, 500 records hex",
         f"/api/topics/big/messages?start=offset&offset={mid}&limit=500&format=hex"),
        ("groups", "/api/groups"),
        (f"group wide-group ({partitions:,} partitions)", "/api/groups/wide-group"),
        ("transactions (ongoing, hanging)", "/api/transactions"),
        ("ACLs, users, quotas", "/api/security"),
        ("registry subjects", "/api/registry/subjects"),
        ("registry subject, diff", "/api/registry/subjects/rows-value"),
        ("log dir partitions", "/api/logdirs"),
        ("log dir big-0 segments", "/api/logdirs/big-0"),
        ("log dir big-0 first batches", "/api/logdirs/big-0/00000000000000000000.log"),
        (f"verify big-0 ({records:,} records)", "/api/logdirs/verify?name=big-0"),
    ]


def _browser(url: str, routes: list[tuple[str, str, str]], rounds: int) -> list[tuple[str, float, float]]:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    from support.browser import Browser

    br = Browser()
    br.base = url
    out = []
    try:
        br.open("", "overview")
        for label, route, page in routes:
            walls, renders = [], []
            for _ in range(rounds):
                br.open("", "overview")
                walls.append(br.open(route, page, timeout=120))
                br.wait(lambda: br.driver.execute_script("return window.lastPaintMs") is not None, 60, "a paint")
                renders.append(br.driver.execute_script("return window.lastPaintMs") / 1000)
            out.append((label, statistics.median(walls), statistics.median(renders)))
    finally:
        br.close()
    return out


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench console")
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--partitions", type=int, default=10_000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-browser", action="store_true")
    args = ap.parse_args(argv)
    from pylog.console.service import ConsoleService

    work = Path(tempfile.mkdtemp(prefix="bench-console-"))
    from pylog.registry.service import SchemaRegistryService

    broker = Pylog(work)
    console = reg = None
    try:
        print(f"broker started in {broker.start():.1f}s")
        reg = SchemaRegistryService({"bootstrap.servers": broker.bootstrap}, ["http://127.0.0.1:0"],
                                    replication_factor=1)
        reg.start()
        registry = reg.urls[0]
        took = _fill(broker.bootstrap, args.records, args.partitions, registry)
        print(f"wide ({args.partitions:,} partitions) created in {took['create wide']:.1f}s; "
              f"{args.records:,} records produced in {took['produce']:.1f}s")
        console = ConsoleService({"bootstrap.servers": broker.bootstrap}, "127.0.0.1", 0, registry_url=registry,
                                 log_dirs=[broker.data_dir], live_log_dirs=True, allow_writes=True)
        console.start()
        print(f"\n{'page (JSON answer)':48} {'median s':>9} {'worst s':>9} {'bytes':>10}")
        for label, path in pages(args.records, args.partitions, took["mid_ts"]):
            times, size = [], 0
            for _ in range(args.rounds):
                t, size = _get(console.url + path)
                times.append(t)
            print(f"{label:48} {statistics.median(times):9.3f} {max(times):9.3f} {size:10,}")
        if not args.no_browser and shutil.which("chromium") and shutil.which("chromedriver"):
            routes = [(f"group wide-group ({args.partitions:,} partitions)", "group/wide-group", "group"),
                      (f"topic wide ({args.partitions:,} partitions)", "topic/wide", "topic"),
                      (f"messages big from offset {args.records // 2:,}",
                       f"messages/big?start=offset&offset={args.records // 2}&limit=50", "messages"),
                      ("topics", "topics", "topics"), ("log dir partitions", "logdir", "logdir")]
            print(f"\n{'page in Chromium (median)':48} {'in page: fetch+DOM+paint s':>27} {'with WebDriver s':>17}")
            for label, wall, render in _browser(console.url, routes, args.rounds):
                print(f"{label:48} {render:27.3f} {wall:17.3f}")
        took["tx"].abort_transaction()
        took["tx"].close()
    finally:
        if console is not None:
            console.stop()
        if reg is not None:
            reg.stop()
        broker.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0

