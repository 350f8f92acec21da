"""Schema-aware commands against pylog's registry, with confluent-kafka's serialisers as the
peer: `pylog produce/consume --value-format`, `pylog schemas ...`, `pylog dump-segment
--value-decoder registry`; HTTP basic auth and where the registry URL comes from."""
from __future__ import annotations

import json
import os
import uuid

import pytest

from pylog.testing import EmbeddedBroker
from support.cli import pylog as pylog_cmd, pylog_in_process
from support.registry import protoc_module, rest, roundtrip

pytest.importorskip("confluent_kafka")
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

ORDER = {"type": "record", "name": "Order", "namespace": "shop",
         "fields": [{"name": "id", "type": "long"}, {"name": "item", "type": "string"},
                    {"name": "qty", "type": "int", "default": 1},
                    {"name": "note", "type": ["null", "string"], "default": None}]}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    users = tmp_path_factory.mktemp("users") / "users.txt"
    users.write_text("alice:secret\n")
    # each round trip's new group joins at once, not after group.initial.rebalance.delay.ms (3 s)
    with EmbeddedBroker(tmp_path_factory.mktemp("cmd-registry") / "data", schema_registry=True,
                        settings={"group.initial.rebalance.delay.ms": "0"}) as b:
        yield b


def _topic():
    return f"t-{uuid.uuid4().hex[:8]}"


def _consume_values(broker, topic):
    return [r.value for r in broker.consume(topic)]


def test_produce_avro_read_by_confluent(broker, tmp_path):
    topic = _topic()
    schema = tmp_path / "order.avsc"
    schema.write_text(json.dumps(ORDER))
    lines = '{"id": 1, "item": "apple"}\n{"id": "two", "item": "pear"}\n{"id": 3, "item": "fig", "note": "x"}\n' \
            '{"item": "no id"}\n'
    r = pylog_cmd("produce", topic, "-b", broker.bootstrap, "--value-format", "avro", "--value-schema", str(schema),
                  "--schema-registry", broker.schema_registry_url, input=lines)
    assert r.returncode == 1, r.stderr
    assert "line 2" in r.stderr and "id" in r.stderr and "line 4" in r.stderr
    assert "Traceback" not in r.stderr
    raw = _consume_values(broker, topic)
    assert len(raw) == 2  # the two bad lines were not sent
    sr = SchemaRegistryClient({"url": broker.schema_registry_url})
    deser = AvroDeserializer(sr)
    got = [deser(v, SerializationContext(topic, MessageField.VALUE)) for v in raw]
    assert got == [{"id": 1, "item": "apple", "qty": 1, "note": None}, {"id": 3, "item": "fig", "qty": 1, "note": "x"}]
    assert sr.get_latest_version(f"{topic}-value").schema_id == int.from_bytes(raw[0][1:5], "big")
    # the latest version of a subject, with the URL from -X as confluent-kafka names it
    r = pylog_cmd("produce", topic, "-b", broker.bootstrap, "--value-format", "avro",
                  "--value-subject", f"{topic}-value", "-X", f"schema.registry.url={broker.schema_registry_url}",
                  input='{"id": 9, "item": "kiwi"}\n')
    assert r.returncode == 0, r.stderr
    assert deser(_consume_values(broker, topic)[-1], SerializationContext(topic, MessageField.VALUE))["id"] == 9


def test_consume_decodes_confluent_avro(broker):
    topic = _topic()
    sr = SchemaRegistryClient({"url": broker.schema_registry_url})
    values = [{"id": i, "item": f"i{i}", "qty": i, "note": None} for i in range(3)]
    roundtrip(broker, topic, AvroSerializer(sr, json.dumps(ORDER)), AvroDeserializer(sr), values)
    env = dict(os.environ, PYLOG_SCHEMA_REGISTRY_URL=broker.schema_registry_url)
    r = pylog_cmd("consume", topic, "-b", broker.bootstrap, "-e", "--from-beginning", "--json",
                  "--value-format", "avro", env=env)
    assert r.returncode == 0, r.stderr
    assert [json.loads(x)["value"] for x in r.stdout.splitlines()] == values
    r = pylog_cmd("consume", topic, "-b", broker.bootstrap, "-e", "--from-beginning", "-f", "%o %s\\n",
                  "--value-format", "auto", env=env)
    assert r.stdout.splitlines()[0] == '0 {"id":0,"item":"i0","qty":0,"note":null}'
    r = pylog_cmd("consume", topic, "-b", broker.bootstrap, "-e", "--from-beginning", "-J",
                  "--value-format", "avro", env=env)
    assert json.loads(r.stdout.splitlines()[1])["payload"] == values[1]


PROTO = """syntax = "proto3";
package inv;
message Item { string sku = 1; int32 count = 2; repeated string tags = 3; }
message Other { bool flag = 1; }
"""


