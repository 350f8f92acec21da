"""Golden bytes against a peer: kafka-python 3.x's `kafka.protocol` codec.

For every (api, version, direction) pylog declares and kafka-python covers,
hypothesis bodies are encoded by both and must be byte-identical; each side
must decode the other's bytes to the same values. Full frames (size prefix +
headers) are compared too. Hand-written frames below pin a few encodings
byte by byte to the protocol guide."""
from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import strategies as st

from support.protocol_support import (
    api_cases, draw_body, for_each_case, from_kp, kp_classes, kp_max_version, normalize, plain, to_kp,
)
from pylog.core.protocol import (SCHEMAS, decode_request, decode_request_body, decode_response,
                                 decode_response_body, encode_request, encode_request_body, encode_response,
                                 encode_response_body)

KP = kp_classes()

# versions newer than the specs kafka-python ships are checked against Kafka's own spec
# (test_protocol_spec.py) and a Kafka 4.4 node (test_kafka44_versions.py)
CASES = [c for c in api_cases(KP) if c[1] <= kp_max_version(KP, c[0], c[2])]


def _project(fields, version, flexible, d):
    """Only the fields that exist in `version` (kafka-python leaves others unset)."""
    from pylog.core.protocol.types import Array, Struct

    out = {}
    for f in fields:
        if not f.present(version) or (f.tag is not None and not flexible):
            continue
        v = d[f.name]
        if isinstance(f.type, Struct) and v is not None:
            v = _project(f.type.fields, version, flexible, v)
        elif isinstance(f.type, Array) and isinstance(f.type.elem, list) and v is not None:
            v = [_project(f.type.elem, version, flexible, e) for e in v]
        out[f.name] = v
    return out


@for_each_case(CASES, max_examples=4)
def test_same_bytes_as_kafka_python(case, data):
    key, version, direction = case
    fields, flexible, body, expected = draw_body(data, case)
    req_cls, resp_cls = KP[key]
    cls = req_cls if direction == "request" else resp_cls

    ours = encode_request_body(key, version, body) if direction == "request" else encode_response_body(key, version, body)
    obj = to_kp(cls, fields, version, flexible, body)
    theirs = bytes(obj.encode(version=version))
    assert ours == theirs

    # Each decodes the other's bytes to the same values.
    decode = decode_request_body if direction == "request" else decode_response_body
    assert plain(decode(key, version, theirs)) == expected
    if key == 18 and direction == "response" and body["error_code"] != 0:
        # kafka-python reads any failed ApiVersions response as v0 (pylog
        # does so for UNSUPPORTED_VERSION only, as the Java client does).
        return
    kp_decoded = cls.decode(ours, version=version)
    assert plain(from_kp(kp_decoded, fields, version, flexible)) == _project(fields, version, flexible, expected)

    # Whole frames: size prefix and header versions agree too.
    corr = data.draw(st.integers(0, 2**31 - 1))
    if direction == "request":
        obj.with_header(correlation_id=corr, client_id="golden")
        frame = bytes(obj.encode(version=version, header=True, framed=True))
        assert encode_request(key, version, corr, "golden", body) == frame
        assert decode_request(frame[4:]).correlation_id == corr
    else:
        obj.with_header(correlation_id=corr)
        # (kafka-python's response objects already carry their version; passing
        # version= again trips over the response header.)
        frame = bytes(obj.encode(header=True, framed=True))
        assert encode_response(key, version, corr, body) == frame
        assert decode_response(key, version, frame[4:])[0] == corr


def test_every_declared_api_has_a_peer():
    # KIP-848's APIs are not in kafka-python: test_protocol_golden_kip848.py checks them
    # against Kafka's own message classes.
    from support.kip848_classes import KEYS as KAFKA_CLASS_PEERS

    share_peered = {76, 77, 78, 79, 90, 91, 92}  # against Kafka 4.4's classes in test_protocol_golden_share.py
    # against Kafka 4.4's classes in test_protocol_golden_tokens_state.py
    share_peered |= {38, 39, 40, 41, 83, 84, 85, 86, 87}
    # the streams-group APIs: against Kafka 4.4's classes in test_protocol_golden_streams.py
    share_peered |= {88, 89, 93}
    assert [k for k in SCHEMAS if k not in KP and k not in KAFKA_CLASS_PEERS and k not in share_peered] == []


# --- hand-written frames, checked against the protocol guide -----------------

def test_api_versions_v0_request_frame():
    # size=12: api_key=18, api_version=0, correlation_id=1, client_id "ab"
    frame = encode_request(18, 0, 1, "ab", {})
    assert frame == b"\x00\x00\x00\x0c" b"\x00\x12" b"\x00\x00" b"\x00\x00\x00\x01" b"\x00\x02ab"


