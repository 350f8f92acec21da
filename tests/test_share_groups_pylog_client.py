"""pylog's own ShareConsumer and `pylog consume --share-group`, on pylog and on Apache Kafka 4.4 in
the same test: same outcomes, same delivery counts, the same errors for late acknowledgements."""
from __future__ import annotations

import threading
import time

from confluent_kafka import Producer

from pylog.core.client.share_consumer import ShareConsumer
from support import share_scenarios as sc
from support.cli import pylog


def _consumer(bs, group, explicit=False):
    props = {"bootstrap.servers": bs, "group.id": group}
    if explicit:
        props["share.acknowledgement.mode"] = "explicit"
    return ShareConsumer(props)


def _read(c, n, deadline=sc.DEADLINE):
    got = []
    end = time.monotonic() + deadline
    while len(got) < n and time.monotonic() < end:
        got += c.poll(0.5)
    return got


def test_pylog_share_consumers_accept_every_record_once(share_brokers):
    n = 150

    def scenario(bs):
        topic, group = sc.fresh(bs, n, 3)
        seen, lock, done = [], threading.Lock(), threading.Event()

        def run():
            c = _consumer(bs, group)
            c.subscribe([topic])
            try:
                while not done.is_set():
                    rs = c.poll(0.5)
                    with lock:
                        seen.extend((r.partition, r.offset, r.delivery_count) for r in rs)
                        if len(seen) >= n:
                            done.set()
                c.commit_sync()
            finally:
                c.close()

        ts = [threading.Thread(target=run) for _ in range(3)]
        for t in ts:
            t.start()
        done.wait(sc.DEADLINE)
        done.set()
        for t in ts:
            t.join(60)
        return sorted(seen)

    for which, seen in sc.on_both(share_brokers, scenario).items():
        assert seen == sorted((p, o, 1) for p in range(3) for o in range(n // 3)), which


def test_pylog_share_consumer_release_reject_renew_and_late_acks(share_brokers):
    def scenario(bs):
        topic, group = sc.fresh(bs, 6, share_record_lock_duration_ms=2000)
        c = _consumer(bs, group, explicit=True)
        c.subscribe([topic])
        log = []
        try:
            first = _read(c, 6)
            for r in first:
                t = {0: "release", 1: "reject", 2: "renew"}.get(r.offset, "accept")
                c.acknowledge(r, t)
                log.append((r.offset, r.delivery_count, t))
            errors = c.commit_sync()
            time.sleep(1.2)
            c.acknowledge(first[2], "renew")  # past the first lock's end only with the renewals
            c.commit_sync()
            time.sleep(1.2)
            c.acknowledge(first[2], "accept")
            renewed = c.commit_sync()
            again = _read(c, 1)
            for r in again:
                c.acknowledge(r, "accept")
                log.append((r.offset, r.delivery_count, "accept"))
            c.commit_sync()
        finally:
            c.close()
        # a consumer that acknowledges after its lock ran out is told so
        late = _consumer(bs, group, explicit=True)
        late.subscribe([topic])
        sc.produce(bs, topic, 1)
        try:
            held = _read(late, 1)
            time.sleep(3.5)
            late.acknowledge(held[0], "accept")
            late_errors = late.commit_sync()
        finally:
            late.close()
        return log, errors, renewed, late_errors, [(r.offset, r.delivery_count) for r in held]

    results = sc.on_both(share_brokers, scenario)
    for which, (log, errors, renewed, late_errors, held) in results.items():
        assert [x for x in log if x[0] == 0] == [(0, 1, "release"), (0, 2, "accept")], which
        assert [x for x in log if x[0] == 1] == [(1, 1, "reject")], which
        assert set(errors.values()) == {None} and set(renewed.values()) == {None}, which
        assert held == [(6, 1)], which
        assert [type(e).__name__ for e in late_errors.values()] == ["AcknowledgementError"], which
        assert [e.code for e in late_errors.values()] == [121], which  # INVALID_RECORD_STATE
    assert results["pylog"][0] == results["kafka"][0]


def _pylog_consume(bs, topic, group, *extra):
    return pylog("consume", topic, "-b", bs, "--share-group", group, "-f", "%o %s\\n", *extra)


def test_pylog_consume_share_group(share_brokers):
    def scenario(bs):
        topic, group = sc.name("cs-t"), sc.name("cs-g")
        sc.create_topic(bs, topic)
        sc.set_group_configs(bs, group, share_auto_offset_reset="earliest")
        p = Producer({"bootstrap.servers": bs})
        for i in range(8):
            p.produce(topic, value=b"v%d" % i, headers=[("bad", b"1")] if i in (2, 5) else None)
        p.flush(30)
        first = _pylog_consume(bs, topic, group, "--max-messages", "6", "--reject-if", "header.bad")
        second = _pylog_consume(bs, topic, group, "--timeout-ms", "3000")
        return first, second

    for which, (first, second) in sc.on_both(share_brokers, scenario).items():
        assert first.returncode == 0, (which, first.stderr)
        assert first.stdout.split("\n")[:-1] == [f"{o} v{o}" for o in (0, 1, 3, 4, 6, 7)], which
        assert "2 rejected" in first.stderr, which
        assert second.returncode == 0 and second.stdout == "", (which, second.stdout)
    r = pylog("consume", "t", "-b", share_brokers["pylog"], "--share-group", "g", "--from-beginning")
    assert r.returncode == 2 and "cannot be combined with --share-group" in r.stderr
