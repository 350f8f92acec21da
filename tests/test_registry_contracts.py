"""Schema GUIDs and data contracts against the broker's registry and the standalone one, driven by
confluent-kafka's registry client, serialisers and rule executors: a header-GUID round trip, a
CEL condition rule refusing a bad record, a JSONata migration rule reading an old major version as
the new one, a field encrypted with the local KMS read back (its DEK in the DEK registry); metadata and rule sets stored, versioned and looked up as Confluent does."""
from __future__ import annotations

import json
import uuid

import pytest

from pylog.registry.service import SchemaRegistryService
from pylog.testing import EmbeddedBroker
from support.registry import rest

pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, Producer  # noqa: E402
from confluent_kafka.schema_registry import (  # noqa: E402
    Metadata, MetadataProperties, Rule, RuleKind, RuleMode, RuleSet, Schema, SchemaRegistryClient,
    dual_schema_id_deserializer, header_schema_id_serializer,
)
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext, SerializationError  # noqa: E402

USER = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"},
                                                     {"name": "age", "type": "int"}]}


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    with EmbeddedBroker(tmp_path_factory.mktemp("contracts"), schema_registry=True) as b:
        yield b


@pytest.fixture(scope="module", params=["in-broker", "standalone"])
def registry(request, broker):
    if request.param == "in-broker":
        yield broker.schema_registry_url
        return
    svc = SchemaRegistryService({"bootstrap.servers": broker.bootstrap}, ["http://127.0.0.1:0"],
                                topic="_schemas_standalone").start()
    try:
        yield svc.url
    finally:
        svc.stop()


def _subject() -> str:
    return f"t-{uuid.uuid4().hex[:10]}-value"


def _roundtrip(broker, topic, ser, deser, values):
    """Produce through `ser` (headers kept), consume back through `deser`: [(headers, value)]."""
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for v in values:
        headers: list = []
        payload = ser(v, SerializationContext(topic, MessageField.VALUE, headers))
        p.produce(topic, value=payload, headers=headers)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-" + uuid.uuid4().hex[:8],
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = []
    import time

    deadline = time.monotonic() + 60
    while len(got) < len(values) and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        headers = m.headers() or []
        got.append((headers, deser(m.value(), SerializationContext(m.topic(), MessageField.VALUE, headers))))
    c.close()
    return got


def test_guid_in_answers_and_by_guid_lookup(registry):
    s = _subject()
    st, body, _ = rest(f"{registry}/subjects/{s}/versions", "POST", {"schema": json.dumps(USER)})
    assert st == 200 and isinstance(body["guid"], str) and str(uuid.UUID(body["guid"])) == body["guid"]
    sid, guid = body["id"], body["guid"]
    st, got, _ = rest(f"{registry}/schemas/guids/{guid}")
    assert st == 200 and got["id"] == sid and json.loads(got["schema"]) == USER and got["guid"] == guid
    assert rest(f"{registry}/schemas/ids/{sid}")[1]["guid"] == guid
    assert rest(f"{registry}/subjects/{s}/versions/1")[1]["guid"] == guid
    st, err, _ = rest(f"{registry}/schemas/guids/{uuid.uuid4()}")
    assert (st, err["error_code"]) == (404, 40403)
    sr = SchemaRegistryClient({"url": registry})
    assert json.loads(sr.get_schema_by_guid(guid).schema_str) == USER


def test_header_guid_round_trip(broker, registry):
    sr = SchemaRegistryClient({"url": registry})
    topic = f"guid-{uuid.uuid4().hex[:8]}"
    ser = AvroSerializer(sr, json.dumps(USER), conf={"schema.id.serializer": header_schema_id_serializer})
    deser = AvroDeserializer(SchemaRegistryClient({"url": registry}),
                             conf={"schema.id.deserializer": dual_schema_id_deserializer})
    # payloads over 5 bytes: the 2.16 deserialiser refuses shorter ones even when the GUID is in a header
    values = [{"name": "annabelle", "age": 30}, {"name": "bobby-joe", "age": 41}]
    got = _roundtrip(broker, topic, ser, deser, values)
    assert [v for _, v in got] == values
    guid = rest(f"{registry}/subjects/{topic}-value/versions/latest")[1]["guid"]
    for headers, _ in got:
        raw = dict(headers)["__value_schema_id"]
        assert raw[0] == 1 and str(uuid.UUID(bytes=bytes(raw[1:17]))) == guid  # magic byte 1, then the GUID


