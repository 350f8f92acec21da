"""Bad input closes only the offending connection; corrupt batches append nothing."""
from __future__ import annotations

import struct

from support.broker_fixtures import build_batch, call, connect, is_closed, recv_frame, wait_for
from pylog.core.protocol import encode_request


def produce_body(topic, batch, acks=-1):
    return {"acks": acks, "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}


def high_watermark(s, topic):
    r = call(s, 2, 7, {"replica_id": -1, "topics": [{"name": topic, "partitions": [
        {"partition_index": 0, "timestamp": -1}]}]}, correlation_id=77)
    return r["topics"][0]["partitions"][0]["offset"]


def healthy(broker) -> bool:
    s = connect(broker)
    ok = call(s, 18, 3, {}, correlation_id=5)["error_code"] == 0
    s.close()
    return ok


def test_oversize_frame_closes_only_that_connection(broker):
    bystander = connect(broker)
    assert call(bystander, 18, 3, {})["error_code"] == 0
    s = connect(broker)
    s.sendall(struct.pack(">i", 200 * 1024 * 1024) + b"\x00" * 64)  # > socket.request.max.bytes (100 MiB)
    assert is_closed(s)
    s = connect(broker)
    s.sendall(struct.pack(">i", -5))
    assert is_closed(s)
    assert call(bystander, 18, 3, {}, correlation_id=2)["error_code"] == 0
    assert wait_for(lambda: "socket.request.max.bytes" in broker.stderr())


def test_unknown_api_key_closes_the_connection(broker):
    s = connect(broker)
    frame = struct.pack(">hhi", 9999, 0, 1) + struct.pack(">h", 1) + b"x"
    s.sendall(struct.pack(">i", len(frame)) + frame)
    assert is_closed(s)
    assert wait_for(lambda: "unknown api key 9999" in broker.stderr())
    assert healthy(broker)


def test_truncated_and_garbage_bodies_close_the_connection(broker):
    # Metadata v1 that claims 5 topics and carries none
    s = connect(broker)
    frame = struct.pack(">hhi", 3, 1, 1) + struct.pack(">h", 1) + b"x" + struct.pack(">i", 5)
    s.sendall(struct.pack(">i", len(frame)) + frame)
    assert is_closed(s)
    # a frame shorter than a request header
    s = connect(broker)
    s.sendall(struct.pack(">i", 3) + b"abc")
    assert is_closed(s)
    # a valid produce request cut short (the size prefix matches the shorter frame)
    full = encode_request(0, 9, 1, "t", produce_body("bad-trunc", build_batch([(b"k", b"v", [])])))
    cut = full[4:-20]
    s = connect(broker)
    s.sendall(struct.pack(">i", len(cut)) + cut)
    assert is_closed(s)
    assert healthy(broker)


def test_corrupt_batch_gets_corrupt_message_and_nothing_is_appended(broker):
    s = connect(broker)
    call(s, 3, 9, {"topics": [{"name": "bad-crc"}]}, correlation_id=50)  # auto-creates
    good = build_batch([(b"k", b"value", [])])
    r = call(s, 0, 9, produce_body("bad-crc", good))
    assert r["responses"][0]["partition_responses"][0]["error_code"] == 0
    s2 = connect(broker)
    before = high_watermark(s2, "bad-crc")
    assert before == 1
    corrupt = build_batch([(b"k", b"value-that-will-be-damaged", [])])
    corrupt[-3] ^= 0xFF  # inside the records: the CRC no longer matches
    r = call(s, 0, 9, produce_body("bad-crc", corrupt), correlation_id=2)
    p = r["responses"][0]["partition_responses"][0]
    assert p["error_code"] == 2  # CORRUPT_MESSAGE
    # two batches in one partition's record set: Kafka refuses (v3+ allow exactly one)
    r = call(s, 0, 9, produce_body("bad-crc", good + good), correlation_id=3)
    assert r["responses"][0]["partition_responses"][0]["error_code"] == 87  # INVALID_RECORD
    # old message format
    legacy = bytearray(good)
    legacy[16] = 1
    r = call(s, 0, 9, produce_body("bad-crc", legacy), correlation_id=4)
    assert r["responses"][0]["partition_responses"][0]["error_code"] == 87  # INVALID_RECORD, as Kafka 4 answers
    assert high_watermark(s2, "bad-crc") == before
    fetched = call(s2, 1, 12, {"max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "topics": [
        {"topic": "bad-crc", "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]},
        correlation_id=9)
    records = bytes(fetched["responses"][0]["partitions"][0]["records"])
    assert len(records) == len(good) and records[61:] == bytes(good[61:])


def test_unknown_topic_and_bad_acks_are_per_partition_errors(broker):
    s = connect(broker)
    r = call(s, 0, 9, produce_body("no-such-topic-here", build_batch([(None, b"v", [])])))
    assert r["responses"][0]["partition_responses"][0]["error_code"] == 3
    r = call(s, 0, 9, produce_body("no-such-topic-here", build_batch([(None, b"v", [])]), acks=2), correlation_id=2)
    assert r["responses"][0]["partition_responses"][0]["error_code"] == 21  # INVALID_REQUIRED_ACKS


def test_acks0_error_closes_the_connection(broker):
    s = connect(broker)
    call(s, 3, 9, {"topics": [{"name": "acks0-ok"}]})
    s.sendall(encode_request(0, 9, 2, "t", produce_body("acks0-ok", build_batch([(None, b"v", [])]), acks=0)))
    assert call(s, 18, 3, {}, correlation_id=3)["error_code"] == 0  # no response to acks=0; still open
    s.sendall(encode_request(0, 9, 4, "t", produce_body("no-such-topic-acks0", build_batch([(None, b"v", [])]),
                                                        acks=0)))
    assert is_closed(s)
    assert healthy(broker)


def test_pipelined_requests_are_answered_in_order(broker):
    s = connect(broker)
    call(s, 3, 9, {"topics": [{"name": "pipe"}]})
    # a long-polling fetch first, then quick requests: answers still come back in request order
    frames = [encode_request(1, 12, 100, "t", {"max_wait_ms": 300, "min_bytes": 1 << 20, "max_bytes": 1 << 20,
                                               "topics": [{"topic": "pipe", "partitions": [
                                                   {"partition": 0, "fetch_offset": 0,
                                                    "partition_max_bytes": 1 << 20}]}]})]
    frames += [encode_request(18, 3, 101 + i, "t", {}) for i in range(4)]
    s.sendall(b"".join(frames))
    order = [struct.unpack(">i", recv_frame(s)[:4])[0] for _ in range(5)]
    assert order == [100, 101, 102, 103, 104]


def test_fetches_do_not_leak_file_descriptors(broker):
    import os

    s = connect(broker)
    call(s, 3, 9, {"topics": [{"name": "fd-leak"}]})
    call(s, 0, 9, produce_body("fd-leak", build_batch([(None, b"x" * 1000, [])] * 50)), correlation_id=2)
    fds = lambda: len(os.listdir(f"/proc/{broker.proc.pid}/fd"))  # noqa: E731
    body = {"max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "topics": [
        {"topic": "fd-leak", "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}
    call(s, 1, 12, body, correlation_id=3)
    before = fds()
    for i in range(200):
        r = call(s, 1, 12, body, correlation_id=10 + i)
        assert len(bytes(r["responses"][0]["partitions"][0]["records"])) > 50_000
    assert fds() <= before
    # a client that disconnects with responses unsent leaks nothing either
    for _ in range(20):
        c = connect(broker)
        c.sendall(b"".join(encode_request(1, 12, j, "t", body) for j in range(5)))
        c.close()
    assert wait_for(lambda: fds() <= before + 1)


def test_requests_sent_as_the_broker_starts_are_answered_in_order(tmp_path):
    """The listener is up before the coordinators' handlers are loaded: a client that connects at
    once gets ApiVersions (the whole table) and Metadata answered, and a request for a coordinator
    (with every one after it) waits for them, in order."""
    import socket
    import subprocess
    import sys
    import time

    from pylog.core.protocol import decode_response

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "pylog.cli", "broker", "start", "--listen", f"127.0.0.1:{port}",
                             "--log-dir", str(tmp_path / "data")], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, "the broker did not listen"
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=30)
                break
            except OSError:
                time.sleep(0.001)
        asked = [(18, 3, {}), (3, 12, {"topics": None}), (16, 4, {"states_filter": []}), (18, 3, {}),
                 (3, 12, {"topics": None})]
        s.sendall(b"".join(encode_request(k, v, i, "t", body) for i, (k, v, body) in enumerate(asked)))
        answers = [decode_response(k, v, recv_frame(s)) for k, v, _ in asked]
        s.close()
        assert [corr for corr, _ in answers] == list(range(len(asked)))
        first, _, groups, again, _ = (body for _, body in answers)
        assert first["error_code"] == 0 and first == again
        assert {a["api_key"] for a in first["api_keys"]} >= {0, 1, 3, 10, 11, 16, 18, 22, 68, 76}
        assert groups["error_code"] == 0 and groups["groups"] == []
    finally:
        proc.terminate()
        assert proc.wait(60) == 0  # a graceful stop
