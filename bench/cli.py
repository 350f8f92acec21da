"""kcat against `pylog produce` / `pylog consume`: same broker, same data, one run.

    python -m bench cli [--records N] [--value-size B] [--partitions 1,6] [--rounds R]
                        [--broker pylog|HOST:PORT] [--only produce|consume] [--no-kafka-batch]
                        [--consume-format FORMAT]

Writes three input files of N lines (`KEY:VALUE` text, values only, JSON lines
with the same keys and values), then for each partition count: kcat and pylog
produce each file to topics of their own (kcat has no JSON input: its anchor for
JSON is the same records as `KEY:VALUE` text), and both consume the topic kcat
filled, with a format string (`%k %s\\n`, or --consume-format's, e.g. `%k:%s\\n`) and as JSON (kcat -J, pylog --json).
pylog produce from a file batches like kcat by default (librdkafka's batch.size,
1,000,000 bytes); it also runs with Kafka's 16,384 (--no-kafka-batch skips that). Each command runs as a user runs it (a fresh process, default settings, output
read and counted); the wall time of the whole process is kept, best of --rounds.
The ratio is kcat's time / pylog's: 1.0 means as fast as kcat, 0.5 half as fast.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from bench.client import start_broker, stop_broker

PYLOG = [sys.executable, "-m", "pylog.cli"]


def write_inputs(workdir: str, n: int, value_size: int) -> dict:
    filler = b"x" * max(1, value_size - 8)
    keys = [b"key-%07d" % i for i in range(n)]
    values = [b"%07d-" % i + filler for i in range(n)]
    paths = {k: os.path.join(workdir, f"{k}.in") for k in ("keyed", "values", "json")}
    with open(paths["keyed"], "wb") as f:
        f.write(b"".join(k + b":" + v + b"\n" for k, v in zip(keys, values)))
    with open(paths["values"], "wb") as f:
        f.write(b"".join(v + b"\n" for v in values))
    with open(paths["json"], "wb") as f:
        f.write(b"".join(b'{"key":"%s","value":"%s"}\n' % (k, v) for k, v in zip(keys, values)))
    return paths


def timed(cmd, stdin_path=None) -> tuple[float, int, str]:
    """Wall time of the process, newlines it wrote on stdout, the tail of its stderr."""
    stdin = open(stdin_path, "rb") if stdin_path else subprocess.DEVNULL
    t = time.monotonic()
    with tempfile.TemporaryFile() as errf:
        p = subprocess.Popen(cmd, stdin=stdin, stdout=subprocess.PIPE, stderr=errf)
        lines = 0
        while True:
            chunk = p.stdout.read(1 << 20)
            if not chunk:
                break
            lines += chunk.count(b"\n")
        rc = p.wait()
        elapsed = time.monotonic() - t
        errf.seek(0)
        err = errf.read().decode("utf-8", "replace")
    if stdin_path:
        stdin.close()
    if rc:
        raise RuntimeError(f"{' '.join(map(str, cmd))} exited {rc}: {err[-1500:]}")
    return elapsed, lines, err


def create_topic(bs, name, partitions):
    subprocess.run([*PYLOG, "topics", "create", name, "-b", bs, "-p", str(partitions)], check=True,
                   capture_output=True)


def topic_size(bs, name) -> int:
    r = subprocess.run([*PYLOG, "topics", "describe", name, "-b", bs, "--json"], check=True, capture_output=True,
                       text=True)
    d = json.loads(r.stdout)
    parts = d.get("partitions") if isinstance(d, dict) else d[0]["partitions"]
    return sum(p["end_offset"] - p["start_offset"] for p in parts)


def main(argv):
    ap = argparse.ArgumentParser(prog="python -m bench cli")
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--value-size", type=int, default=100)
    ap.add_argument("--partitions", default="1,6")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--broker", default="pylog", help="pylog, or HOST:PORT of a running broker")
    ap.add_argument("--only", choices=["produce", "consume"], default=None)
    ap.add_argument("--no-kafka-batch", dest="kafka_batch", action="store_false",
                    help="skip the pylog produce runs with Kafka's batch size (--batch-size 16384)")
    ap.add_argument("--consume-format", default="%k %s\\n",
                    help="the -f format both tools consume with (backslash escapes as both read them)")
    a = ap.parse_args(argv)
    kcat = shutil.which("kcat") or shutil.which("kafkacat")
    if kcat is None:
        raise SystemExit("kcat is not installed")
    workdir = tempfile.mkdtemp(prefix="bench-cli-")
    proc = None
    if a.broker == "pylog":
        proc, bs = start_broker("pylog", workdir)
    else:
        bs = a.broker
    n = a.records
    paths = write_inputs(workdir, n, a.value_size)
    rows = []
    stamp = int(time.time())
    try:
        for parts in [int(x) for x in a.partitions.split(",")]:
            def best(make_cmd, stdin_path=None, expect_lines=None, fresh_topic=None):
                got = []
                for r in range(max(1, a.rounds)):
                    topic = None
                    if fresh_topic is not None:
                        topic = f"{fresh_topic}-{parts}-{stamp}-{r}"
                        create_topic(bs, topic, parts)
                    elapsed, lines, _ = timed(make_cmd(topic), stdin_path)
                    if topic is not None and topic_size(bs, topic) != n:
                        raise RuntimeError(f"{topic}: expected {n} records")
                    if expect_lines is not None and lines != expect_lines:
                        raise RuntimeError(f"{make_cmd(topic)[:3]}: {lines} lines, expected {expect_lines}")
                    got.append(elapsed)
                return min(got)

            def kcat_produce(path, keyed):
                return lambda t: [kcat, "-P", "-b", bs, "-t", t, "-l", *(["-K:"] if keyed else []), path]

            def pylog_produce(path, *opts):
                return lambda t: [*PYLOG, "produce", t, "-b", bs, "-i", path, *opts]

            if a.only in (None, "produce"):
                for wl, name, path, keyed, opts in [
                        ("keyed", "produce `KEY:VALUE` (-K:)", paths["keyed"], True, ["-K:"]),
                        ("values", "produce values", paths["values"], False, []),
                        ("json", "produce JSON lines (kcat: same records as -K:)", paths["json"], True,
                         ["--format", "json"])]:
                    k = best(kcat_produce(paths["keyed"] if keyed else path, keyed), fresh_topic=f"kcat-{wl}")
                    p = best(pylog_produce(path, *opts), fresh_topic=f"pylog-{wl}")
                    rows.append((name, parts, k, p))
                    if a.kafka_batch:
                        # pylog's default from a file is kcat's batch.size (1,000,000 bytes); Kafka's is 16,384
                        p = best(pylog_produce(path, *opts, "--batch-size", "16384"), fresh_topic=f"pylog-{wl}-b")
                        rows.append((name + ", pylog --batch-size 16384", parts, k, p))
            if a.only in (None, "consume"):
                src = f"src-{parts}-{stamp}"
                create_topic(bs, src, parts)
                timed(kcat_produce(paths["keyed"], True)(src))
                fmt = a.consume_format
                k = best(lambda _: [kcat, "-C", "-b", bs, "-t", src, "-o", "beginning", "-e", "-q", "-f", fmt],
                         expect_lines=n)
                p = best(lambda _: [*PYLOG, "consume", src, "-b", bs, "--from-beginning", "-e", "-f", fmt],
                         expect_lines=n)
                rows.append((f"consume `-f '{fmt}'`", parts, k, p))
                k = best(lambda _: [kcat, "-C", "-b", bs, "-t", src, "-o", "beginning", "-e", "-q", "-J"],
                         expect_lines=n)
                p = best(lambda _: [*PYLOG, "consume", src, "-b", bs, "--from-beginning", "-e", "--json"],
                         expect_lines=n)
                rows.append(("consume JSON (kcat -J, pylog --json)", parts, k, p))
    finally:
        stop_broker(proc)
        shutil.rmtree(workdir, ignore_errors=True)
    out = [f"broker: {a.broker}, {n:,} records, values of {a.value_size} B (keys 11 B), default settings "
           f"of each tool, wall time of the whole command, best of {a.rounds}",
           "", "| workload | partitions | kcat s | pylog s | pylog records/s | ratio (kcat/pylog) |",
           "|---|---:|---:|---:|---:|---:|"]
    for name, parts, k, p in rows:
        out.append(f"| {name} | {parts} | {k:.2f} | {p:.2f} | {n / p:,.0f} | {k / p:.2f}x |")
    print("\n".join(out))
    return 0
