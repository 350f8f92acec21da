"""Brokers for the share-group tests: one pylog broker and one Apache Kafka 4.4 node for the run,
with the same settings (acquisition locks may be as short as 1 s, for the lock-timeout tests).
Kafka 4.4 formats new clusters with share.version 2: share groups and their dead-letter topics are on."""
from __future__ import annotations

import pytest

from support.broker_fixtures import BrokerProcess
from support.kafka_peer import KafkaNode

BROKER_SETTINGS = {"group.share.min.record.lock.duration.ms": "1000",
                   "group.share.min.heartbeat.interval.ms": "1000", "group.share.heartbeat.interval.ms": "1000"}


@pytest.fixture(scope="session")
def share_pylog(tmp_path_factory):
    extra = [a for k, v in BROKER_SETTINGS.items() for a in ("--set", f"{k}={v}")]
    b = BrokerProcess(tmp_path_factory.mktemp("share") / "data", *extra).start(timeout=120)
    yield b
    b.stop_clean()


@pytest.fixture(scope="session")
def share_kafka(tmp_path_factory):
    node = KafkaNode(tmp_path_factory.mktemp("kafka-share"), overrides=BROKER_SETTINGS).format().start()
    yield node
    alive = node.proc.poll() is None
    node.stop()
    assert alive, f"Apache Kafka node died during the run:\n{node.log_tail()}"


@pytest.fixture(scope="session")
def share_brokers(share_pylog, share_kafka):
    """{"pylog": bootstrap, "kafka": bootstrap}."""
    return {"pylog": share_pylog.bootstrap, "kafka": share_kafka.bootstrap}
