"""The differential harness: every scenario of scenarios/*.py sent to Apache Kafka and to pylog
(same settings, principals and ACLs), answers compared after normalising what legitimately
differs (diff_runner.VOLATILE: ids, addresses, clocks, messages). A failure prints the request,
Kafka's answer and pylog's."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from support import broker_fixtures, kafka_peer  # noqa: F401 - tier marks: both brokers run here

from diff_runner import compare, load_scenarios, run

SCENARIOS = load_scenarios()
# Kafka's side of a scenario runs in this thread while pylog's runs in the test's: the two brokers
# are independent, and a scenario's time is mostly round trips and waits on broker clocks
KAFKA_SIDE = ThreadPoolExecutor(1, thread_name_prefix="kafka-side")


def _param(s: dict):
    """A scenario with a difference found and not yet fixed is an expected failure, named."""
    marks = [pytest.mark.xfail(reason=s["known"], strict=True)] if s.get("known") else []
    return pytest.param(s, id=s["name"], marks=marks)


@pytest.mark.parametrize("scenario", [_param(s) for s in SCENARIOS])
def test_same_answers(request, peers, scenario):
    # a scenario names the transaction.version both brokers run at (default: each one's default, 2);
    # `peers` is named, so these tests share the parity modules' pair (one xdist group)
    if scenario.get("transaction_version") == 1:
        peers = request.getfixturevalue("peers_tv1")
    kafka_side = KAFKA_SIDE.submit(run, peers["kafka"], scenario)
    pylog = run(peers["pylog"], scenario)
    kafka = kafka_side.result()
    problems = compare(scenario, kafka, pylog)
    assert not problems, "\n".join(problems)