def test_api_versions_v3_request_frame_is_flexible():
    frame = encode_request(18, 3, 7, "c", {"client_software_name": "py", "client_software_version": "1"})
    # header v2: client_id stays an int16 string, then an empty tag section;
    # body: compact strings (length+1) and the body's own empty tag section.
    assert frame[4:] == (b"\x00\x12\x00\x03\x00\x00\x00\x07" b"\x00\x01c" b"\x00"
                         b"\x03py" b"\x021" b"\x00")
    req = decode_request(frame[4:])
    assert req.header_version == 2
    # v5's cluster and node (KIP-1242) are absent at v3: their defaults
    assert req.body == {"client_software_name": "py", "client_software_version": "1", "cluster_id": None,
                        "node_id": -1}


def test_api_versions_v3_response_uses_header_v0():
    body = {"error_code": 0, "api_keys": [{"api_key": 0, "min_version": 3, "max_version": 11}],
            "throttle_time_ms": 0}
    frame = encode_response(18, 3, 9, body)
    assert frame[4:] == (b"\x00\x00\x00\x09"                 # correlation id, no tag section
                         b"\x00\x00"                          # error_code
                         b"\x02" b"\x00\x00\x00\x03\x00\x0b" b"\x00"  # compact array of 1, entry tags
                         b"\x00\x00\x00\x00"                  # throttle
                         b"\x00")                             # body tags
    assert decode_response(18, 3, frame[4:])[1]["api_keys"][0]["max_version"] == 11


def test_api_versions_tagged_fields_sorted_and_sized():
    body = {"api_keys": [], "finalized_features_epoch": 5, "zk_migration_ready": True}
    frame = encode_response(18, 3, 1, body)
    assert frame[4 + 4 + 2 + 1 + 4:] == (b"\x02" b"\x01\x08" + struct.pack(">q", 5) + b"\x03\x01\x01")
    got = decode_response(18, 3, frame[4:])[1]
    assert got["finalized_features_epoch"] == 5 and got["zk_migration_ready"] is True
    assert got["supported_features"] == []


def test_produce_v3_request_frame():
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 1500,
            "topic_data": [{"name": "t", "partition_data": [{"index": 2, "records": b"RB"}]}]}
    frame = encode_request(0, 3, 42, None, body)
    assert frame[4:] == (b"\x00\x00\x00\x03\x00\x00\x00\x2a" b"\xff\xff"   # header, null client id
                         b"\xff\xff" b"\x00\x01" b"\x00\x00\x05\xdc"         # txn id null, acks, timeout
                         b"\x00\x00\x00\x01" b"\x00\x01t"                     # one topic "t"
                         b"\x00\x00\x00\x01" b"\x00\x00\x00\x02"              # one partition, index 2
                         b"\x00\x00\x00\x02RB")                               # records
    req = decode_request(frame[4:])
    assert isinstance(req.body["topic_data"][0]["partition_data"][0]["records"], memoryview)


def test_metadata_v12_response_frame():
    tid = uuid.UUID("00112233-4455-6677-8899-aabbccddeeff")
    body = {"brokers": [{"node_id": 1, "host": "h", "port": 9092, "rack": None}], "cluster_id": "c",
            "controller_id": 1,
            "topics": [{"error_code": 0, "name": "t", "topic_id": tid, "partitions": [
                {"partition_index": 0, "leader_id": 1, "leader_epoch": 0, "replica_nodes": [1], "isr_nodes": [1]}]}]}
    frame = encode_response(3, 12, 3, body)
    exp = (b"\x00\x00\x00\x03\x00"                      # correlation id, header tags
           b"\x00\x00\x00\x00"                          # throttle
           b"\x02" b"\x00\x00\x00\x01\x02h\x00\x00\x23\x84\x00\x00"  # broker: id, host, port, rack null, tags
           b"\x02c" b"\x00\x00\x00\x01"                 # cluster id, controller
           b"\x02" b"\x00\x00\x02t" + tid.bytes + b"\x00"  # topic: error, name, id, is_internal
           + b"\x02" b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x00"
           b"\x02\x00\x00\x00\x01" b"\x02\x00\x00\x00\x01" b"\x01" b"\x00"  # replicas, isr, offline, tags
           b"\x80\x00\x00\x00" b"\x00"                  # topic authorized ops, topic tags
           b"\x00")                                     # body tags
    assert frame[4:] == exp
    assert decode_response(3, 12, frame[4:])[1]["topics"][0]["topic_id"] == tid


def test_fetch_v12_response_tagged_partition_fields():
    body = {"responses": [{"topic": "t", "partitions": [{
        "partition_index": 0, "high_watermark": 10, "aborted_transactions": None,
        "current_leader": {"leader_id": 1, "leader_epoch": 4}, "records": b"X"}]}]}
    frame = encode_response(1, 12, 1, body)
    tail = frame[-(1 + 2 + 1 + 1 + 1 + 4 + 4 + 1 + 1 + 1):]
    # ... preferred_read_replica -1, records "X", tags: 1 field, tag 1, 9 bytes, then topic + body tags
    assert frame.endswith(b"\xff\xff\xff\xff" b"\x02X" b"\x01\x01\x09" + struct.pack(">ii", 1, 4) + b"\x00" b"\x00" b"\x00")
    assert tail


