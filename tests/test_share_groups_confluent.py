"""Share groups (KIP-932) with confluent-kafka 2.16.1's ShareConsumer, on pylog and on Apache Kafka
4.4 in the same test: the same scenario on both brokers must give the same outcome (which records
each acknowledgement type ends with, and their delivery counts)."""
from __future__ import annotations

import time


import pytest
from confluent_kafka import AcknowledgeType

from support import share_scenarios as sc

ACCEPT, RELEASE, REJECT = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT


@pytest.fixture(scope="module")
def brokers(share_brokers):
    return share_brokers




def test_several_consumers_accept_every_record_exactly_once(brokers):
    n = 300

    def scenario(bs):
        topic, group = sc.fresh(bs, n)
        return sc.accept_all(bs, topic, group, n, consumers=3)

    for which, seen in sc.on_both(brokers, scenario).items():
        offsets = sorted(o for recs in seen.values() for _, o, _ in recs)
        assert offsets == list(range(n)), which
        assert {c for recs in seen.values() for _, _, c in recs} == {1}, which


def test_several_consumers_several_partitions(brokers):
    n = 240

    def scenario(bs):
        topic, group = sc.fresh(bs, n, partitions=3)
        return sc.accept_all(bs, topic, group, n, consumers=4)

    for which, seen in sc.on_both(brokers, scenario).items():
        got = sorted((p, o) for recs in seen.values() for p, o, _ in recs)
        assert got == sorted((p, o) for p in range(3) for o in range(n // 3)), which


def test_release_redelivers_with_the_next_delivery_count(brokers):
    def scenario(bs):
        topic, group = sc.fresh(bs, 10)
        return sc.explicit_run(bs, topic, group, 10,
                               lambda o, c: RELEASE if o == 4 and c == 1 else ACCEPT,
                               lambda log: len(sc.accepted(log)) >= 10)

    results = sc.on_both(brokers, scenario)
    for which, log in results.items():
        assert sc.accepted(log) == list(range(10)), which
        assert [(c, t) for o, c, t in log if o == 4] == [(1, RELEASE), (2, ACCEPT)], which
    assert sorted(results["pylog"]) == sorted(results["kafka"])


def test_reject_archives(brokers):
    def scenario(bs):
        topic, group = sc.fresh(bs, 10)
        first = sc.explicit_run(bs, topic, group, 10, lambda o, c: REJECT if o == 3 else ACCEPT,
                                lambda log: len(log) >= 10)
        # one more record: a rejected record still available would come before it
        sc.produce(bs, topic, 1)
        later = sc.explicit_run(bs, topic, group, 1, lambda o, c: ACCEPT, lambda log: len(log) >= 1)
        return first, later

    for which, (first, later) in sc.on_both(brokers, scenario).items():
        assert [(o, t) for o, _, t in first if o == 3] == [(3, REJECT)], which
        assert [(o, c) for o, c, _ in later] == [(10, 1)], which


def test_delivery_limit_archives_a_poison_record(brokers):
    def scenario(bs):
        topic, group = sc.fresh(bs, 5, share_delivery_count_limit=2)
        log = sc.explicit_run(bs, topic, group, 5, lambda o, c: RELEASE if o == 0 else ACCEPT,
                              lambda log: len(sc.accepted(log)) >= 4 and sum(o == 0 for o, _, _ in log) >= 2)
        sc.produce(bs, topic, 1)
        later = sc.explicit_run(bs, topic, group, 1, lambda o, c: RELEASE if o == 0 else ACCEPT,
                                lambda log: 5 in sc.accepted(log))
        return log, later

    results = sc.on_both(brokers, scenario)
    for which, (log, later) in results.items():
        assert [(c, t) for o, c, t in log if o == 0] == [(1, RELEASE), (2, RELEASE)], which
        assert [(o, c) for o, c, _ in later] == [(5, 1)], which  # offset 0 is archived


def test_a_consumer_that_stops_acknowledging_loses_its_records_after_the_lock(brokers):
    def scenario(bs):
        topic, group = sc.fresh(bs, 5, share_record_lock_duration_ms=1000)
        t0 = time.monotonic()
        a, b = sc.lock_timeout_handover(bs, topic, group, 5)
        return a, b, time.monotonic() - t0

    for which, (a, b, took) in sc.on_both(brokers, scenario).items():
        assert a and {c for _, c in a} == {1}, which
        assert sorted(o for o, _ in b) == sorted(o for o, _ in a), which
        assert {c for _, c in b} == {2}, which
        assert took >= 1.0, which


def _read_group(bs, topic, group, protocol, n):
    from confluent_kafka import Consumer

    conf = {"bootstrap.servers": bs, "group.id": group, "auto.offset.reset": "earliest", "group.protocol": protocol}
    if protocol == "classic":
        conf["session.timeout.ms"] = 10000
    c = Consumer(conf)
    c.subscribe([topic])
    got = []
    deadline = time.monotonic() + sc.DEADLINE
    try:
        while len(got) < n and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append(m.offset())
    finally:
        c.close()
    return sorted(got)


def test_classic_consumer_and_share_groups_on_one_topic_at_once(brokers):
    import concurrent.futures as cf

    n = 100

    def scenario(bs):
        topic, share_group = sc.fresh(bs, n)
        with cf.ThreadPoolExecutor(3) as pool:
            classic = pool.submit(_read_group, bs, topic, sc.name("classic"), "classic", n)
            modern = pool.submit(_read_group, bs, topic, sc.name("consumer"), "consumer", n)
            share = pool.submit(sc.accept_all, bs, topic, share_group, n, 2)
            return classic.result(), modern.result(), share.result()

    for which, (classic, modern, share) in sc.on_both(brokers, scenario).items():
        assert classic == list(range(n)) and modern == list(range(n)), which
        assert sorted(o for recs in share.values() for _, o, _ in recs) == list(range(n)), which


def test_read_committed_share_group_skips_aborted_transactions(brokers):
    from confluent_kafka import Producer

    def scenario(bs):
        topic, group = sc.name("share-txn"), sc.name("share-txn-g")
        sc.create_topic(bs, topic)
        sc.set_group_configs(bs, group, share_auto_offset_reset="earliest", share_isolation_level="read_committed")
        p = Producer({"bootstrap.servers": bs, "transactional.id": sc.name("tx")})
        p.init_transactions(60)
        for txn, commit in ((0, True), (1, False), (2, True)):
            p.begin_transaction()
            for i in range(3):
                p.produce(topic, value=b"t%d-%d" % (txn, i))
            p.commit_transaction(60) if commit else p.abort_transaction(60)
        c = sc.consumer(bs, group)
        c.subscribe([topic])
        got = []
        deadline = time.monotonic() + sc.DEADLINE
        try:
            while len(got) < 6 and time.monotonic() < deadline:
                got += [m.value() for m in sc.poll_records(c, 0.5)]
            c.commit_sync(30)
        finally:
            c.close()
        sc.produce(bs, topic, 1)
        later = sc.explicit_run(bs, topic, group, 1, lambda o, n: ACCEPT, lambda log: len(log) >= 1)
        return got, [n for _, n, _ in later]

    for which, (got, later) in sc.on_both(brokers, scenario).items():
        assert got == [b"t0-0", b"t0-1", b"t0-2", b"t2-0", b"t2-1", b"t2-2"], which
        assert later == [1], which


HOLDER = """
import sys
from confluent_kafka import ShareConsumer
c = ShareConsumer({"bootstrap.servers": sys.argv[1], "group.id": sys.argv[2],
                   "share.acknowledgement.mode": "explicit"})
c.subscribe([sys.argv[3]])
got = []
while not got:
    got = [m for m in c.poll(1.0) if m.error() is None]
print(len(got), flush=True)
sys.stdin.read()
"""


def test_a_killed_consumers_records_come_back_when_its_connection_drops(brokers):
    import signal
    import subprocess
    import sys

    def scenario(bs):
        topic, group = sc.fresh(bs, 5)  # the default 30 s lock: only the dropped connection frees them
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, bs, group, topic], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        held = int(holder.stdout.readline())
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        t0 = time.monotonic()
        got = sc.explicit_run(bs, topic, group, 5, lambda o, c: ACCEPT, lambda log: len(log) >= held)
        return held, [(o, c) for o, c, _ in got], time.monotonic() - t0

    for which, (held, got, took) in sc.on_both(brokers, scenario).items():
        assert held == 5 and got == [(o, 2) for o in range(5)], (which, got)
        assert took < 25, (which, took)
