"""The produce path at Kafka's strictness (LogValidator), against a real broker.

Batches are built with kafka-python's record builder (a peer's encoder), then
damaged and re-CRC'd with kafka-python's CRC-32C, so every refusal below is
a batch whose CRC is valid but whose contents are wrong. Each refusal must
carry Kafka's error code, store nothing, and leave the partition readable.
"""
from __future__ import annotations

import struct
import time

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.util import calc_crc32c

from support.broker_fixtures import call, connect
from pylog.core.errors import ErrorCode
from pylog.core.records import RecordBatch

CRC_AT, ATTRS_AT, COUNT_AT, LAST_DELTA_AT = 17, 21, 57, 23


def peer_batch(values, *, codec=0, keys=None, timestamp=None, headers=()) -> bytearray:
    """A v2 batch from kafka-python's DefaultRecordBatchBuilder."""
    b = DefaultRecordBatchBuilder(magic=2, compression_type=codec, is_transactional=False, producer_id=-1,
                                  producer_epoch=-1, base_sequence=-1, batch_size=1 << 20)
    ts = int(time.time() * 1000) if timestamp is None else timestamp
    for i, v in enumerate(values):
        b.append(i, timestamp=ts, key=None if keys is None else keys[i], value=v, headers=list(headers))
    return bytearray(b.build())


def recrc(buf: bytearray) -> bytearray:
    struct.pack_into(">I", buf, CRC_AT, calc_crc32c(bytes(buf[ATTRS_AT:])))
    return buf


def produce(s, topic, batch, version=9, cid=1):
    r = call(s, 0, version, {"acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": bytes(batch)}]}]}, correlation_id=cid)
    return r["responses"][0]["partition_responses"][0]


def create(s, name, **configs):
    r = call(s, 19, 5, {"topics": [{"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [],
                                    "configs": [{"name": k.replace("_", "."), "value": v} for k, v in configs.items()]}],
                        "timeout_ms": 5000, "validate_only": False}, correlation_id=3)
    assert r["topics"][0]["error_code"] == 0, r


