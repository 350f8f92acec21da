"""`pylog spark-ingest --value-format`: rows encoded with a registry schema on the executors,
read back with confluent-kafka's AvroDeserializer (produce mode) and pylog's decoder (segments)."""
from __future__ import annotations

import json

import pytest

from pylog.testing import EmbeddedBroker
from support.spark_fixtures import local_only, run_pylog
from support.spark_rows import read_partition_dir

pytest.importorskip("confluent_kafka")
from confluent_kafka.schema_registry import SchemaRegistryClient  # noqa: E402
from confluent_kafka.schema_registry.avro import AvroDeserializer  # noqa: E402
from confluent_kafka.serialization import MessageField, SerializationContext  # noqa: E402

SCHEMA = {"type": "record", "name": "Event", "fields": [{"name": "user", "type": "string"},
                                                         {"name": "n", "type": "long"}]}
ROWS = [{"user": f"u{i % 5}", "n": i} for i in range(200)]


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    with EmbeddedBroker(tmp_path_factory.mktemp("spark-registry") / "data", schema_registry=True) as b:
        yield b


@pytest.mark.timeout(1800)  # three Spark jobs on a shared 2-core machine
def test_ingest_avro_produce_and_segments(spark_master, kafka, tmp_path):
    src = tmp_path / "events.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (tmp_path / "event.avsc").write_text(json.dumps(SCHEMA))
    topic = f"ev-{spark_master[:7].replace('[', '')}"
    run_pylog("spark-ingest", src, "-t", topic, "-b", kafka.bootstrap, "--partitions", 2, "--key-column", "user",
              "--master", spark_master, "--value-format", "avro", "--value-schema", tmp_path / "event.avsc",
              "--schema-registry", kafka.schema_registry_url, "--json")
    sr = SchemaRegistryClient({"url": kafka.schema_registry_url})
    deser = AvroDeserializer(sr)
    got = [deser(r.value, SerializationContext(topic, MessageField.VALUE)) for r in kafka.consume(topic)]
    assert sorted(got, key=lambda r: r["n"]) == ROWS
    # segments mode: the same encoding into a log dir, with the subject's latest version
    log_dir = tmp_path / "logs"
    run_pylog("spark-ingest", src, "-t", "seg", "--mode", "segments", "--log-dir", log_dir, "--partitions", 1,
              "--master", spark_master, "--value-format", "avro", "--value-subject", f"{topic}-value",
              "--schema-registry", kafka.schema_registry_url, "--json")
    from pylog.core.client.schema_registry import Deserializer, RegistryClient

    dec = Deserializer(RegistryClient(kafka.schema_registry_url))
    assert [dec.decode(r[2]) for r in read_partition_dir(log_dir / "seg-0")] == ROWS
    # a row that does not match fails the job with the row named
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"user": "x", "n": "not a number"}\n')
    res = run_pylog("spark-ingest", bad, "-t", topic, "-b", kafka.bootstrap, "--master", spark_master,
                    "--value-format", "avro", "--value-subject", f"{topic}-value",
                    "--schema-registry", kafka.schema_registry_url, expect=1)
    assert "does not match the value schema" in res.output + res.stderr


@pytest.mark.timeout(1800)  # four Spark jobs on a shared 2-core machine
def test_spark_diff_decodes(spark_master, kafka, tmp_path):
    """diff --spark --value-format: the same rows under two schema ids are equal decoded."""
    src = tmp_path / "events.jsonl"
    src.write_text("".join(json.dumps(r) + "\n" for r in ROWS[:50]))
    tag = spark_master[:7].replace("[", "")
    for name, schema in ((f"da-{tag}", SCHEMA), (f"db-{tag}", dict(SCHEMA, doc="another id"))):
        (tmp_path / f"{name}.avsc").write_text(json.dumps(schema))
        run_pylog("spark-ingest", src, "-t", name, "-b", kafka.bootstrap, "--partitions", 1, "--tasks", 1,
                  "--master", spark_master, "--value-format", "avro", "--value-schema", tmp_path / f"{name}.avsc",
                  "--schema-registry", kafka.schema_registry_url)
    args = ["diff", f"da-{tag}", f"db-{tag}", "-b", kafka.bootstrap, "--ignore", "timestamp", "--spark",
            "--master", spark_master, "--json"]
    assert json.loads(run_pylog(*args, expect=1).stdout)["equal"] is False
    doc = json.loads(run_pylog(*args, "--value-format", "auto", "--schema-registry", kafka.schema_registry_url).stdout)
    assert doc["equal"] is True


@local_only  # the hottest values are decoded on the driver; the pylog data source plans on local masters only
@pytest.mark.timeout(1800)
def test_spark_compaction_decodes_the_hottest_values(spark_master, kafka, tmp_path):
    """spark-compaction --schema-registry: each hottest key's latest value (what compaction keeps),
    written by confluent-kafka's AvroSerializer, decoded to what was serialised."""
    from confluent_kafka import Producer
    from confluent_kafka.schema_registry.avro import AvroSerializer

    topic = f"hot-{spark_master[:7].replace('[', '')}"
    kafka.create_topic(topic, 1, {"cleanup.policy": "compact"})
    ser = AvroSerializer(SchemaRegistryClient({"url": kafka.schema_registry_url}), json.dumps(SCHEMA))
    p = Producer({"bootstrap.servers": kafka.bootstrap, "linger.ms": 5})
    latest = {}
    for i in range(90):
        user = f"user-{i % 3}" if i % 2 else f"cold-{i}"
        row = {"user": user, "n": i}
        latest[user] = row
        p.produce(topic, key=user, value=ser(row, SerializationContext(topic, MessageField.VALUE)))
    assert p.flush(30) == 0
    args = ["spark-compaction", kafka.log_dir, "--topic", topic, "--top-keys", 3, "--master", spark_master, "--json"]
    plain = json.loads(run_pylog(*args).stdout)["partitions"][0]["hottest_keys"]
    assert [k["key"] for k in plain] == ["user-0", "user-1", "user-2"] and "latest_value" not in plain[0]
    doc = json.loads(run_pylog(*args, "--schema-registry", kafka.schema_registry_url).stdout)
    hot = doc["partitions"][0]["hottest_keys"]
    assert {k["key"]: json.loads(k["latest_value"]) for k in hot} == {u: latest[u] for u in ("user-0", "user-1",
                                                                                              "user-2")}
    assert doc["values_decoded_with"] == kafka.schema_registry_url.rstrip("/")
    # spark-export --value-format registry: every value decoded on the executors, as serialised
    import pyarrow.dataset as pads

    run_pylog("spark-export", topic, "--from-dir", kafka.log_dir, "-o", tmp_path / "table", "--key-format", "utf8",
              "--value-format", "registry", "--schema-registry", kafka.schema_registry_url, "--master", spark_master,
              "--json")
    rows = pads.dataset(tmp_path / "table").to_table().sort_by("offset").to_pylist()
    assert [json.loads(r["value"]) for r in rows] == [
        {"user": f"user-{i % 3}" if i % 2 else f"cold-{i}", "n": i} for i in range(90)]
