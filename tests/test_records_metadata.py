"""KRaft `__cluster_metadata` record decoding (dump-segment --cluster-metadata-decoder).

The byte strings are assembled by hand here, field by field, from Kafka's
metadata record specs (flexible versions: unsigned-varint lengths + 1, tagged
field sections), independently of pylog's declarations.
"""
from __future__ import annotations

import base64
import json
import struct
import uuid

import pytest

from pylog.core.records import RecordBatch, iter_headers
from pylog.core.records.metadata_records import RECORD_TYPES, decode_metadata_record, format_metadata_record

TOPIC_ID = uuid.UUID("71a59a51-8968-4f8b-937e-4830c71ec79a")
TOPIC_ID_TEXT = "caWaUYloT4uTfkgwxx7Hmg"  # Kafka's Uuid.toString(): URL-safe base64, no padding
DIR_ID = uuid.UUID(int=7)


def uv(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def cstr(s: str | None) -> bytes:
    return b"\x00" if s is None else uv(len(s.encode()) + 1) + s.encode()


def carr_i32(xs) -> bytes:
    return b"\x00" if xs is None else uv(len(xs) + 1) + b"".join(struct.pack(">i", x) for x in xs)


def tags(*fields) -> bytes:
    return uv(len(fields)) + b"".join(uv(t) + uv(len(v)) + v for t, v in fields)


def record(api_key: int, version: int, body: bytes, frame: int = 1) -> bytes:
    return uv(frame) + uv(api_key) + uv(version) + body


def test_type_table_matches_kafka_specs():
    # ids and names of Kafka's MetadataRecordType (generated from the specs' apiKey and name)
    expected = {
        0: "REGISTER_BROKER_RECORD", 1: "UNREGISTER_BROKER_RECORD", 2: "TOPIC_RECORD", 3: "PARTITION_RECORD",
        4: "CONFIG_RECORD", 5: "PARTITION_CHANGE_RECORD", 7: "FENCE_BROKER_RECORD", 8: "UNFENCE_BROKER_RECORD",
        9: "REMOVE_TOPIC_RECORD", 10: "DELEGATION_TOKEN_RECORD", 11: "USER_SCRAM_CREDENTIAL_RECORD",
        12: "FEATURE_LEVEL_RECORD", 14: "CLIENT_QUOTA_RECORD", 15: "PRODUCER_IDS_RECORD",
        17: "BROKER_REGISTRATION_CHANGE_RECORD", 18: "ACCESS_CONTROL_ENTRY_RECORD",
        19: "REMOVE_ACCESS_CONTROL_ENTRY_RECORD", 20: "NO_OP_RECORD", 21: "ZK_MIGRATION_STATE_RECORD",
        22: "REMOVE_USER_SCRAM_CREDENTIAL_RECORD", 23: "BEGIN_TRANSACTION_RECORD", 24: "END_TRANSACTION_RECORD",
        25: "ABORT_TRANSACTION_RECORD", 26: "REMOVE_DELEGATION_TOKEN_RECORD", 27: "REGISTER_CONTROLLER_RECORD",
        28: "CLEAR_ELR_RECORD",
    }
    assert RECORD_TYPES == expected


CASES = [
    ("topic", record(2, 0, cstr("pear") + TOPIC_ID.bytes + tags()),
     {"type": "TOPIC_RECORD", "version": 0, "data": {"name": "pear", "topicId": TOPIC_ID_TEXT}}),
    ("feature-level", record(12, 0, cstr("metadata.version") + struct.pack(">h", 20) + tags()),
     {"type": "FEATURE_LEVEL_RECORD", "version": 0, "data": {"name": "metadata.version", "featureLevel": 20}}),
    ("producer-ids", record(15, 0, struct.pack(">iqq", 1, 5, 4000) + tags()),
     {"type": "PRODUCER_IDS_RECORD", "version": 0, "data": {"brokerId": 1, "brokerEpoch": 5, "nextProducerId": 4000}}),
    ("remove-topic", record(9, 0, TOPIC_ID.bytes + tags()),
     {"type": "REMOVE_TOPIC_RECORD", "version": 0, "data": {"topicId": TOPIC_ID_TEXT}}),
    ("config", record(4, 0, b"\x02" + cstr("pear") + cstr("retention.ms") + cstr("1000") + tags()),
     {"type": "CONFIG_RECORD", "version": 0,
      "data": {"resourceType": 2, "resourceName": "pear", "name": "retention.ms", "value": "1000"}}),
    ("config-delete", record(4, 0, b"\x02" + cstr("pear") + cstr("retention.ms") + cstr(None) + tags()),
     {"type": "CONFIG_RECORD", "version": 0,
      "data": {"resourceType": 2, "resourceName": "pear", "name": "retention.ms", "value": None}}),
    # PartitionRecord v0: LeaderRecoveryState is tagged (tag 0), printed only when not its default 0
    ("partition-v0", record(3, 0, struct.pack(">i", 4) + TOPIC_ID.bytes + carr_i32([1, 2]) + carr_i32([2])
                            + carr_i32(None) + carr_i32([]) + struct.pack(">iii", 2, 7, 9) + tags((0, b"\x01"))),
     {"type": "PARTITION_RECORD", "version": 0,
      "data": {"partitionId": 4, "topicId": TOPIC_ID_TEXT, "replicas": [1, 2], "isr": [2], "removingReplicas": None,
               "addingReplicas": [], "leader": 2, "leaderRecoveryState": 1, "leaderEpoch": 7, "partitionEpoch": 9}}),
    # v1 adds Directories after PartitionEpoch
    ("partition-v1", record(3, 1, struct.pack(">i", 0) + TOPIC_ID.bytes + carr_i32([1]) + carr_i32([1])
                            + carr_i32([]) + carr_i32([]) + struct.pack(">iii", 1, 0, 0) + uv(2) + DIR_ID.bytes
                            + tags()),
     {"type": "PARTITION_RECORD", "version": 1,
      "data": {"partitionId": 0, "topicId": TOPIC_ID_TEXT, "replicas": [1], "isr": [1], "removingReplicas": [],
               "addingReplicas": [], "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0,
               "directories": ["AAAAAAAAAAAAAAAAAAAABw"]}}),
    # PartitionChangeRecord: everything but the ids is tagged; absent tags are not printed
    ("partition-change", record(5, 0, struct.pack(">i", 3) + TOPIC_ID.bytes
                                + tags((0, carr_i32([1, 3])), (1, struct.pack(">i", 3)), (5, b"\x00"))),
     {"type": "PARTITION_CHANGE_RECORD", "version": 0,
      "data": {"partitionId": 3, "topicId": TOPIC_ID_TEXT, "isr": [1, 3], "leader": 3, "leaderRecoveryState": 0}}),
    ("partition-change-empty", record(5, 0, struct.pack(">i", 3) + TOPIC_ID.bytes + tags()),
     {"type": "PARTITION_CHANGE_RECORD", "version": 0, "data": {"partitionId": 3, "topicId": TOPIC_ID_TEXT}}),
    # RegisterBrokerRecord v1: endpoints and features are compact arrays of structs with their own tag sections
    ("register-broker", record(0, 1, struct.pack(">i", 1) + TOPIC_ID.bytes + struct.pack(">q", 12)
                               + uv(2) + cstr("PLAINTEXT") + cstr("localhost") + struct.pack(">Hh", 9092, 0) + tags()
                               + uv(2) + cstr("metadata.version") + struct.pack(">hh", 1, 20) + tags()
                               + cstr(None) + b"\x01" + b"\x00" + tags()),
     {"type": "REGISTER_BROKER_RECORD", "version": 1,
      "data": {"brokerId": 1, "incarnationId": TOPIC_ID_TEXT, "brokerEpoch": 12,
               "endPoints": [{"name": "PLAINTEXT", "host": "localhost", "port": 9092, "securityProtocol": 0}],
               "features": [{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 20}],
               "rack": None, "fenced": True, "inControlledShutdown": False}}),
    ("user-scram", record(11, 0, cstr("alice") + b"\x01" + uv(3) + b"ab" + uv(2) + b"k" + uv(1)
                          + struct.pack(">i", 4096) + tags()),
     {"type": "USER_SCRAM_CREDENTIAL_RECORD", "version": 0,
      "data": {"name": "alice", "mechanism": 1, "salt": base64.b64encode(b"ab").decode(),
               "storedKey": base64.b64encode(b"k").decode(), "serverKey": "", "iterations": 4096}}),
    ("no-op", record(20, 0, tags()), {"type": "NO_OP_RECORD", "version": 0, "data": {}}),
]


@pytest.mark.parametrize("value, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_decode_record_fields(value, expected):
    assert decode_metadata_record(value) == expected
    assert json.loads(format_metadata_record(value, 0)) == expected


def test_unknown_type_or_version_named_with_raw_bytes():
    d = decode_metadata_record(record(99, 0, b"\x05\x06"))
    assert d == {"type": "UNKNOWN_RECORD_TYPE_99", "version": 0, "data": {"raw": "BQY="}}
    d = decode_metadata_record(record(2, 7, b"\x05"))
    assert d["type"] == "TOPIC_RECORD" and d["version"] == 7 and d["data"] == {"raw": "BQ=="}


@pytest.mark.parametrize("value, message", [
    (record(2, 0, cstr("pear") + TOPIC_ID.bytes + tags(), frame=0), "frame version 0"),
    (record(2, 0, cstr("pear") + TOPIC_ID.bytes[:5]), "TopicRecord v0"),
    (record(2, 0, cstr("pear") + TOPIC_ID.bytes + tags() + b"\x00"), "trailing bytes"),
])
def test_bad_records_give_kafka_style_error_line(value, message):
    text = format_metadata_record(value, 17)
    assert text.startswith("Error at 17, skipping. ") and message in text
    assert format_metadata_record(None, 3) == "Error at 3, skipping. Missing value"


def test_fixture_records_decode_to_kafka_json(fixtures_dir):
    fixtures = fixtures_dir / "third-party-segments"
    out = []
    for name in ("cluster-metadata-a.log", "cluster-metadata-b.log"):
        buf = (fixtures / name).read_bytes()
        for pos, _ in iter_headers(buf):
            out += [decode_metadata_record(r.value) for r in RecordBatch(buf, pos).records()]
    assert [d["type"] for d in out] == ["FEATURE_LEVEL_RECORD", "TOPIC_RECORD", "PARTITION_RECORD",
                                        "FEATURE_LEVEL_RECORD", "TOPIC_RECORD", "PARTITION_RECORD", "PARTITION_RECORD"]
    assert out[1]["data"] == {"name": "pear", "topicId": TOPIC_ID_TEXT}
    assert out[2] == {"type": "PARTITION_RECORD", "version": 1, "data": {
        "partitionId": 0, "topicId": TOPIC_ID_TEXT, "replicas": [1], "isr": [1], "removingReplicas": [],
        "addingReplicas": [], "leader": 1, "leaderEpoch": 0, "partitionEpoch": 0,
        "directories": ["EAAAAAAAQACAAAAAAAAAAQ"]}}
    assert out[4]["data"]["name"] == "saz"
    assert [d["data"]["partitionId"] for d in out[5:]] == [0, 1]


# ---------------------------------------------------------------- __consumer_offsets (the same JSON rendering)
def _s(text: str) -> bytes:
    return struct.pack(">h", len(text)) + text.encode()


@pytest.mark.parametrize("value, expected", [
    (struct.pack(">hq", 0, 42) + _s("m") + struct.pack(">q", 7),
     '{"version":"0","data":{"offset":42,"metadata":"m","commitTimestamp":7}}'),
    (struct.pack(">hq", 1, 42) + _s("") + struct.pack(">qq", 7, 9),
     '{"version":"1","data":{"offset":42,"metadata":"","commitTimestamp":7,"expireTimestamp":9}}'),
    # v4 is flexible: compact string, then an empty tagged-field section
    (struct.pack(">hqi", 4, 42, 3) + cstr("m") + struct.pack(">q", 7) + tags(),
     '{"version":"4","data":{"offset":42,"leaderEpoch":3,"metadata":"m","commitTimestamp":7}}'),
])
def test_offsets_decoder_commit_value_versions(value, expected):
    from pylog.core.records.offsets_records import format_offsets_record

    key = struct.pack(">h", 0) + _s("g") + _s("t") + struct.pack(">i", 0)
    assert format_offsets_record(key, value, 0) == ('{"type":"0","data":{"group":"g","topic":"t","partition":0}}',
                                                    expected)


def test_offsets_decoder_errors():
    from pylog.core.records.offsets_records import format_offsets_record

    key = struct.pack(">h", 1) + _s("g") + _s("t") + struct.pack(">i", 0)
    assert format_offsets_record(None, b"", 4) == ("Error at offset 4, skipping. Missing key", None)
    text, value = format_offsets_record(struct.pack(">h", 9) + _s("g"), b"", 5)
    assert text == "Error at offset 5, skipping. unknown __consumer_offsets key type 9" and value is None
    text, value = format_offsets_record(key, struct.pack(">h", 3) + b"\x00", 6)
    assert text.startswith("Error at offset 6, skipping. malformed OffsetCommitValue v3") and value is None
    text, _ = format_offsets_record(key, struct.pack(">h", 8), 7)
    assert text == "Error at offset 7, skipping. unknown OffsetCommitValue version 8"