def test_metadata_and_rule_set_are_versioned(registry):
    s = _subject()
    text = json.dumps(USER)
    md1 = {"properties": {"owner": "team-a"}}
    rules = {"domainRules": [{"name": "checkAge", "kind": "CONDITION", "mode": "WRITE", "type": "CEL",
                              "expr": "message.age >= 0"}]}
    v1 = rest(f"{registry}/subjects/{s}/versions", "POST", {"schema": text, "metadata": md1})[1]
    # the same schema and contract again: the same version
    assert rest(f"{registry}/subjects/{s}/versions", "POST", {"schema": text, "metadata": md1})[1]["id"] == v1["id"]
    # only the rule set added: a new version, the metadata inherited from the latest one
    v2 = rest(f"{registry}/subjects/{s}/versions", "POST", {"schema": text, "ruleSet": rules})[1]
    assert v2["id"] != v1["id"]
    latest = rest(f"{registry}/subjects/{s}/versions/latest")[1]
    assert latest["version"] == 2 and latest["metadata"] == md1 and latest["ruleSet"] == rules
    # no contract named: both inherited, nothing new
    assert rest(f"{registry}/subjects/{s}/versions", "POST", {"schema": text})[1]["id"] == v2["id"]
    v3 = rest(f"{registry}/subjects/{s}/versions", "POST",
              {"schema": text, "metadata": {"properties": {"owner": "team-b"}}})[1]
    assert rest(f"{registry}/subjects/{s}/versions")[1] == [1, 2, 3]
    # the subject metadata lookup: the latest version with those properties
    st, got, _ = rest(f"{registry}/subjects/{s}/metadata?key=owner&value=team-a")
    assert st == 200 and got["version"] == 2 and got["id"] == v2["id"]
    assert rest(f"{registry}/subjects/{s}/metadata?key=owner&value=team-b")[1]["id"] == v3["id"]
    assert rest(f"{registry}/subjects/{s}/metadata?key=owner&value=nobody")[1]["error_code"] == 40403
    sr = SchemaRegistryClient({"url": registry})
    rs = sr.get_latest_with_metadata(s, {"owner": "team-a"})
    assert rs.version == 2 and rs.schema.rule_set.domain_rules[0].name == "checkAge"


def test_config_defaults_and_overrides(registry):
    s = _subject()
    st, body, _ = rest(f"{registry}/config/{s}", "PUT", {
        "defaultMetadata": {"properties": {"owner": "default-team", "tier": "bronze"}},
        "overrideMetadata": {"properties": {"tier": "gold"}},
        "overrideRuleSet": {"domainRules": [{"name": "always", "kind": "CONDITION", "mode": "WRITE",
                                             "type": "CEL", "expr": "true"}]}})
    assert st == 200, body
    cfg = rest(f"{registry}/config/{s}")[1]
    assert cfg["defaultMetadata"]["properties"]["owner"] == "default-team" and cfg["compatibilityLevel"]
    rest(f"{registry}/subjects/{s}/versions", "POST",
         {"schema": json.dumps(USER), "metadata": {"properties": {"owner": "me", "tier": "silver"}}})
    got = rest(f"{registry}/subjects/{s}/versions/latest")[1]
    assert got["metadata"]["properties"] == {"owner": "me", "tier": "gold"}  # the override wins
    assert [r["name"] for r in got["ruleSet"]["domainRules"]] == ["always"]


def test_cel_condition_rule_refuses_a_bad_record(broker, registry):
    from confluent_kafka.schema_registry.rules.cel.cel_executor import CelExecutor

    CelExecutor.register()
    sr = SchemaRegistryClient({"url": registry})
    topic = f"cel-{uuid.uuid4().hex[:8]}"
    rule = Rule("checkAge", "", RuleKind.CONDITION, RuleMode.WRITE, "CEL", None, None, "message.age >= 0",
                None, None, False)
    sr.register_schema(f"{topic}-value", Schema(json.dumps(USER), "AVRO", [], None, RuleSet(None, [rule])))
    ser = AvroSerializer(sr, None, conf={"auto.register.schemas": False, "use.latest.version": True})
    ctx = SerializationContext(topic, MessageField.VALUE)
    assert ser({"name": "ok", "age": 5}, ctx)[0] == 0
    with pytest.raises(SerializationError) as refused:
        ser({"name": "bad", "age": -1}, ctx)
    from confluent_kafka.schema_registry.serde import RuleConditionError

    assert isinstance(refused.value.__cause__, RuleConditionError) and "message.age >= 0" in str(refused.value.__cause__)


