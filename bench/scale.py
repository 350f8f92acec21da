"""`python -m bench scale`: pylog and Apache Kafka 4.x side by side as the work grows, one run.

    python -m bench scale [--curves partitions,connections,groups,share] [--partitions 10,100,1000]
                          [--connections 10,100,1000] [--groups 1,10,100] [--share-consumers 1,10,100]
                          [--records N] [--group-records N] [--share-records N]
                          [--only pylog|kafka] [--out DIR] [--record]

For each partition count, on a fresh broker of each kind (defaults, loopback, replication 1):
  * create time of one topic with that many partitions (CreateTopics answered),
  * resident memory and open descriptors once created (/proc/PID/status, /proc/PID/fd),
  * produce and consume throughput of --records 100 B records spread over all the partitions
    (librdkafka: produce_batch, then a consumer assigned every partition),
  * clean start (SIGTERM, start again: process start to Metadata answered) and unclean start
    (more records, kill -9, start again), descriptors after each.
For each connection count: that many connections opened to a started broker, each sending one
ApiVersions request (time until every one is answered), then resident memory and descriptors.
For each consumer-group count and share-consumer count: see bench/_scale_groups.py (join, consume
and commit of that many groups; throughput and delivery of that many share consumers in one group).

The default run is bounded (minutes); the big points are flags: `--partitions 10,100,1000,10000
--connections 10,100,1000,5000 --groups 1,10,100,1000 --share-consumers 1,10,100`; --curves picks
the curves to run. Each metric is drawn as an SVG chart (both brokers on one chart)
in --out (default bench/scale-charts/), and the table is printed; --record appends it to
bench/RESULTS.md.
"""
from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import struct
import sys
import tempfile
import time
from pathlib import Path

from bench._scale_groups import groups_point, share_point
from bench.broker import ck_consume, ck_produce
from bench.kafka import KAFKA_VERSION, Kafka, Pylog, create_topic, rss_mb

ROOT = Path(__file__).resolve().parents[1]


def descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def timed_create(bootstrap: str, topic: str, partitions: int) -> float:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    t0 = time.perf_counter()
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replication_factor=1)],
                        operation_timeout=900, request_timeout=900)[topic].result(900)
    return time.perf_counter() - t0