def fetch_all(s, topic) -> bytes:
    r = call(s, 1, 12, {"max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "topics": [
        {"topic": topic, "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]},
        correlation_id=9)
    p = r["responses"][0]["partitions"][0]
    assert p["error_code"] == 0
    return bytes(p["records"] or b"")


@pytest.fixture(scope="module")
def conn(broker):
    s = connect(broker)
    yield s
    s.close()


def refused(s, topic, batch, code):
    """Produce `batch` after one good batch: the refusal has `code`, nothing is stored,
    and the partition still reads back exactly the good batch."""
    good = peer_batch([b"good"])
    first = produce(s, topic, good)
    assert first["error_code"] == 0
    p = produce(s, topic, batch, cid=2)
    assert p["error_code"] == code, p
    stored = fetch_all(s, topic)
    assert len(stored) == len(good)
    assert [r.value for r in RecordBatch(stored).records()] == [b"good"]
    return p


def test_unknown_codec_id_is_unsupported_compression_type(conn):
    create(conn, "v-codec")
    b = peer_batch([b"a", b"b"])
    b[ATTRS_AT + 1] = (b[ATTRS_AT + 1] & ~7) | 5
    refused(conn, "v-codec", recrc(b), ErrorCode.UNSUPPORTED_COMPRESSION_TYPE)


def test_garbage_records_are_invalid_record_with_record_errors(conn):
    create(conn, "v-garbage")
    b = peer_batch([b"x" * 40, b"y" * 40])
    b[61:] = bytes((i * 37 + 11) & 0xFF for i in range(len(b) - 61))
    p = refused(conn, "v-garbage", recrc(b), ErrorCode.INVALID_RECORD)
    assert p["record_errors"] and p["record_errors"][0]["batch_index"] == 0
    assert p["record_errors"][0]["batch_index_error_message"]


def test_first_record_length_past_the_batch_end(conn):
    create(conn, "v-length")
    b = peer_batch([b"value"])
    b[61] = 0x7E  # zig-zag 63: longer than the bytes left in the batch
    p = refused(conn, "v-length", recrc(b), ErrorCode.INVALID_RECORD)
    assert p["record_errors"][0]["batch_index"] == 0


def test_record_count_must_match_the_records_inside(conn):
    create(conn, "v-count")
    b = peer_batch([b"a", b"b"])
    struct.pack_into(">i", b, COUNT_AT, 3)
    struct.pack_into(">i", b, LAST_DELTA_AT, 2)  # consistent header, one record missing
    refused(conn, "v-count", recrc(b), ErrorCode.INVALID_RECORD)


def test_corrupt_compressed_payload_is_corrupt_message(conn):
    create(conn, "v-gzip")
    b = peer_batch([b"compress me " * 20] * 5, codec=DefaultRecordBatchBuilder.CODEC_GZIP)
    b[75:85] = b"\xff" * 10
    refused(conn, "v-gzip", recrc(b), ErrorCode.CORRUPT_MESSAGE)


def test_control_batches_from_clients_are_refused(conn):
    create(conn, "v-control")
    b = peer_batch([b"a"])
    b[ATTRS_AT + 1] |= 0x20
    refused(conn, "v-control", recrc(b), ErrorCode.INVALID_RECORD)


def test_bad_magic_is_invalid_record(conn):
    create(conn, "v-magic")
    b = peer_batch([b"a"])
    b[16] = 1
    refused(conn, "v-magic", recrc(b), ErrorCode.INVALID_RECORD)


def test_base_offset_must_be_zero(conn):
    create(conn, "v-base")
    b = peer_batch([b"a"])
    struct.pack_into(">q", b, 0, 42)
    refused(conn, "v-base", b, ErrorCode.INVALID_RECORD)


def test_timestamps_out_of_range_are_invalid_timestamp(conn):
    create(conn, "v-time")
    b = peer_batch([b"a"], timestamp=int(time.time() * 1000) + 2 * 3600 * 1000)
    p = refused(conn, "v-time", b, ErrorCode.INVALID_TIMESTAMP)
    assert p["record_errors"]


def test_producers_may_not_set_log_append_time(conn):
    create(conn, "v-lat", message_timestamp_type="LogAppendTime")
    b = peer_batch([b"a"])
    b[ATTRS_AT + 1] |= 0x08
    refused(conn, "v-lat", recrc(b), ErrorCode.INVALID_TIMESTAMP)


def test_compacted_topics_need_keys(conn):
    create(conn, "v-compact", cleanup_policy="compact")
    good = peer_batch([b"good"], keys=[b"k"])
    assert produce(conn, "v-compact", good)["error_code"] == 0
    b = peer_batch([b"a", b"b", b"c"], keys=[b"k1", None, b"k3"])
    p = produce(conn, "v-compact", b, cid=2)
    assert p["error_code"] == ErrorCode.INVALID_RECORD
    assert p["record_errors"][0]["batch_index"] == 1
    assert len(fetch_all(conn, "v-compact")) == len(good)


def test_max_message_bytes(conn):
    create(conn, "v-size", max_message_bytes="500")
    refused(conn, "v-size", peer_batch([b"x" * 1000]), ErrorCode.MESSAGE_TOO_LARGE)


def test_records_with_headers_and_many_shapes_are_accepted(conn):
    create(conn, "v-ok")
    values = [b"v" * n for n in range(0, 300, 7)]
    b = peer_batch(values, keys=[b"k%d" % i for i in range(len(values))], headers=[("h", b"1"), ("e", b"")])
    assert produce(conn, "v-ok", b)["error_code"] == 0
    recs = RecordBatch(fetch_all(conn, "v-ok")).records()
    assert [r.value for r in recs] == values and recs[3].headers == (("h", b"1"), ("e", b""))


def test_internal_topics_are_refused(conn):
    call(conn, 10, 4, {"key_type": 0, "coordinator_keys": ["g"]}, correlation_id=11)  # creates __consumer_offsets
    p = produce(conn, "__consumer_offsets", peer_batch([b"overwrite"], keys=[b"k"]))
    assert p["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION


@pytest.mark.parametrize("topic_codec,producer_codec,stored", [
    ("gzip", 0, "gzip"), ("uncompressed", 3, "none"), ("producer", 3, "lz4"), ("zstd", 1, "zstd"),
    ("snappy", 0, "snappy"), ("lz4", 4, "lz4"),
])
def test_compression_type_is_applied(conn, broker, topic_codec, producer_codec, stored):
    from pylog.core.records.header import CODEC_NAMES

    topic = f"v-codec-{topic_codec}-{producer_codec}"
    create(conn, topic, compression_type=topic_codec)
    values = [b"record %d " % i * 8 for i in range(50)]
    for i in range(2):
        assert produce(conn, topic, peer_batch(values, codec=producer_codec), cid=4 + i)["error_code"] == 0
    data = fetch_all(conn, topic)
    first = RecordBatch(data)
    assert CODEC_NAMES[first.header.codec] == stored
    second = RecordBatch(data, first.header.size)
    assert second.header.base_offset == 50
    assert [r.offset for r in second.records()] == list(range(50, 100))
    assert [r.value for r in second.records()] == values


def dump_codecs(log_file) -> list[str]:
    """compresscodec of every batch, as `pylog dump-segment --json` prints it."""
    import json
    import subprocess
    import sys

    r = subprocess.run([sys.executable, "-m", "pylog.cli.main", "dump-segment", "--json", str(log_file)],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return [o["compresscodec"] for o in map(json.loads, r.stdout.splitlines())
            if o.get("type") == "batch" or "compresscodec" in o]


def test_dump_shows_the_topic_codec(conn, broker):
    create(conn, "v-dump", compression_type="zstd")
    assert produce(conn, "v-dump", peer_batch([b"some value"] * 20))["error_code"] == 0
    assert dump_codecs(broker.log_dir / "v-dump-0" / "00000000000000000000.log") == ["zstd"]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_debian_kcat_compresses(conn, broker, codec):
    """kcat 1.7.1 (librdkafka 2.0.2) compresses only when ApiVersions lists Produce v0 (KAFKA-18659)."""
    import shutil
    import subprocess

    kcat = shutil.which("kcat") or "/usr/bin/kcat"
    topic = f"v-kcat-{codec}"
    lines = "".join(f"value number {i} of a compressible run of text\n" for i in range(200))
    r = subprocess.run([kcat, "-b", broker.bootstrap, "-P", "-t", topic, "-z", codec, "-X", "linger.ms=100"],
                       input=lines, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    codecs = dump_codecs(broker.log_dir / f"{topic}-0" / "00000000000000000000.log")
    assert codecs and set(codecs) == {codec}


def test_produce_is_listed_from_v0_and_v0_to_v2_close_the_connection(broker):
    """What Kafka 4.3.1 does (KAFKA-18659): ApiVersions lists Produce 0-11, so librdkafka before
    2.10 keeps compressing; a Produce v0-2 request is refused by closing the connection."""
    from support.broker_fixtures import is_closed

    s = connect(broker)
    produce_range = [k for k in call(s, 18, 2, {})["api_keys"] if k["api_key"] == 0][0]
    assert (produce_range["min_version"], produce_range["max_version"]) == (0, 13)
    for version in (0, 2):
        s = connect(broker)
        body = struct.pack(">hii", 1, 5000, 1) + struct.pack(">h", 1) + b"t" + struct.pack(">iii", 1, 0, 0)
        frame = struct.pack(">hhih", 0, version, 7, 4) + b"test" + body
        s.sendall(struct.pack(">i", len(frame)) + frame)
        assert is_closed(s)
    assert call(connect(broker), 18, 3, {"client_software_name": "t", "client_software_version": "1"})["error_code"] == 0
