"""Dead-letter topics of share groups (KIP-1191, share.version 2) on pylog and on Apache Kafka 4.4 in
the same test: a rejected record and one that reached the delivery limit each become a record on
the group's DLQ topic with Kafka's context headers (and the original key and value when the group
copies records); a DLQ topic not enabled for dead letters gets nothing and the records are archived
all the same; a DLQ name starting with `__` is refused."""
from __future__ import annotations

import time

import pytest
from confluent_kafka import AcknowledgeType, Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from support import share_scenarios as sc

ACCEPT, RELEASE, REJECT = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT


@pytest.fixture(scope="module")
def brokers(share_brokers):
    return share_brokers


def _setup(bs: str, dlq_enabled: bool, copy: bool) -> tuple[str, str, str]:
    topic, group = sc.name("dl"), sc.name("dl-g")
    dlq = "dlq." + topic
    a = AdminClient({"bootstrap.servers": bs})
    futs = a.create_topics([NewTopic(topic, 1, 1), NewTopic(
        dlq, 2, 1, config={"errors.deadletterqueue.group.enable": str(dlq_enabled).lower()})])
    for f in futs.values():
        f.result(60)
    sc.set_group_configs(bs, group, share_auto_offset_reset="earliest", share_delivery_count_limit=2,
                         errors_deadletterqueue_topic_name=dlq,
                         errors_deadletterqueue_copy_record_enable=str(copy).lower())
    p = Producer({"bootstrap.servers": bs})
    for i in range(3):
        p.produce(topic, key=b"k%d" % i, value=b"v%d" % i, headers=[("h", b"x%d" % i)])
    assert p.flush(60) == 0
    return topic, group, dlq


def _read(bs: str, topic: str, n: int, wait: float = 30.0) -> list:
    c = Consumer({"bootstrap.servers": bs, "group.id": sc.name("dl-r"), "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + wait
    try:
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m)
    finally:
        c.close()
    return got


def _run(bs: str, dlq_enabled: bool, copy: bool):
    """Reject offset 0, release offset 1 until the limit (2), accept offset 2."""
    topic, group, dlq = _setup(bs, dlq_enabled, copy)
    decide = {0: REJECT, 1: RELEASE, 2: ACCEPT}
    log = sc.explicit_run(bs, topic, group, 3, lambda o, n: decide[o], lambda log: len(log) >= 4)
    t0 = time.time() * 1000
    letters = _read(bs, dlq, 2, 30.0 if dlq_enabled else 5.0)
    return topic, group, log, [(m.partition(), m.offset(), m.key(), m.value(), m.headers(), m.timestamp())
                               for m in letters], t0


def _expected_headers(topic, group, off, count, why):
    return [("__dlq.errors.topic", topic.encode()), ("__dlq.errors.partition", b"0"),
            ("__dlq.errors.offset", str(off).encode()), ("__dlq.errors.group", group.encode()),
            ("__dlq.errors.delivery.count", str(count).encode()), ("__dlq.errors.message", why)]


@pytest.mark.parametrize("copy", [False, True], ids=["headers-only", "copy-record"])
def test_rejected_and_exhausted_records_become_dead_letters(brokers, copy):
    out = sc.on_both(brokers, lambda bs: _run(bs, True, copy))
    for which, (topic, group, log, letters, t0) in out.items():
        assert [(o, n) for o, n, _ in log] == [(0, 1), (1, 1), (2, 1), (1, 2)], which
        assert [(p, o) for p, o, *_ in letters] == [(0, 0), (0, 1)], (which, letters)
        (_, _, k0, v0, h0, ts0), (_, _, k1, v1, h1, ts1) = letters
        assert h0 == _expected_headers(topic, group, 0, 1, b"Offset rejected by client."), which
        assert h1 == _expected_headers(topic, group, 1, 2, b"Offset delivery count exceeded the threshold."), which
        assert (k0, v0, k1, v1) == ((b"k0", b"v0", b"k1", b"v1") if copy else (None, None, None, None)), which
        for kind, ts in (ts0, ts1):  # the broker's time when it wrote them, as CreateTime
            assert kind == 1 and ts > t0 - 120_000, (which, kind, ts)


def test_a_topic_not_enabled_for_dead_letters_gets_none(brokers):
    out = sc.on_both(brokers, lambda bs: _run(bs, False, False))
    for which, (_, _, log, letters, _) in out.items():
        assert [(o, n) for o, n, _ in log] == [(0, 1), (1, 1), (2, 1), (1, 2)], which
        assert letters == [], which


def test_a_dead_letter_topic_name_may_not_start_with_two_underscores(brokers):
    def scenario(bs):
        try:
            sc.set_group_configs(bs, sc.name("dl-g"), errors_deadletterqueue_topic_name="__dlq")
        except KafkaException as e:
            return e.args[0].name()
        return None

    for which, err in sc.on_both(brokers, scenario).items():
        assert err == "INVALID_CONFIG", which