def wait_leaders(bootstrap: str, topic: str, partitions: int, timeout: float = 300) -> None:
    """Until Metadata shows a leader for every partition (Kafka elects them after CreateTopics answers)."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=30).topics.get(topic)
        if md is not None and md.error is None and len(md.partitions) == partitions and \
                all(p.leader >= 0 for p in md.partitions.values()):
            return
        time.sleep(0.2)
    raise RuntimeError(f"{topic}: not every partition has a leader after {timeout}s")


def partitions_point(make, work: Path, n: int, records: int) -> dict:
    b = make(work)
    row = {"start empty (s)": b.start()}
    topic = "scale"
    row["create (s)"] = timed_create(b.bootstrap, topic, n)
    wait_leaders(b.bootstrap, topic, n)
    row["RSS created (MB)"] = rss_mb(b.pid)
    row["descriptors"] = descriptors(b.pid)
    records = max(records - records % 10000, 10000)
    took = ck_produce(b.bootstrap, topic, records, 100, "1", partitions=n)
    row["produce (rec/s)"] = records / took
    row["consume (rec/s)"] = records / ck_consume(b.bootstrap, topic, records, partitions=n)
    row["RSS written (MB)"] = rss_mb(b.pid)
    b.stop()
    row["clean start (s)"] = b.start()
    wait_leaders(b.bootstrap, topic, n)
    row["descriptors after clean start"] = descriptors(b.pid)
    ck_produce(b.bootstrap, topic, 10000, 100, "1", partitions=n)
    b.kill9()
    row["unclean start (s)"] = b.start()
    wait_leaders(b.bootstrap, topic, n)
    row["descriptors after unclean start"] = descriptors(b.pid)
    b.stop()
    shutil.rmtree(work, ignore_errors=True)
    return row


def api_versions_frame(correlation: int) -> bytes:
    body = struct.pack(">hhih", 18, 0, correlation, 5) + b"scale"
    return struct.pack(">i", len(body)) + body


def connections_point(b, n: int) -> dict:
    """n connections, one ApiVersions each; seconds until all are answered, then RSS and descriptors."""
    host, port = b.bootstrap.rsplit(":", 1)
    socks = []
    t0 = time.perf_counter()
    try:
        for i in range(n):
            s = socket.create_connection((host, int(port)), timeout=60)
            s.sendall(api_versions_frame(i))
            socks.append(s)
        for s in socks:
            size = struct.unpack(">i", _recv(s, 4))[0]
            _recv(s, size)
        took = time.perf_counter() - t0
        return {"connect+answer (s)": took, "RSS (MB)": rss_mb(b.pid), "descriptors": descriptors(b.pid)}
    finally:
        for s in socks:
            s.close()


def _recv(s: socket.socket, n: int) -> bytes:
    buf = bytearray()
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return bytes(buf)


# ---- charts -----------------------------------------------------------------------------------

COLOURS = {"pylog": "#1f77b4", "kafka": "#d62728"}
CURVES = {"partitions": "partitions", "connections": "connections", "groups": "consumer groups",
          "share": "share consumers"}
NOT_CHARTED = {"records per group"}  # a setting of the point, in the table only


def svg_chart(title: str, xlabel: str, series: dict[str, list[tuple[float, float]]]) -> str:
    """A log-x line chart of each broker's points, as standalone SVG."""
    import math

    w, h, left, bottom, top, right = 560, 320, 70, 40, 30, 110
    pts = [p for s in series.values() for p in s if p[1] == p[1]]
    if not pts:
        return ""
    xs = [math.log10(max(p[0], 1)) for p in pts]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    y1 = max(p[1] for p in pts) * 1.1 or 1

    def X(v):
        return left + (math.log10(max(v, 1)) - x0) / (x1 - x0) * (w - left - right)

    def Y(v):
        return h - bottom - v / y1 * (h - bottom - top)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" '
           f'font-size="11"><rect width="{w}" height="{h}" fill="white"/>',
           f'<text x="{w / 2 - right / 2}" y="18" text-anchor="middle" font-size="13">{title}</text>',
           f'<line x1="{left}" y1="{h - bottom}" x2="{w - right}" y2="{h - bottom}" stroke="black"/>',
           f'<line x1="{left}" y1="{top}" x2="{left}" y2="{h - bottom}" stroke="black"/>',
           f'<text x="{(left + w - right) / 2}" y="{h - 8}" text-anchor="middle">{xlabel}</text>']
    for i in range(5):
        v = y1 * i / 4
        out.append(f'<text x="{left - 5}" y="{Y(v) + 4}" text-anchor="end">{v:.3g}</text>')
        out.append(f'<line x1="{left}" y1="{Y(v)}" x2="{w - right}" y2="{Y(v)}" stroke="#ddd"/>')
    for x in sorted({p[0] for p in pts}):
        out.append(f'<text x="{X(x)}" y="{h - bottom + 14}" text-anchor="middle">{x:g}</text>')
    for k, (name, s) in enumerate(series.items()):
        c = COLOURS.get(name, "#333")
        s = [p for p in s if p[1] == p[1]]
        if s:
            out.append('<polyline fill="none" stroke="{}" stroke-width="2" points="{}"/>'.format(
                c, " ".join(f"{X(x):.1f},{Y(y):.1f}" for x, y in s)))
            out += [f'<circle cx="{X(x):.1f}" cy="{Y(y):.1f}" r="3" fill="{c}"/>' for x, y in s]
        out.append(f'<text x="{w - right + 10}" y="{top + 16 * k + 10}" fill="{c}">{name}</text>')
    out.append("</svg>")
    return "\n".join(out)


def write_charts(out: Path, results: dict) -> list[Path]:
    """One SVG per (curve, metric) plus index.html showing them all."""
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for curve, xlabel in CURVES.items():
        by_broker = results.get(curve, {})
        metrics = sorted({m for rows in by_broker.values() for row in rows.values() for m in row} - NOT_CHARTED)
        for m in metrics:
            series = {name: [(x, row.get(m, float("nan"))) for x, row in sorted(rows.items())]
                      for name, rows in by_broker.items()}
            svg = svg_chart(f"{m} by {xlabel}", xlabel, series)
            if svg:
                path = out / f"{curve}-{''.join(ch if ch.isalnum() else '-' for ch in m).strip('-')}.svg"
                path.write_text(svg)
                files.append(path)
    (out / "index.html").write_text("<html><body><h1>bench scale: pylog and Apache Kafka</h1>\n" + "\n".join(
        f'<img src="{p.name}">' for p in files) + "\n</body></html>\n")
    return files


def table(results: dict) -> str:
    lines = []
    for curve in CURVES:
        by_broker = {name: rows for name, rows in results.get(curve, {}).items() if rows}
        if not by_broker:
            continue
        metrics = [m for m in dict.fromkeys(m for rows in by_broker.values() for row in rows.values() for m in row)]
        lines.append(f"| {curve} | broker | " + " | ".join(metrics) + " |")
        lines.append("|" + "---|" * (len(metrics) + 2))
        xs = sorted({x for rows in by_broker.values() for x in rows})
        for x in xs:
            for name, rows in by_broker.items():
                row = rows.get(x)
                if row is not None:
                    lines.append(f"| {x} | {name} | " + " | ".join(_fmt(row.get(m)) for m in metrics) + " |")
        lines.append("")
    return "\n".join(lines)


