"""`python -m bench dispatch`: the broker's per-request cost, in process, by CPU time.

Each request frame goes through the dispatcher (decode, handler, encode) on
a broker opened on a temporary log dir, with a stub connection that drops the
answer; the figure is CPU time (`time.process_time`) per request, the least of
the repeats, which a busy machine disturbs far less than wall-clock throughput.

Options: --runs N (alternating runs; the least is kept), --repeats N,
--compare-with DIR (the same in a child process running pylog from the source
tree DIR, a folder holding pylog/: an A/B against, e.g., the commit before a change),
--faults FILE (also this tree with the fault rules in FILE loaded: what rules that
never match cost).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import time

from bench._util import dispatch_of, open_broker_in_process
import timeit


class _Conn:
    peer = "127.0.0.1:1"
    closed = False
    sasl = None  # a PLAINTEXT listener's connection
    listener = None

    def __init__(self):
        self.tasks = set()

    def reserve(self):
        return object()

    def fill(self, slot, parts):
        pass

    def close(self, reason):
        raise RuntimeError(f"the broker closed the connection: {reason}")


def _frames() -> dict:
    from pylog.core.protocol import encode_request
    from pylog.core.records import BatchBuilder

    b = BatchBuilder()
    for _ in range(10):
        b.append(1, None, b"x" * 100)
    batch = bytes(b.build())
    return {
        "ApiVersions v3": encode_request(18, 3, 1, "c", {"client_software_name": "b", "client_software_version": "1"}),
        "Metadata v12, 1 topic": encode_request(3, 12, 1, "c", {"topics": [{"name": "t"}],
                                                                "allow_auto_topic_creation": False}),
        "Produce v9 acks=1, 10 x 100 B": encode_request(0, 9, 1, "c", {"acks": 1, "timeout_ms": 1000, "topic_data": [
            {"name": "t", "partition_data": [{"index": 0, "records": batch}]}]}),
        "Fetch v12, 1 partition, last batch": None,  # built once the offset is known
        "ListOffsets v7": encode_request(2, 7, 1, "c", {"replica_id": -1, "topics": [
            {"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1}]}]}),
        "Heartbeat v4, unknown group": encode_request(12, 4, 1, "c", {"group_id": "g", "generation_id": 1,
                                                                      "member_id": "m"}),
    }


async def _measure(repeats: int, faults: str | None = None) -> dict:
    from pylog.core.protocol import encode_request

    b = open_broker_in_process("pylog-bench-dispatch-")
    if faults:
        from pylog.broker.ops.request_faults import load_rules_file

        for rule in load_rules_file(faults):
            b.faults.add(rule)
    b.logs.create_topic("t", 1, None)
    conn = _Conn()
    dispatch = dispatch_of(b)
    out = {}
    try:
        for name, frame in _frames().items():
            if frame is None:
                end = b.logs.get_log("t", 0).log_end_offset
                frame = encode_request(1, 12, 1, "c", {
                    "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "topics": [
                        {"topic": "t", "partitions": [{"partition": 0, "fetch_offset": max(0, end - 10),
                                                       "partition_max_bytes": 1 << 20}]}]})
            body = bytes(frame[4:])

            def one():
                dispatch(conn, bytearray(body))

            one()
            n = 200
            out[name] = min(timeit.repeat(one, number=n, repeat=repeats, timer=time.process_time)) / n * 1e6
    finally:
        for c in getattr(b, "coordinators", None) or [getattr(b, "group_coordinator", None)]:
            if c is not None:
                c.stop()
        b.logs.shutdown()
    return out


def _child(source: str | None, repeats: int, faults: str | None = None) -> dict:
    env = dict(os.environ)
    if source:
        env["PYTHONPATH"] = source
    bench_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                        "from bench.dispatch import child; child(int(sys.argv[2]), sys.argv[3] or None)", bench_dir,
                        str(repeats), faults or ""],
                       env=env, capture_output=True, text=True, timeout=600)
    if r.returncode:
        raise RuntimeError(f"dispatch benchmark failed ({source or 'this tree'}): {r.stderr[-800:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def child(repeats: int, faults: str | None = None) -> None:
    """Run in a child process (so each tree imports its own pylog); prints the figures as JSON."""
    import logging

    logging.getLogger("pylog").setLevel(logging.WARNING)  # the rules' "added" lines
    print(json.dumps(asyncio.run(_measure(repeats, faults) if faults else _measure(repeats))))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench dispatch")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=40)
    ap.add_argument("--compare-with", metavar="DIR", help="also measure pylog from the source tree DIR")
    ap.add_argument("--faults", metavar="FILE", help="also measure this tree with these fault rules loaded")
    args = ap.parse_args(argv)
    trees = {"this tree": (None, None)}
    if args.compare_with:
        trees["compare"] = (args.compare_with, None)
    if args.faults:
        trees["this tree, rules loaded"] = (None, os.path.abspath(args.faults))
    best: dict[str, dict[str, float]] = {t: {} for t in trees}
    for _ in range(args.runs):
        for t, (src, faults) in trees.items():
            for k, v in _child(src, args.repeats, faults).items():
                best[t][k] = min(v, best[t].get(k, v))
    names = list(trees)
    print(f"CPU us per request, least of {args.runs} alternating runs x {args.repeats} repeats "
          f"(1-minute load average {os.getloadavg()[0]:.1f})")
    print("| request | " + " | ".join(names) + " |")
    print("|---" + "|---:" * len(names) + "|")
    for k in best["this tree"]:
        print(f"| {k} | " + " | ".join(f"{best[t].get(k, float('nan')):.2f}" for t in names) + " |")
    return 0
