"""pylog's own clients against Apache Kafka 4.3.1 over SASL_SSL (SCRAM) and TLS.

The Kafka node gets a SASL_SSL listener beside its PLAINTEXT one, a PEM
keystore from security_fixtures, and SCRAM users created by
`kafka-storage format --add-scram`, the same option format pylog's
`broker start --add-scram` takes.
"""
from __future__ import annotations

import pytest

from support.kafka_peer import KafkaNode, free_port
from pylog.core.client import Consumer, Producer, TopicPartition
from pylog.core.client.admin import Admin
from pylog.core.client.errors import NoBrokersAvailableError
from support.security_fixtures import pki  # noqa: F401 - fixture

USER, PASSWORD = "alice", "alice-secret"


@pytest.fixture(scope="module")
def kafka_sasl(tmp_path_factory, pki):
    sport = free_port()
    node = KafkaNode(tmp_path_factory.mktemp("kafka-sasl"), format_args=(
        "--add-scram", f"SCRAM-SHA-256=[name={USER},password={PASSWORD}]",
        "--add-scram", f"SCRAM-SHA-512=[name={USER},password={PASSWORD}]"))
    scram_jaas = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    node.overrides.update({
        "listeners": f"PLAINTEXT://127.0.0.1:{node.port},CONTROLLER://127.0.0.1:{node.controller_port},"
                     f"SASL_SSL://127.0.0.1:{sport}",
        "advertised.listeners": f"PLAINTEXT://127.0.0.1:{node.port},SASL_SSL://127.0.0.1:{sport}",
        "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
        "sasl.enabled.mechanisms": "SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": scram_jaas,
        "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": scram_jaas,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.server_keystore),
    })
    node.format().start()
    node.sasl_bootstrap = f"127.0.0.1:{sport}"
    yield node
    node.stop()


def _conf(node, pki, mechanism="SCRAM-SHA-512", **extra):
    conf = {"bootstrap.servers": node.sasl_bootstrap, "security.protocol": "SASL_SSL", "sasl.mechanism": mechanism,
            "sasl.username": USER, "sasl.password": PASSWORD, "ssl.ca.location": str(pki.ca)}
    conf.update(extra)
    return conf


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_pylog_producer_consumer_against_kafka_sasl_ssl(kafka_sasl, pki, mechanism):
    topic = f"pylog-{mechanism.lower()}"
    with Producer(_conf(kafka_sasl, pki, mechanism)) as p:
        for i in range(5):
            p.send(topic, f"v{i}".encode(), key=b"k").get(30)
    # Java's names: sasl.jaas.config and a PEM truststore
    jaas = (f'org.apache.kafka.common.security.scram.ScramLoginModule required username="{USER}" '
            f'password="{PASSWORD}";')
    c = Consumer({"bootstrap.servers": kafka_sasl.sasl_bootstrap, "security.protocol": "SASL_SSL",
                  "sasl.mechanism": mechanism, "sasl.jaas.config": jaas, "ssl.truststore.type": "PEM",
                  "ssl.truststore.location": str(pki.ca), "auto.offset.reset": "earliest"})
    try:
        c.assign([TopicPartition(topic, 0)])
        got = []
        for _ in range(60):
            for recs in c.poll(500).values():
                got += [r.value for r in recs]
            if len(got) >= 5:
                break
        assert got == [f"v{i}".encode() for i in range(5)]
    finally:
        c.close()


def test_pylog_admin_wrong_password_against_kafka(kafka_sasl, pki):
    with pytest.raises(NoBrokersAvailableError) as e:
        with Admin(_conf(kafka_sasl, pki, **{"sasl.password": "wrong", "request.timeout.ms": 10000})) as a:
            a.list_topics()
    # Kafka's own words, as pylog's broker says them
    assert ("Authentication failed during authentication due to invalid credentials with SASL mechanism "
            "SCRAM-SHA-512") in str(e.value)
