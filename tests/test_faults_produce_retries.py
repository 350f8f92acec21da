"""Produce through a fault, with librdkafka (confluent-kafka) and with pylog's producer: every
value is stored exactly once after the client's retries (not-leader, written but timed out, a
closed connection, no answer), and a delayed answer arrives late."""
from __future__ import annotations

import pytest

from support.fault_clients import (  # noqa: F401
    kafka, no_rules_left, produce_confluent, produce_pylog, produce_through_fault,
)

# the request timeout each client is given where the broker never answers
CLIENTS = {
    "ck": (produce_confluent, {"socket.timeout.ms": 2000, "request.timeout.ms": 2000}),
    "py": (produce_pylog, {"request.timeout.ms": 2000}),
}


@pytest.fixture(params=sorted(CLIENTS), ids=["confluent-kafka", "pylog"])
def client(request):
    """(topic prefix, produce function, request-timeout config) of one client."""
    produce, timeouts = CLIENTS[request.param]
    return request.param, produce, timeouts


def test_not_leader_is_retried_without_duplicates(kafka, client):
    pre, produce, _ = client
    rule, _ = produce_through_fault(kafka, produce, f"{pre}-nl", 20, error="NOT_LEADER_OR_FOLLOWER", count=3)
    assert rule.hits == 3


def test_written_but_timed_out_is_retried_without_duplicates(kafka, client):
    pre, produce, _ = client
    # the first write was kept, its retry deduplicated
    rule, _ = produce_through_fault(kafka, produce, f"{pre}-rto", 10, error="REQUEST_TIMED_OUT", after_handling=True,
                                    count=1)
    assert rule.hits == 1


@pytest.mark.parametrize("after", [False, True], ids=["before", "after-handling"])
def test_closed_connection_is_retried_without_duplicates(kafka, client, after):
    pre, produce, _ = client
    rule, _ = produce_through_fault(kafka, produce, f"{pre}-close-{int(after)}", 10, close=True, after_handling=after,
                                    count=1)
    assert rule.hits == 1


def test_no_answer_times_out_and_is_retried_without_duplicates(kafka, client):
    pre, produce, timeouts = client
    rule, took = produce_through_fault(kafka, produce, f"{pre}-drop", 5, conf=timeouts, no_answer=True,
                                       after_handling=True, count=1)
    assert rule.hits == 1
    assert max(took) >= 1.5  # the client waited for its request timeout


def test_delayed_answer_arrives_late(kafka, client):
    pre, produce, _ = client
    rule, took = produce_through_fault(kafka, produce, f"{pre}-delay", 1, delay_ms=1500, count=1)
    assert rule.hits == 1 and took[0] >= 1.4
