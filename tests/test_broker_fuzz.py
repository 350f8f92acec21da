"""Fuzz a running broker with random and mutated frames for every API.

Afterwards the broker must still serve a normal produce and fetch, and the
data written before the fuzzing must be unchanged byte for byte (segment files
and fetched bytes). Templates never name the precious topic, and topic
creation templates are validate_only, so a mutation cannot create thousands of
partitions or delete the data under test by accident.
"""
from __future__ import annotations

import re
import socket
import struct
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.broker_fixtures import BrokerProcess, build_batch, call, connect
from support.examples import examples
from support.mutations import damage
from pylog.core.protocol import SCHEMAS, encode_request

PRECIOUS = "precious"
SCRATCH = "zz-scratch"
ZERO = uuid.UUID(int=0)


def _templates():
    batch = bytes(build_batch([(b"key", b"value", [("h", b"v")]), (None, b"second", [])]))
    bodies = {
        0: {"acks": 1, "timeout_ms": 1000, "topic_data": [
            {"name": SCRATCH, "partition_data": [{"index": 0, "records": batch}]}]},
        1: {"max_wait_ms": 50, "min_bytes": 1, "max_bytes": 65536, "topics": [
            {"topic": PRECIOUS, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 65536}]}]},
        2: {"replica_id": -1, "topics": [{"name": PRECIOUS, "partitions": [{"partition_index": 0, "timestamp": -1}]}]},
        3: {"topics": [{"name": SCRATCH}], "allow_auto_topic_creation": True},
        18: {"client_software_name": "fuzz", "client_software_version": "1"},
        19: {"topics": [{"name": "zz-new", "num_partitions": 2, "replication_factor": 1,
                         "configs": [{"name": "retention.ms", "value": "1000"}]}], "timeout_ms": 1000,
             "validate_only": True},
        20: {"topic_names": ["zz-gone"], "topics": [{"name": "zz-gone", "topic_id": ZERO}], "timeout_ms": 1000},
        21: {"topics": [{"name": SCRATCH, "partitions": [{"partition_index": 0, "offset": 1}]}], "timeout_ms": 1000},
        22: {"transactional_id": None, "transaction_timeout_ms": 1000, "producer_id": -1, "producer_epoch": -1},
        23: {"replica_id": -1, "topics": [{"topic": PRECIOUS, "partitions": [{"partition": 0, "leader_epoch": 0}]}]},
        32: {"resources": [{"resource_type": 2, "resource_name": PRECIOUS, "configuration_keys": None}],
             "include_synonyms": True, "include_documentation": True},
        33: {"resources": [{"resource_type": 2, "resource_name": SCRATCH,
                            "configs": [{"name": "retention.ms", "value": "86400000"}]}], "validate_only": False},
        35: {"topics": None},
        37: {"topics": [{"name": SCRATCH, "count": 2, "assignments": None}], "timeout_ms": 1000,
             "validate_only": True},
        44: {"resources": [{"resource_type": 2, "resource_name": SCRATCH, "configs": [
            {"name": "cleanup.policy", "config_operation": 2, "value": "compact"}]}]},
        60: {"include_cluster_authorized_operations": False},
    }
    frames = []
    for key, schema in sorted(SCHEMAS.items()):
        for v in range(schema.min_version, schema.max_version + 1):
            frames.append(encode_request(key, v, 1000 + key, "fuzz", bodies.get(key, {})))
    return frames


TEMPLATES = _templates()


@st.composite
def mutated(draw):
    frame = damage(draw, bytearray(draw(st.sampled_from(TEMPLATES))[4:]), draw(st.integers(1, 4)),
                   ["flip", "set", "cut", "insert", "dup"], [0x00, 0xFF, 0x7F, 0x80, 0x01], 8, 16)
    return struct.pack(">i", len(frame)) + bytes(frame)