def test_produce_protobuf_read_by_confluent(broker, tmp_path):
    topic = _topic()
    (tmp_path / "item.proto").write_text(PROTO)
    r = pylog_cmd("produce", topic, "-b", broker.bootstrap, "--value-format", "protobuf",
                  "--value-schema", str(tmp_path / "item.proto"), "--schema-registry", broker.schema_registry_url,
                  input='{"sku": "a", "count": 2, "tags": ["x"]}\n{"sku": "b", "count": "many"}\n')
    assert r.returncode == 1 and "line 2" in r.stderr
    raw = _consume_values(broker, topic)
    assert len(raw) == 1
    mod = protoc_module(tmp_path, {"inv/item.proto": PROTO}, "inv/item.proto")
    msg = ProtobufDeserializer(mod.Item, {"use.deprecated.format": False})(
        raw[0], SerializationContext(topic, MessageField.VALUE))
    assert (msg.sku, msg.count, list(msg.tags)) == ("a", 2, ["x"])
    r = pylog_cmd("produce", topic, "-b", broker.bootstrap, "--value-format", "protobuf", "--value-subject",
                  f"{topic}-value", "--value-message", "inv.Other", "--schema-registry", broker.schema_registry_url,
                  input='{"flag": true}\n')
    assert r.returncode == 0, r.stderr
    r = pylog_cmd("consume", topic, "-b", broker.bootstrap, "-e", "--from-beginning", "--json",
                  "--value-format", "protobuf", "--schema-registry", broker.schema_registry_url)
    assert [json.loads(x)["value"] for x in r.stdout.splitlines()] == \
        [{"sku": "a", "count": 2, "tags": ["x"]}, {"flag": True}]


def test_produce_json_schema(broker, tmp_path):
    topic = _topic()
    (tmp_path / "s.json").write_text(json.dumps({"type": "object", "properties": {"n": {"type": "integer"}},
                                                 "required": ["n"], "additionalProperties": False}))
    r = pylog_cmd("produce", topic, "-b", broker.bootstrap, "--format", "json", "--value-format", "json-schema",
                  "--value-schema", str(tmp_path / "s.json"), "--schema-registry", broker.schema_registry_url,
                  input='{"key": "k1", "value": {"n": 1}}\n{"value": {"n": "x"}}\n{"value": {"m": 1}}\n')
    assert r.returncode == 1
    assert "line 2" in r.stderr and "/n" in r.stderr and "line 3" in r.stderr
    raw = broker.consume(topic)
    assert len(raw) == 1 and raw[0].key == b"k1" and json.loads(raw[0].value[5:]) == {"n": 1}


def test_schemas_command(broker, tmp_path):
    url = broker.schema_registry_url
    subject = f"cli-{uuid.uuid4().hex[:8]}"
    (tmp_path / "v1.avsc").write_text(json.dumps(ORDER))
    bad = dict(ORDER, fields=[{"name": "id", "type": "string"}])
    (tmp_path / "bad.avsc").write_text(json.dumps(bad))
    r = pylog_cmd("schemas", "--schema-registry", url, "register", subject, str(tmp_path / "v1.avsc"), "--json")
    assert r.returncode == 0, r.stderr
    reg = json.loads(r.stdout)
    assert reg["version"] == 1 and reg["id"] >= 1

    def schemas(*args):  # answers read in this process (no interpreter start); exit codes, stderr: real ones
        return pylog_in_process("schemas", "--schema-registry", url, *args)

    assert subject in json.loads(schemas("list", "--json").stdout)
    got = json.loads(schemas("get", subject, "--json").stdout)
    assert got["id"] == reg["id"] and json.loads(got["schema"]) == ORDER
    assert json.loads(schemas("get", "--id", str(reg["id"]), "--json").stdout)["schema"] == got["schema"]
    assert json.loads(schemas("versions", subject, "--json").stdout) == [1]
    r = pylog_cmd("schemas", "--schema-registry", url, "check", subject, str(tmp_path / "bad.avsc"))
    assert r.returncode == 1 and "TYPE_MISMATCH" in r.stdout
    assert schemas("check", subject, str(tmp_path / "v1.avsc")).returncode == 0
    r = schemas("config", subject, "--set", "full", "--json")
    assert json.loads(r.stdout) == {"compatibility": "FULL"}
    assert schemas("config", subject).stdout.strip() == "FULL"
    r = schemas("mode", subject, "--set", "READONLY")
    assert r.stdout.strip() == "READONLY"
    r = pylog_cmd("schemas", "--schema-registry", url, "register", subject, str(tmp_path / "bad.avsc"))
    assert r.returncode == 1 and "42205" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert schemas("mode", subject, "--delete").returncode == 0
    assert json.loads(schemas("delete", subject, "--json").stdout) == [1]
    assert json.loads(schemas("delete", subject, "--permanent", "--json").stdout) == [1]
    r = pylog_cmd("schemas", "--schema-registry", url, "get", subject)
    assert r.returncode == 1 and "40401" in r.stderr
    r = pylog_cmd("schemas", "list")
    assert r.returncode == 2 and "--schema-registry" in r.stderr
    r = pylog_cmd("schemas", "--schema-registry", "http://127.0.0.1:1", "list")
    assert r.returncode == 1 and "no schema registry at" in r.stderr


