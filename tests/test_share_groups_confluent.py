"""Share groups (KIP-932) with confluent-kafka 2.16.1's ShareConsumer, on pylog and on Apache Kafka
4.4 in the same test: the same scenario on both brokers must give the same outcome (which records
each acknowledgement type ends with, and their delivery counts)."""
from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import AcknowledgeType

import share_scenarios as sc
from broker_fixtures import BrokerProcess
from kafka_peer import KafkaNode

ACCEPT, RELEASE, REJECT = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT
# short acquisition locks for the lock-timeout test need a lower floor than Kafka's 15 s
BROKER_SETTINGS = {"group.share.min.record.lock.duration.ms": "1000"}


@pytest.fixture(scope="module")
def pylog_broker(tmp_path_factory):
    extra = [a for k, v in BROKER_SETTINGS.items() for a in ("--set", f"{k}={v}")]
    b = BrokerProcess(tmp_path_factory.mktemp("share") / "data", *extra).start()
    yield b
    b.stop_clean()


@pytest.fixture(scope="module")
def kafka_share_node(tmp_path_factory):
    node = KafkaNode(tmp_path_factory.mktemp("kafka-share"), overrides=BROKER_SETTINGS).format().start()
    yield node
    node.stop()


@pytest.fixture(scope="module")
def brokers(pylog_broker, kafka_share_node):
    return {"pylog": pylog_broker.bootstrap, "kafka": kafka_share_node.bootstrap}


def _on_both(brokers, scenario):
    """Run `scenario(bootstrap)` on pylog and on Kafka at once; {"pylog": result, "kafka": result}."""
    out, errors = {}, []

    def run(which):
        try:
            out[which] = scenario(brokers[which])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append((which, e))

    threads = [threading.Thread(target=run, args=(w,)) for w in brokers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not errors, errors
    return out


def _fresh(bootstrap, n, partitions=1, **group_configs):
    topic, group = sc.name("share-t"), sc.name("share-g")
    sc.create_topic(bootstrap, topic, partitions)
    sc.set_group_configs(bootstrap, group, share_auto_offset_reset="earliest", **group_configs)
    sc.produce(bootstrap, topic, n, partitions)
    return topic, group


def test_several_consumers_accept_every_record_exactly_once(brokers):
    n = 300

    def scenario(bs):
        topic, group = _fresh(bs, n)
        return sc.accept_all(bs, topic, group, n, consumers=3)

    for which, seen in _on_both(brokers, scenario).items():
        offsets = sorted(o for recs in seen.values() for _, o, _ in recs)
        assert offsets == list(range(n)), which
        assert {c for recs in seen.values() for _, _, c in recs} == {1}, which


def test_several_consumers_several_partitions(brokers):
    n = 240

    def scenario(bs):
        topic, group = _fresh(bs, n, partitions=3)
        return sc.accept_all(bs, topic, group, n, consumers=4)

    for which, seen in _on_both(brokers, scenario).items():
        got = sorted((p, o) for recs in seen.values() for p, o, _ in recs)
        assert got == sorted((p, o) for p in range(3) for o in range(n // 3)), which


def test_release_redelivers_with_the_next_delivery_count(brokers):
    def scenario(bs):
        topic, group = _fresh(bs, 10)
        return sc.explicit_run(bs, topic, group, 10,
                               lambda o, c: RELEASE if o == 4 and c == 1 else ACCEPT,
                               lambda log: len(sc.accepted(log)) >= 10)

    results = _on_both(brokers, scenario)
    for which, log in results.items():
        assert sc.accepted(log) == list(range(10)), which
        assert [(c, t) for o, c, t in log if o == 4] == [(1, RELEASE), (2, ACCEPT)], which
    assert sorted(results["pylog"]) == sorted(results["kafka"])


def test_reject_archives(brokers):
    def scenario(bs):
        topic, group = _fresh(bs, 10)
        first = sc.explicit_run(bs, topic, group, 10, lambda o, c: REJECT if o == 3 else ACCEPT,
                                lambda log: len(log) >= 10)
        # one more record: a rejected record still available would come before it
        sc.produce(bs, topic, 1)
        later = sc.explicit_run(bs, topic, group, 1, lambda o, c: ACCEPT, lambda log: len(log) >= 1)
        return first, later

    for which, (first, later) in _on_both(brokers, scenario).items():
        assert [(o, t) for o, _, t in first if o == 3] == [(3, REJECT)], which
        assert [(o, c) for o, c, _ in later] == [(10, 1)], which


def test_delivery_limit_archives_a_poison_record(brokers):
    def scenario(bs):
        topic, group = _fresh(bs, 5, share_delivery_count_limit=2)
        log = sc.explicit_run(bs, topic, group, 5, lambda o, c: RELEASE if o == 0 else ACCEPT,
                              lambda log: len(sc.accepted(log)) >= 4 and sum(o == 0 for o, _, _ in log) >= 2)
        sc.produce(bs, topic, 1)
        later = sc.explicit_run(bs, topic, group, 1, lambda o, c: RELEASE if o == 0 else ACCEPT,
                                lambda log: 5 in sc.accepted(log))
        return log, later

    results = _on_both(brokers, scenario)
    for which, (log, later) in results.items():
        assert [(c, t) for o, c, t in log if o == 0] == [(1, RELEASE), (2, RELEASE)], which
        assert [(o, c) for o, c, _ in later] == [(5, 1)], which  # offset 0 is archived


def test_a_consumer_that_stops_acknowledging_loses_its_records_after_the_lock(brokers):
    def scenario(bs):
        topic, group = _fresh(bs, 5, share_record_lock_duration_ms=2000)
        t0 = time.monotonic()
        a, b = sc.lock_timeout_handover(bs, topic, group, 5)
        return a, b, time.monotonic() - t0

    for which, (a, b, took) in _on_both(brokers, scenario).items():
        assert a and {c for _, c in a} == {1}, which
        assert sorted(o for o, _ in b) == sorted(o for o, _ in a), which
        assert {c for _, c in b} == {2}, which
        assert took >= 2.0, which
