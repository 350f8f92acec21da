"""pytest fixtures for the Apache Kafka reference peer (see kafka_peer.py).

`kafka_node`: one KRaft node for the whole run (tests use topics of their own).
`kafka_cluster`: three broker-only nodes and a dedicated controller for the whole run (its
modules, test_kafka_cluster and test_mirror_maker_migration, make one xdist group, so it starts
once); a test calls `ensure_up()` first, as tests kill and restart its brokers on purpose.
`kafka_node` fails if its node died under a test or its controlled shutdown does not
complete; `kafka_cluster` stops its nodes.
"""
from __future__ import annotations

import pytest

from support.kafka_peer import KafkaCluster, KafkaNode


# KIP-848 consumer-group members heartbeat every second instead of every 5 s: each step of a
# reconciliation (assign, revoke, hand over) waits one interval, as on pylog's test brokers.
FAST_CONSUMER_GROUPS = {"group.consumer.heartbeat.interval.ms": 1000,
                        "group.consumer.min.heartbeat.interval.ms": 1000}
# Kafka's cleaner looks for dirty logs every second instead of every 15 s (log.cleaner.backoff.ms):
# tests that wait for it to clean a compacted topic (several rounds for markers) waited out each 15 s
FAST_CLEANER = {"log.cleaner.backoff.ms": 1000}


@pytest.fixture(scope="session")
def kafka_node(tmp_path_factory):
    node = KafkaNode(tmp_path_factory.mktemp("kafka-node"), overrides={**FAST_CONSUMER_GROUPS, **FAST_CLEANER}).format().start()
    yield node
    alive = node.proc.poll() is None
    rc = node.stop()
    assert alive, f"Apache Kafka node died during the run:\n{node.log_tail()}"
    # the JVM ends a completed SIGTERM shutdown with 128 + 15; a hung shutdown is killed (-9)
    assert rc == 143, f"Apache Kafka node exit code {rc} on SIGTERM:\n{node.log_tail()}"


# The cluster's brokers die and return under test_kafka_cluster: replicas fall out of the ISR after
# 5 s, preferred leaders are restored every second (a test waits for a returned broker to lead
# again), and a killed broker is fenced (its leaderships moved, its replicas out of the ISR) after
# 4.5 s without a heartbeat instead of 9 s
FAST_FAILOVER = {"replica.lag.time.max.ms": 5000,
                 "leader.imbalance.check.interval.seconds": 1,
                 "broker.heartbeat.interval.ms": 1000,
                 "broker.session.timeout.ms": 4500,
                 # __consumer_offsets in 5 partitions instead of 50: with 3 replicas each, its 150
                 # replicas were created on the first group, recovered after every kill -9 and moved
                 # (leaders, ISR) on every stop and restart, for tests that use a few groups
                 "offsets.topic.num.partitions": 5}


@pytest.fixture(scope="session")
def kafka_cluster(tmp_path_factory):
    """Three brokers and a dedicated controller, so two brokers can be down without the cluster
    losing its metadata quorum."""
    cluster = KafkaCluster(tmp_path_factory.mktemp("kafka-cluster"), 3, dedicated_controller=True,
                           overrides=FAST_FAILOVER).start()
    yield cluster
    cluster.stop()