def test_dump_segment_registry_decoder(broker, tmp_path):
    topic = _topic()
    sr = SchemaRegistryClient({"url": broker.schema_registry_url})
    values = [{"id": 7, "item": "dumped", "qty": 2, "note": None}]
    roundtrip(broker, topic, AvroSerializer(sr, json.dumps(ORDER)), AvroDeserializer(sr), values)
    seg = broker.log_dir / f"{topic}-0" / "00000000000000000000.log"
    r = pylog_cmd("dump-segment", "--value-decoder", "registry", "--schema-registry", broker.schema_registry_url,
                  str(seg))
    assert r.returncode == 0, r.stderr
    assert 'payload: {"id":7,"item":"dumped","qty":2,"note":null}' in r.stdout
    # the store topic itself is a Kafka topic dump-segment reads
    r = pylog_cmd("dump-segment", "--print-data-log", str(broker.log_dir / "_schemas-0" / "00000000000000000000.log"))
    assert '"keytype":"SCHEMA"' in r.stdout


def test_basic_auth(tmp_path):
    users = tmp_path / "users.txt"
    users.write_text("# operators\nalice:secret\nbob:hunter2,admin\n")
    with EmbeddedBroker(tmp_path / "data", schema_registry=True,
                        settings={"schema.registry.users.file": str(users)}) as b:
        url = b.schema_registry_url
        st, body, _ = rest(f"{url}/subjects")
        assert st == 401 and body["error_code"] == 401
        import base64

        good = {"Authorization": "Basic " + base64.b64encode(b"bob:hunter2").decode()}
        bad = {"Authorization": "Basic " + base64.b64encode(b"alice:wrong").decode()}
        assert rest(f"{url}/subjects", headers=good)[0] == 200
        assert rest(f"{url}/subjects", headers=bad)[0] == 401
        sr = SchemaRegistryClient({"url": url, "basic.auth.user.info": "alice:secret"})
        assert sr.register_schema("auth-value", __import__("confluent_kafka.schema_registry",
                                                           fromlist=["Schema"]).Schema(json.dumps(ORDER), "AVRO")) >= 1
        r = pylog_cmd("schemas", "--schema-registry", url, "--schema-registry-auth", "alice:secret", "list")
        assert r.returncode == 0 and "auth-value" in r.stdout
        host = url.split("//", 1)[1]
        r = pylog_cmd("schemas", "--schema-registry", f"http://alice:secret@{host}", "list")
        assert r.returncode == 0 and "auth-value" in r.stdout
        r = pylog_cmd("schemas", "--schema-registry", url, "list")
        assert r.returncode == 1 and "401" in r.stderr
        schema = tmp_path / "o.avsc"
        schema.write_text(json.dumps(ORDER))
        r = pylog_cmd("produce", "authed", "-b", b.bootstrap, "--value-format", "avro", "--value-schema", str(schema),
                      "-X", f"schema.registry.url={url}", "-X", "basic.auth.user.info=alice:secret",
                      input='{"id": 1, "item": "x"}\n')
        assert r.returncode == 0, r.stderr


def test_diff_compares_decoded_values(broker):
    """The same records under two schema ids differ as bytes and are equal decoded."""
    sr = SchemaRegistryClient({"url": broker.schema_registry_url})
    values = [{"id": i, "item": f"i{i}", "qty": 1, "note": None} for i in range(5)]
    a, b = _topic(), _topic()
    roundtrip(broker, a, AvroSerializer(sr, json.dumps(ORDER)), AvroDeserializer(sr), values)
    roundtrip(broker, b, AvroSerializer(sr, json.dumps(dict(ORDER, doc="v2"))), AvroDeserializer(sr), values)
    assert broker.consume(a)[0].value[1:5] != broker.consume(b)[0].value[1:5]
    r = pylog_cmd("diff", a, b, "-b", broker.bootstrap, "--ignore", "timestamp")
    assert r.returncode == 1 and "different" in r.stdout
    r = pylog_cmd("diff", a, b, "-b", broker.bootstrap, "--ignore", "timestamp", "--value-format", "auto",
                  "--schema-registry", broker.schema_registry_url, "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout)["equal"] is True