def test_jsonata_migration_reads_an_old_major_version_as_the_new_one(broker, registry):
    from confluent_kafka.schema_registry.rules.jsonata.jsonata_executor import JsonataExecutor

    JsonataExecutor.register()
    sr = SchemaRegistryClient({"url": registry})
    topic = f"mig-{uuid.uuid4().hex[:8]}"
    subject = f"{topic}-value"
    assert rest(f"{registry}/config/{subject}", "PUT",
                {"compatibility": "BACKWARD", "compatibilityGroup": "major_version"})[0] == 200
    v1 = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"},
                                                       {"name": "size", "type": "string"}]}
    v2 = {"type": "record", "name": "User", "fields": [{"name": "name", "type": "string"},
                                                       {"name": "height", "type": "string"}]}
    sr.register_schema(subject, Schema(json.dumps(v1), "AVRO", [], Metadata(None, MetadataProperties(
        {"major_version": "1"}), None), None))
    upgrade = Rule("rename", "", RuleKind.TRANSFORM, RuleMode.UPGRADE, "JSONATA", None, None,
                   "$merge([$sift($, function($v, $k) {$k != 'size'}), {'height': $.'size'}])", None, None, False)
    # incompatible with v1 under BACKWARD, but another compatibility group (major version 2)
    sr.register_schema(subject, Schema(json.dumps(v2), "AVRO", [], Metadata(None, MetadataProperties(
        {"major_version": "2"}), None), RuleSet([upgrade], None)))
    assert rest(f"{registry}/subjects/{subject}/versions")[1] == [1, 2]
    ser = AvroSerializer(sr, None, conf={"auto.register.schemas": False, "use.latest.version": False,
                                         "use.latest.with.metadata": {"major_version": "1"}})
    deser = AvroDeserializer(SchemaRegistryClient({"url": registry}),
                             conf={"use.latest.version": False, "use.latest.with.metadata": {"major_version": "2"}})
    got = _roundtrip(broker, topic, ser, deser, [{"name": "ann", "size": "tall"}])
    assert [v for _, v in got] == [{"name": "ann", "height": "tall"}]


def test_encrypted_field_with_the_local_kms_is_read_back(broker, registry):
    from confluent_kafka.schema_registry import RuleParams
    from confluent_kafka.schema_registry.rules.encryption.encrypt_executor import FieldEncryptionExecutor
    from confluent_kafka.schema_registry.rules.encryption.localkms.local_driver import LocalKmsDriver

    from confluent_kafka.schema_registry.rule_registry import RuleRegistry

    LocalKmsDriver.register()
    rules = RuleRegistry()  # an executor of its own: one is bound to the first registry it is configured with
    rules.register_executor(FieldEncryptionExecutor())
    sr = SchemaRegistryClient({"url": registry})
    topic = f"enc-{uuid.uuid4().hex[:8]}"
    schema = {"type": "record", "name": "Person", "fields": [
        {"name": "name", "type": "string"}, {"name": "ssn", "type": "string", "confluent:tags": ["PII"]}]}
    kek = f"kek-{uuid.uuid4().hex[:6]}"
    rule = Rule("encryptPII", "", RuleKind.TRANSFORM, RuleMode.WRITEREAD, "ENCRYPT", ["PII"],
                RuleParams({"encrypt.kek.name": kek, "encrypt.kms.type": "local-kms",
                            "encrypt.kms.key.id": "mykey"}), None, None, "ERROR,NONE", False)
    sr.register_schema(f"{topic}-value", Schema(json.dumps(schema), "AVRO", [], None, RuleSet(None, [rule])))
    conf = {"secret": "a-test-secret-of-32-bytes-or-so!"}
    ser = AvroSerializer(sr, None, conf={"auto.register.schemas": False, "use.latest.version": True},
                         rule_conf=conf, rule_registry=rules)
    deser = AvroDeserializer(sr, rule_conf=conf, rule_registry=rules)
    values = [{"name": "ann", "ssn": "123-45-6789"}, {"name": "bob", "ssn": "987-65-4321"}]
    p = Producer({"bootstrap.servers": broker.bootstrap})
    for v in values:
        payload = ser(dict(v), SerializationContext(topic, MessageField.VALUE))  # the executor seals in place
        assert v["ssn"].encode() not in payload and v["name"].encode() in payload  # only the PII field is sealed
        p.produce(topic, value=payload)
    assert p.flush(30) == 0
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "g-" + uuid.uuid4().hex[:8],
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    read = []
    import time

    deadline = time.monotonic() + 60
    while len(read) < len(values) and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            read.append(deser(m.value(), SerializationContext(topic, MessageField.VALUE)))
    c.close()
    assert read == values
    # the DEK the executor made is in the registry, wrapped (never in the clear)
    st, dek, _ = rest(f"{registry}/dek-registry/v1/keks/{kek}/deks/{topic}-value/versions/1?algorithm=AES256_GCM")
    assert st == 200 and dek["encryptedKeyMaterial"] and "keyMaterial" not in dek
    assert rest(f"{registry}/dek-registry/v1/keks/{kek}")[1]["kmsType"] == "local-kms"