def _fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, int):
        return f"{v:,}"
    return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.3g}"


def _points(text: str) -> list[int]:
    return [int(x) for x in text.split(",") if x]


def _show(curve: str, n: int, name: str, row: dict) -> None:
    print(f"{curve} {n} {name}: " + ", ".join(f"{k} {_fmt(v)}" for k, v in row.items()), flush=True)


def _on_one_broker(results: dict, curve: str, kinds: dict, work: Path, counts: list[int], point,
                   overrides: dict | None = None, warm=None) -> None:
    """The points of a curve measured on one started broker of each kind (after `warm(b)`, unmeasured:
    the first group or share group also creates the broker's internal topic)."""
    for name, make in kinds.items():
        if not counts:
            break
        b = make(work / f"{name}-{curve}", overrides)
        b.start()
        try:
            if warm is not None:
                warm(b)
            for n in counts:
                results[curve][name][n] = row = point(b, n)
                _show(curve, n, name, row)
        finally:
            b.stop()


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench scale")
    ap.add_argument("--curves", default=",".join(CURVES), help="the curves to run, of " + ",".join(CURVES))
    ap.add_argument("--partitions", default="10,100,1000")
    ap.add_argument("--connections", default="10,100,1000")
    ap.add_argument("--groups", default="1,10,100", help="consumer-group counts")
    ap.add_argument("--share-consumers", default="1,10,100", help="share-consumer counts (one share group)")
    ap.add_argument("--records", type=int, default=200_000, help="100 B records produced and consumed per point")
    ap.add_argument("--group-records", type=int, default=200_000,
                    help="records read by all groups together per point (each group reads the topic)")
    ap.add_argument("--share-records", type=int, default=50_000, help="records of the share curve's topic")
    ap.add_argument("--only", choices=("pylog", "kafka"))
    ap.add_argument("--out", default=str(ROOT / "bench" / "scale-charts"))
    ap.add_argument("--record", action="store_true", help="append the table to bench/RESULTS.md")
    args = ap.parse_args(argv)
    curves = [c for c in args.curves.split(",") if c]
    unknown = set(curves) - set(CURVES)
    if unknown:
        ap.error(f"unknown curve {', '.join(sorted(unknown))}; curves: {', '.join(CURVES)}")
    kinds = {"pylog": Pylog, "kafka": Kafka}
    if args.only:
        kinds = {args.only: kinds[args.only]}
    results: dict = {c: {k: {} for k in kinds} for c in CURVES}
    # a SIGTERM (timeout, kill) unwinds like an error: the brokers started are stopped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    work = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    load = [os.getloadavg()[0]]
    try:
        if "partitions" in curves:
            for n in _points(args.partitions):
                for name, make in kinds.items():
                    results["partitions"][name][n] = row = partitions_point(make, work / f"{name}-{n}", n, args.records)
                    _show("partitions", n, name, row)
        if "connections" in curves:
            _on_one_broker(results, "connections", kinds, work, _points(args.connections), connections_point)
        if "groups" in curves:
            # no initial rebalance delay on either broker: the join time is the brokers' work
            _on_one_broker(results, "groups", kinds, work, _points(args.groups),
                           lambda b, n: groups_point(b, n, args.group_records),
                           {"group.initial.rebalance.delay.ms": 0}, warm=lambda b: groups_point(b, 1, 1000))
        if "share" in curves:
            _on_one_broker(results, "share", kinds, work, _points(args.share_consumers),
                           lambda b, n: share_point(b, n, args.share_records), warm=lambda b: share_point(b, 1, 1000))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    load.append(os.getloadavg()[0])
    files = write_charts(Path(args.out), results)
    text = table(results)
    print(text)
    print(f"charts: {len(files)} SVG files and index.html in {args.out}; load average {load[0]:.1f} at the "
          f"start, {load[1]:.1f} at the end (2 cores)")
    if args.record:
        cmd = "python -m bench scale " + " ".join(argv)
        with open(ROOT / "bench" / "RESULTS.md", "a") as f:
            f.write(f"\n## Scale: pylog and Apache Kafka {KAFKA_VERSION} as the work grows\n\n"
                    f"`{cmd.strip()}` ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, 2 cores shared "
                    f"with other work, load average {load[0]:.1f} at the start and {load[1]:.1f} at the end: "
                    f"both brokers ran under the same load in this one run, the figures are noisy; charts in "
                    f"bench/scale-charts/).\n\n{text}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
