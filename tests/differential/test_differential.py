"""The differential harness: every scenario of scenarios/*.py sent to Apache Kafka and to pylog
(same settings, principals and ACLs), answers compared after normalising what legitimately
differs (diff_runner.VOLATILE: ids, addresses, clocks, messages). A failure prints the request,
Kafka's answer and pylog's."""
from __future__ import annotations

import pytest

from support import broker_fixtures, kafka_peer  # noqa: F401 - tier marks: both brokers run here

from diff_runner import compare, load_scenarios, run

SCENARIOS = load_scenarios()


def _param(s: dict):
    """A scenario with a difference found and not yet fixed is an expected failure, named."""
    marks = [pytest.mark.xfail(reason=s["known"], strict=True)] if s.get("known") else []
    return pytest.param(s, id=s["name"], marks=marks)


@pytest.mark.parametrize("scenario", [_param(s) for s in SCENARIOS])
def test_same_answers(request, scenario):
    # a scenario names the transaction.version both brokers run at (default: each one's default, 2)
    peers = request.getfixturevalue("peers_tv1" if scenario.get("transaction_version") == 1 else "peers")
    kafka = run(peers["kafka"], scenario)
    pylog = run(peers["pylog"], scenario)
    problems = compare(scenario, kafka, pylog)
    assert not problems, "\n".join(problems)
