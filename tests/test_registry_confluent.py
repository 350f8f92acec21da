"""confluent-kafka 2.16.1's SchemaRegistryClient and its Avro, JSON Schema and Protobuf
serialisers against the registry of a `pylog broker start --schema-registry` process."""
from __future__ import annotations

import json
import uuid

import pytest

from support.broker_fixtures import BrokerProcess
from support.registry import free_port, protoc_module, registry_url_of, roundtrip as _roundtrip

ck = pytest.importorskip("confluent_kafka")
from confluent_kafka.schema_registry import Schema, SchemaReference, SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from confluent_kafka.schema_registry.error import SchemaRegistryError  # noqa: E402
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer  # noqa: E402
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer  # noqa: E402

USER = {"type": "record", "name": "User", "namespace": "com.example",
        "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}


@pytest.fixture(scope="module")
def reg_broker(tmp_path_factory):
    d = tmp_path_factory.mktemp("registry-broker") / "data"
    # each round trip's new group joins at once, not after group.initial.rebalance.delay.ms (3 s)
    b = BrokerProcess(d, "--schema-registry", f"127.0.0.1:{free_port()}",
                      "--set", "group.initial.rebalance.delay.ms=0").start(timeout=60)
    b.registry_url = registry_url_of(b)
    yield b
    b.stop_clean()


@pytest.fixture
def sr(reg_broker):
    c = SchemaRegistryClient({"url": reg_broker.registry_url})
    yield c


def _subject(prefix="t"):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_client_endpoints(sr):
    s = _subject()
    sid = sr.register_schema(s, Schema(json.dumps(USER), "AVRO"))
    assert sid >= 1
    assert sr.register_schema(s, Schema(json.dumps(USER), "AVRO")) == sid  # idempotent
    assert json.loads(sr.get_schema(sid).schema_str) == USER
    latest = sr.get_latest_version(s)
    assert (latest.schema_id, latest.version, latest.subject) == (sid, 1, s)
    assert sr.get_version(s, 1).schema_id == sid
    assert sr.get_versions(s) == [1]
    assert s in sr.get_subjects()
    assert sr.lookup_schema(s, Schema(json.dumps(USER), "AVRO")).version == 1
    assert set(sr.get_schema_types()) == {"AVRO", "JSON", "PROTOBUF"}
    assert s in sr.get_subjects_by_schema_id(sid)
    assert {(v.subject, v.version) for v in sr.get_schema_versions(sid)} >= {(s, 1)}
    # compatibility: adding a field without a default breaks BACKWARD
    bad = dict(USER, fields=USER["fields"] + [{"name": "email", "type": "string"}])
    good = dict(USER, fields=USER["fields"] + [{"name": "email", "type": ["null", "string"], "default": None}])
    assert sr.test_compatibility(s, Schema(json.dumps(bad), "AVRO")) is False
    assert sr.test_compatibility(s, Schema(json.dumps(good), "AVRO")) is True
    with pytest.raises(SchemaRegistryError) as e:
        sr.register_schema(s, Schema(json.dumps(bad), "AVRO"))
    assert e.value.http_status_code == 409 and e.value.error_code == 409
    assert sr.register_schema(s, Schema(json.dumps(good), "AVRO")) != sid
    assert sr.get_versions(s) == [1, 2]
    # config and mode
    assert sr.set_compatibility(s, "FULL") == {"compatibility": "FULL"}  # the PUT answer as is
    assert sr.get_compatibility(s) == "FULL"
    assert sr.get_config(s).compatibility_level.value == "FULL"
    sr.delete_config(s)
    assert sr.get_compatibility() == "BACKWARD"
    assert sr.update_mode(s, "READONLY") == "READONLY"
    assert sr.get_mode(s) == "READONLY"
    with pytest.raises(SchemaRegistryError) as e:
        sr.register_schema(s, Schema(json.dumps(dict(good, doc="x")), "AVRO"))
    assert e.value.error_code == 42205
    sr.delete_mode(s)
    assert sr.get_global_mode() == "READWRITE"
    # deletes
    assert sr.delete_version(s, 2) == 2
    assert sr.get_versions(s) == [1]
    assert sr.get_versions(s, deleted=True) == [1, 2]
    assert sr.delete_subject(s) == [1]
    with pytest.raises(SchemaRegistryError) as e:
        sr.get_versions(s)
    assert e.value.error_code == 40401
    assert sorted(sr.delete_subject(s, permanent=True)) == [1, 2]
    assert s not in sr.get_subjects(deleted=True)
    with pytest.raises(SchemaRegistryError) as e:
        sr.get_schema(999999)
    assert e.value.http_status_code == 404 and e.value.error_code == 40403


def test_avro_serializer_roundtrip(reg_broker, sr):
    topic = _subject("avro")
    ser = AvroSerializer(sr, json.dumps(USER))
    deser = AvroDeserializer(sr)
    values = [{"name": f"u{i}", "age": i} for i in range(20)]
    got = _roundtrip(reg_broker, topic, ser, deser, values)
    assert [g[1] for g in got] == values
    raw = got[0][0]
    assert raw[0] == 0 and int.from_bytes(raw[1:5], "big") == sr.get_latest_version(f"{topic}-value").schema_id


def test_avro_references(reg_broker, sr):
    addr = {"type": "record", "name": "Address", "namespace": "com.example",
            "fields": [{"name": "city", "type": "string"}]}
    person = {"type": "record", "name": "Person", "namespace": "com.example",
              "fields": [{"name": "name", "type": "string"}, {"name": "home", "type": "com.example.Address"}]}
    a_subj = _subject("address")
    sr.register_schema(a_subj, Schema(json.dumps(addr), "AVRO"))
    topic = _subject("people")
    refs = [SchemaReference("com.example.Address", a_subj, 1)]
    sid = sr.register_schema(f"{topic}-value", Schema(json.dumps(person), "AVRO", refs))
    assert sr.get_referenced_by(a_subj, 1) == [sid]
    ser = AvroSerializer(sr, Schema(json.dumps(person), "AVRO", refs), conf={"auto.register.schemas": False,
                                                                            "use.latest.version": True})
    got = _roundtrip(reg_broker, topic, ser, AvroDeserializer(sr), [{"name": "a", "home": {"city": "Oslo"}}])
    assert got[0][1] == {"name": "a", "home": {"city": "Oslo"}}
    with pytest.raises(SchemaRegistryError) as e:  # referenced: cannot be deleted
        sr.delete_subject(a_subj)
    assert e.value.error_code == 42206


def test_json_schema_serializer_roundtrip(reg_broker, sr):
    schema = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Order", "type": "object",
              "properties": {"id": {"type": "integer"}, "item": {"type": "string"}}, "required": ["id"]}
    topic = _subject("json")
    ser = JSONSerializer(json.dumps(schema), sr)
    deser = JSONDeserializer(json.dumps(schema), schema_registry_client=sr)
    values = [{"id": i, "item": f"x{i}"} for i in range(5)]
    got = _roundtrip(reg_broker, topic, ser, deser, values)
    assert [g[1] for g in got] == values
    assert sr.get_latest_version(f"{topic}-value").schema.schema_type == "JSON"


