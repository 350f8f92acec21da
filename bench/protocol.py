"""Micro benchmark of the protocol codec's hot paths (no I/O).

    python -m bench protocol [--seconds S]

Measures, per operation: decode of a Produce v9 request (1 topic x 4
partitions, 16 KB record sets each), encode of a Fetch v12 response (the
same shape, bytes records) and encode_response_parts of it with file-slice
stand-ins, a Metadata v12 response of 20 topics x 4 partitions, and
kafka-python 3.x's codec on the Produce decode for comparison.
"""
from __future__ import annotations

import argparse
import time

from pylog.core.protocol import (
    decode_request,
    decode_request_body,
    encode_request,
    encode_response,
    encode_response_parts,
)


class _Slice:
    def __init__(self, length):
        self.length = length


def _rate(fn, seconds):
    n = 0
    fn()
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        for _ in range(100):
            fn()
        n += 100
        now = time.perf_counter()
        if now >= deadline:
            return n / (now - start)


def main(argv):
    ap = argparse.ArgumentParser(prog="python -m bench protocol")
    ap.add_argument("--seconds", type=float, default=1.0)
    args = ap.parse_args(argv)
    recs = b"\x00" * 16384
    produce = {"acks": -1, "timeout_ms": 30000, "topic_data": [
        {"name": "bench", "partition_data": [{"index": i, "records": recs} for i in range(4)]}]}
    frame = encode_request(0, 9, 1, "bench", produce)[4:]

    def fetch_body(r):
        return {"responses": [{"topic": "bench", "partitions": [
            {"partition_index": i, "high_watermark": 1000, "last_stable_offset": 1000, "log_start_offset": 0,
             "aborted_transactions": None, "records": r} for i in range(4)]}]}

    fetch_bytes = fetch_body(recs)
    fetch_slices = fetch_body(_Slice(16384))
    metadata = {"brokers": [{"node_id": 1, "host": "127.0.0.1", "port": 9092}], "cluster_id": "c", "controller_id": 1,
                "topics": [{"name": f"topic-{t}", "partitions": [
                    {"partition_index": p, "leader_id": 1, "leader_epoch": 0, "replica_nodes": [1], "isr_nodes": [1]}
                    for p in range(4)]} for t in range(20)]}
    rows = [
        ("decode Produce v9 request (4 x 16 KB)", lambda: decode_request(frame)),
        ("encode Fetch v12 response, bytes records", lambda: encode_response(1, 12, 1, fetch_bytes)),
        ("encode_response_parts Fetch v12, slices", lambda: encode_response_parts(1, 12, 1, fetch_slices)),
        ("encode Metadata v12 response (20 x 4)", lambda: encode_response(3, 12, 1, metadata)),
    ]
    try:
        from kafka.protocol.producer import ProduceRequest

        body = memoryview(frame[frame.index(b"bench") + 5 + 1:])  # after header v2 (client id + tags)
        rows.append(("pylog: decode Produce v9 body only", lambda: decode_request_body(0, 9, body)))
        rows.append(("kafka-python: decode Produce v9 body only", lambda: ProduceRequest.decode(body, version=9)))
    except ImportError:
        pass
    print(f"{'operation':48} {'ops/s':>12} {'us/op':>8}")
    for name, fn in rows:
        r = _rate(fn, args.seconds)
        print(f"{name:48} {r:12,.0f} {1e6 / r:8.2f}")
    return 0
