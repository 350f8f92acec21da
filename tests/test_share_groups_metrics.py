"""Share groups in the broker's /metrics: the share APIs' request counts, acknowledgements by type,
share groups by state, and per share-partition records in flight and lag."""
from __future__ import annotations

import urllib.request

from confluent_kafka import AcknowledgeType
from prometheus_client.parser import text_string_to_metric_families

from support import share_scenarios as sc
from support.broker_fixtures import BrokerProcess


def _scrape(b) -> dict:
    line = next(x for x in b.stdout_lines if x.strip().startswith("metrics: "))
    with urllib.request.urlopen(line.split()[1].rsplit("/", 1)[0] + "/metrics", timeout=10) as r:
        text = r.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for fam in text_string_to_metric_families(text) for s in fam.samples}


def test_share_metrics(tmp_path):
    b = BrokerProcess(tmp_path / "data", "--set", "metrics.listener=http://127.0.0.1:0").start(timeout=120)
    try:
        topic, group = sc.fresh(b.bootstrap, 10)
        sc.explicit_run(b.bootstrap, topic, group, 10,
                        lambda o, c: AcknowledgeType.REJECT if o == 0 else
                        AcknowledgeType.RELEASE if o == 1 and c == 1 else AcknowledgeType.ACCEPT,
                        lambda log: len(log) >= 11)
        m = _scrape(b)

        def s(name, **labels):
            return m.get((name, frozenset(labels.items())), 0.0)

        assert s("kafka_server_sharegroupmetrics_shareacknowledgement_total", ack_type="accept") == 9
        assert s("kafka_server_sharegroupmetrics_shareacknowledgement_total", ack_type="reject") == 1
        assert s("kafka_server_sharegroupmetrics_shareacknowledgement_total", ack_type="release") == 1
        assert s("kafka_server_sharegroupmetrics_recordsacquired_total") == 11
        assert s("kafka_coordinator_group_groupmetadatamanager_sharegroupcount", state="Empty") == 1
        assert s("kafka_sharegroup_lag", sharegroup=group, topic=topic, partition="0") == 0
        assert s("kafka_sharegroup_records_acquired", sharegroup=group, topic=topic, partition="0") == 0
        for api in ("ShareGroupHeartbeat", "ShareFetch", "ShareAcknowledge"):
            assert sum(v for (n, lb), v in m.items() if n == "kafka_network_requestmetrics_requests_total"
                       and ("request", api) in lb) >= 1, api
    finally:
        b.stop_clean()