def test_api_versions_unsupported_version_answer_is_read_as_v0():
    # What a broker sends for ApiVersions v9: UNSUPPORTED_VERSION and a v0 body.
    v0 = encode_response(18, 0, 4, {"error_code": 35, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]})
    corr, body = decode_response(18, 3, v0[4:])
    assert corr == 4 and body["error_code"] == 35
    assert body["api_keys"] == [{"api_key": 18, "min_version": 0, "max_version": 4}]


def test_unknown_tagged_fields_are_skipped():
    # Fetch v12 request with an unknown tag 9 (3 bytes) in the body's tag section.
    frame = bytearray(encode_request(1, 12, 2, "c", {"max_wait_ms": 100, "min_bytes": 1})[4:])
    assert frame[-1] == 0
    frame[-1:] = b"\x01" b"\x09\x03abc"
    req = decode_request(bytes(frame))
    assert req.body["max_wait_ms"] == 100 and req.body["cluster_id"] is None
    # ... and a known one (cluster_id, tag 0) next to it.
    frame[-6:] = b"\x02" b"\x00\x03\x03id" b"\x09\x00"
    assert decode_request(bytes(frame)).body["cluster_id"] == "id"


def test_list_offsets_v1_request_frame():
    body = {"replica_id": -1, "topics": [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -2}]}]}
    frame = encode_request(2, 1, 3, "c", body)
    assert frame[4 + 11:] == (b"\xff\xff\xff\xff" b"\x00\x00\x00\x01\x00\x01t"
                              b"\x00\x00\x00\x01" b"\x00\x00\x00\x00" + struct.pack(">q", -2))


def test_create_topics_v5_request_frame():
    body = {"topics": [{"name": "t", "num_partitions": 3, "replication_factor": 1,
                        "configs": [{"name": "cleanup.policy", "value": "compact"}]}],
            "timeout_ms": 1000}
    frame = encode_request(19, 5, 3, "c", body)
    assert frame[4 + 12:] == (b"\x02" b"\x02t" b"\x00\x00\x00\x03" b"\x00\x01" b"\x01"
                              b"\x02" b"\x0fcleanup.policy" b"\x08compact" b"\x00" b"\x00"
                              b"\x00\x00\x03\xe8" b"\x00" b"\x00")


def test_join_group_v0_request_frame():
    body = {"group_id": "g", "session_timeout_ms": 10000, "member_id": "", "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": b"\x00\x00"}]}
    frame = encode_request(11, 0, 1, None, body)
    assert frame[4 + 10:] == (b"\x00\x01g" b"\x00\x00\x27\x10" b"\x00\x00" b"\x00\x08consumer"
                              b"\x00\x00\x00\x01" b"\x00\x05range" b"\x00\x00\x00\x02\x00\x00")


def test_offset_fetch_v8_multi_group_request_frame():
    body = {"groups": [{"group_id": "g", "topics": None}], "require_stable": True}
    frame = encode_request(9, 8, 1, "c", body)
    assert frame[4 + 12:] == b"\x02" b"\x02g" b"\x00" b"\x00" b"\x01" b"\x00"
    assert decode_request(frame[4:]).body["groups"][0]["topics"] is None


@pytest.mark.parametrize("version", [1, 8, 9, 12])
def test_large_counts_and_lengths_match_kafka_python(version):
    # Multi-byte compact lengths/counts (>127) and int arrays beyond the
    # precompiled small-count Structs; hypothesis only draws small sizes.
    api = SCHEMAS[3]
    body = {"brokers": [{"node_id": i, "host": "h" * 200, "port": 9092, "rack": "r" * 130} for i in range(3)],
            "cluster_id": "c" * 300, "controller_id": 1,
            "topics": [{"error_code": 0, "name": f"topic-{t:04d}-" + "x" * 120, "is_internal": False, "partitions": [
                {"error_code": 0, "partition_index": p, "leader_id": 1, "leader_epoch": 5,
                 "replica_nodes": list(range(40)), "isr_nodes": list(range(17)), "offline_replicas": [16] * 16}
                for p in range(3)]} for t in range(150)]}
    ours = encode_response_body(3, version, body)
    theirs = bytes(to_kp(KP[3][1], api.response, version, api.is_flexible(version), body).encode(version=version))
    assert ours == theirs
    expected = normalize(api.response, version, api.is_flexible(version), body)
    assert decode_response_body(3, version, ours) == expected


def test_large_record_sets_round_trip():
    recs = bytes(range(256)) * 300  # 76,800 bytes: 3-byte compact length
    body = {"responses": [{"topic": "t", "partitions": [{"partition_index": 0, "records": recs}]}]}
    for version in (4, 12):
        frame = encode_response(1, version, 1, body)
        got = decode_response(1, version, frame[4:])[1]
        assert bytes(got["responses"][0]["partitions"][0]["records"]) == recs
        api = SCHEMAS[1]
        theirs = bytes(to_kp(KP[1][1], api.response, version, api.is_flexible(version), body).encode(version=version))
        assert frame[8 + (1 if version >= 12 else 0):] == theirs
