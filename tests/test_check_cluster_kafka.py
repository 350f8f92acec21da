"""`pylog check-cluster run --local kafka`: each workload against Apache Kafka 4.4.0 (the jars the
tests resolve with mvn, given as KAFKA_CLASSPATH) with kill -9 and pauses finds no anomaly."""
from __future__ import annotations

import os

import pytest

from support.check_cluster import WORKLOADS, assert_clean_with_faults, check
from support.kafka_peer import CLASSPATH_FILE, classpath


@pytest.mark.parametrize("workload", WORKLOADS)
def test_kafka_with_kill_and_pause(tmp_path, workload):
    classpath()  # resolved by mvn when missing
    env = dict(os.environ, KAFKA_CLASSPATH=str(CLASSPATH_FILE))
    env.pop("KAFKA_HOME", None)
    r, results, out = check(tmp_path, "-w", workload, "--local", "kafka", "--duration", 30, "--fault", "pause",
                            "--fault", "kill", "--fault-interval", 6, "--fault-hold", 2, "--rate", 40, env=env,
                            timeout=600)
    assert_clean_with_faults(r, results, out, faults=2)
    assert results["run"]["target"] == "local kafka"