@st.composite
def random_frame(draw):
    api = draw(st.sampled_from(sorted(SCHEMAS)))
    version = draw(st.integers(-2, 20))
    body = draw(st.binary(max_size=200))
    raw = struct.pack(">hhi", api, version, 7) + body
    if draw(st.booleans()):
        return struct.pack(">i", len(raw)) + raw
    return struct.pack(">i", draw(st.integers(-10, 1 << 20))) + raw  # a lying size prefix


@pytest.fixture(scope="module")
def fuzz_broker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("fuzz") / "data").start()
    s = connect(b)
    for name in (PRECIOUS, SCRATCH):
        call(s, 19, 5, {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1}], "timeout_ms": 5000})
    for i, codec in enumerate([0, 1, 2, 3, 4]):
        batch = build_batch([(f"k{i}-{j}".encode(), f"value-{i}-{j}".encode() * 5, [("n", b"%d" % j)])
                             for j in range(20)], codec=codec)
        r = call(s, 0, 9, {"acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": PRECIOUS, "partition_data": [{"index": 0, "records": batch}]}]}, correlation_id=10 + i)
        assert r["responses"][0]["partition_responses"][0]["error_code"] == 0
    s.close()
    yield b
    assert b.stop() == 0


def fetch_all(b, topic, offset=0):
    s = connect(b)
    r = call(s, 1, 12, {"max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 24, "topics": [
        {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 24}]}]})
    s.close()
    p = r["responses"][0]["partitions"][0]
    assert p["error_code"] == 0
    return bytes(p["records"]), p["high_watermark"]


def segment_bytes(b, topic):
    d = b.log_dir / f"{topic}-0"
    return {f.name: f.read_bytes() for f in sorted(d.glob("*.log"))}


def send_frames(b, frames):
    s = socket.create_connection((b.host, b.port), timeout=2)
    try:
        s.sendall(b"".join(frames))
        s.settimeout(0.02)
        try:
            while s.recv(65536):
                pass
        except (socket.timeout, ConnectionError):
            pass
    except (BrokenPipeError, ConnectionResetError):
        pass  # the broker closed on us mid-send: fine
    finally:
        s.close()


def handler_failures(log: str) -> list[str]:
    """The broker log's ERROR/CRITICAL lines and tracebacks (a handler or codec that raised)."""
    lines = log.splitlines()
    return [line for i, line in enumerate(lines)
            if re.search(r" (ERROR|CRITICAL) ", line) or line.startswith("Traceback")
            or "undecodable request" in line]


def test_fuzz_frames_leave_the_broker_serving_and_data_intact(fuzz_broker):
    b = fuzz_broker
    before_fetch, before_hw = fetch_all(b, PRECIOUS)
    before_files = segment_bytes(b, PRECIOUS)
    assert before_hw == 100 and before_files

    @settings(max_examples=examples(300), deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(st.lists(st.one_of(mutated(), random_frame()), min_size=1, max_size=3))
    def fuzz(frames):
        send_frames(b, frames)

    for frame in TEMPLATES:  # every API and version intact once, so every handler runs
        send_frames(b, [frame])
    fuzz()
    assert b.alive(), b.stderr()
    # bad input is answered or closes its connection; it never reaches a handler as an exception
    failures = handler_failures(b.stderr(tail=None))
    assert not failures, "the broker logged errors while fuzzed:\n" + "\n".join(failures[:5])

    # still serves a normal produce and fetch
    s = connect(b)
    fresh = build_batch([(b"after", b"fuzz", [])])
    r = call(s, 0, 9, {"acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": SCRATCH, "partition_data": [{"index": 0, "records": fresh}]}]})
    produced = r["responses"][0]["partition_responses"][0]
    assert produced["error_code"] == 0
    s.close()
    records, _ = fetch_all(b, SCRATCH, produced["base_offset"])  # DeleteRecords may have moved the start
    assert bytes(fresh[61:]) in records

    # nothing written before changed
    after_fetch, after_hw = fetch_all(b, PRECIOUS)
    assert after_hw == before_hw
    assert after_fetch == before_fetch
    assert segment_bytes(b, PRECIOUS) == before_files