PROTO_COMMON = """syntax = "proto3";
package shop.common;
message Money { string currency = 1; int64 units = 2; }
"""
PROTO_ORDER = """syntax = "proto3";
package shop;
import "shop/common.proto";
import "google/protobuf/timestamp.proto";
message Order {
  int64 id = 1;
  shop.common.Money total = 2;
  repeated string items = 3;
  google.protobuf.Timestamp at = 4;
  message Line { string sku = 1; }
  Line first = 5;
}
message Other { string x = 1; }
"""


def test_protobuf_serializer_with_references(reg_broker, sr, tmp_path):
    mod = protoc_module(tmp_path, {"shop/common.proto": PROTO_COMMON, "shop/order.proto": PROTO_ORDER},
                        "shop/order.proto")
    topic = _subject("proto")
    ser = ProtobufSerializer(mod.Order, sr, {"use.deprecated.format": False})
    deser = ProtobufDeserializer(mod.Order, {"use.deprecated.format": False})
    msgs = []
    for i in range(3):
        m = mod.Order(id=i, items=["a", "b"])
        m.total.currency, m.total.units = "EUR", 100 + i
        m.first.sku = f"s{i}"
        m.at.seconds = 1700000000 + i
        msgs.append(m)
    got = _roundtrip(reg_broker, topic, ser, deser, msgs)
    assert [g[1] for g in got] == msgs
    latest = sr.get_latest_version(f"{topic}-value")
    assert latest.schema.schema_type == "PROTOBUF"
    assert [r.name for r in latest.schema.references] == ["shop/common.proto"]
    # a nested message: message indexes [0, 0]
    ser2 = ProtobufSerializer(mod.Order.Line, sr, {"use.deprecated.format": False})
    topic2 = _subject("proto-line")
    got = _roundtrip(reg_broker, topic2, ser2, ProtobufDeserializer(mod.Order.Line, {"use.deprecated.format": False}),
                     [mod.Order.Line(sku="z")])
    assert got[0][1].sku == "z"
    assert got[0][0][5:7] == b"\x04\x00"  # two indexes (zigzag 2), then 0 and 0: Order.Line
