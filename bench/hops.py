"""`python -m bench hops`: the path of one Produce request from its frame to the segment write.

Counted in process on a broker opened on a temporary log dir (as `bench dispatch` does): the
request goes through the dispatcher; a profile hook records each pylog function called by the
functions on the way (dispatch, the handler, the log's append and write), and the reads of the
batch header the broker makes before storage validates the batch (`unpack_from` called from
broker code). The socket side adds one step (net/connection.py reads the frame and calls the
dispatcher), two in older trees (net/server.py's own `dispatch` passed the frame on).

Options: --compare-with DIR (the same from the source tree DIR, a folder holding pylog/, in a
child process), --version V (Produce version, repeatable; default 9 and 13: v13 names the topic
by id).
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

CHAIN = ("dispatch", "produce", "append_as_leader", "_write")


class _Conn:
    peer = "127.0.0.1:1"
    closed = False
    sasl = None
    listener = None
    principal = "User:ANONYMOUS"
    host = "127.0.0.1"

    def __init__(self):
        self.tasks = set()

    def reserve(self):
        return object()

    def fill(self, slot, parts):
        pass


async def _measure(version: int) -> dict:
    from pylog.core.protocol import encode_request
    from pylog.core.records.batch import build_batch

    b = open_broker_in_process("pylog-bench-hops-")
    b.logs.create_topic("t", 1, None)
    topic = {"name": "t", "partition_data": [{"index": 0, "records": build_batch(
        [(int(time.time() * 1000), None, b"v" * 100)] * 10)}]}
    if version >= 13:
        topic = dict(topic, name="", topic_id=b.logs.topics["t"].topic_id)
    frame = encode_request(0, version, 1, "c", {"transactional_id": None, "acks": 1, "timeout_ms": 1000,
                                                "topic_data": [topic]})
    body = bytearray(bytes(frame[4:]))
    steps, reads, done, depth = [], [0], [], []

    def hook(frame, event, arg):
        if event == "c_call" and not depth and getattr(arg, "__name__", "") in ("pwrite", "write", "writev"):
            chain, f = [], frame  # the frames from dispatch down to the one writing the segment
            while f is not None and f.f_code.co_name != "dispatch":
                chain.append(f"{os.path.basename(f.f_code.co_filename)}:{f.f_code.co_name}")
                f = f.f_back
            if f is not None:
                depth.extend(["dispatch", *reversed(chain)])
        if done:
            return
        caller = frame.f_back
        if event == "call" and caller is not None and caller.f_code.co_name in CHAIN:
            code = frame.f_code
            steps.append(f"{caller.f_code.co_name} -> {os.path.basename(code.co_filename)}:{code.co_name}")
            if code.co_name == "append" and code.co_filename.endswith("segment.py"):
                done.append(True)
        elif event == "c_call" and getattr(arg, "__name__", "") == "unpack_from" \
                and "broker" in frame.f_code.co_filename:
            reads[0] += 1

    sys.setprofile(hook)
    try:
        dispatch_of(b)(_Conn(), body)
    finally:
        sys.setprofile(None)
        for c in getattr(b, "coordinators", None) or ():
            c.stop()
        b.logs.shutdown()
    return {"steps": steps, "header_reads": reads[0], "stack": depth, "net": _net_steps()}


def _net_steps() -> int:
    """The steps before dispatch: the connection reads the frame, and in older trees the
    server's own `dispatch` method passed it on (now the connection calls the dispatcher)."""
    try:
        from pylog.broker.net.server import Server
    except ModuleNotFoundError:
        try:
            from pylog.broker.server import Server
        except ModuleNotFoundError:
            return 2
    return 2 if callable(getattr(Server, "dispatch", None)) else 1


def child(version: int) -> None:
    import logging

    logging.getLogger("pylog").setLevel(logging.WARNING)
    print(json.dumps(asyncio.run(_measure(version))))


def _run(source: str | None, version: int) -> dict:
    env = dict(os.environ)
    if source:
        env["PYTHONPATH"] = source
    bench_dir = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    r = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                        "from bench.hops import child; child(int(sys.argv[2]))", bench_dir, str(version)],
                       env=env, capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise RuntimeError(f"hops failed ({source or 'this tree'}): {r.stderr[-800:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench hops")
    ap.add_argument("--compare-with", metavar="DIR")
    ap.add_argument("--version", type=int, action="append")
    a = ap.parse_args(argv)
    trees = {"this tree": None, **({"compare": a.compare_with} if a.compare_with else {})}
    for v in a.version or [9, 13]:
        for name, src in trees.items():
            r = _run(src, v)
            net = r.get("net", 2)
            print(f"Produce v{v}, {name}: {len(r['steps']) + net} steps socket -> disk ({net} in net/ + "
                  f"{len(r['steps'])} from dispatch), {r['header_reads']} reads of a batch header before storage")
            for s in r["steps"]:
                print("    " + s)
            if r.get("stack"):
                print(f"  the stack at the disk write: {len(r['stack']) + net} frames deep ({net} in net/ + "
                      f"{' -> '.join(r['stack'])})")
    return 0
