"""The differential harness: every scenario of scenarios/*.py sent to Apache Kafka and to pylog
(same settings, principals and ACLs), answers compared after normalising what legitimately
differs (diff_runner.VOLATILE: ids, addresses, clocks, messages). A failure prints the request,
Kafka's answer and pylog's."""
from __future__ import annotations

import pytest

from support import broker_fixtures, kafka_peer  # noqa: F401 - tier marks: both brokers run here

from diff_runner import compare, load_scenarios, run

SCENARIOS = load_scenarios()


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s["name"] for s in SCENARIOS])
def test_same_answers(peers, scenario):
    kafka = run(peers["kafka"], scenario)
    pylog = run(peers["pylog"], scenario)
    problems = compare(scenario, kafka, pylog)
    assert not problems, "\n".join(problems)
