"""The idempotent producer's KIP-360 epoch bump, provoked for real against pylog's broker.

The broker is killed (-9) and its partition log loses its acknowledged tail (a
lost page cache / unclean failover, simulated by truncating the segment file and
dropping the producer snapshots). On restart the broker rebuilds the producer's
state from what is left, so the producer's next batch carries a sequence past
the broker's last one: OUT_OF_ORDER_SEQUENCE_NUMBER on the first unacknowledged
batch. The producer must bump its epoch (same producer id, epoch + 1, sequences
from 0), resend that batch and carry on: every record sent after the fault is
in the log exactly once and in order, and a later retry does not duplicate.
"""
from __future__ import annotations

import os

from pylog.core.client import Admin, Consumer, Producer, TopicPartition
from pylog.core.records.header import iter_headers

from support.broker_fixtures import BrokerProcess

FAST = {"retry.backoff.ms": "50", "reconnect.backoff.ms": "50", "reconnect.backoff.max.ms": "200",
        "request.timeout.ms": "5000", "linger.ms": "200"}  # flush() sends each group of sends as one batch


def read_values(bootstrap, topic):
    c = Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"})
    tp = TopicPartition(topic, 0)
    c.assign([tp])
    end = c.end_offsets([tp])[tp]
    out = []
    while c.position(tp) < end:
        for recs in c.poll(500).values():
            out += [(r.offset, r.value) for r in recs]
    c.close()
    return out


def batch_headers(partition_dir):
    seg = sorted(f for f in os.listdir(partition_dir) if f.endswith(".log"))[-1]
    path = os.path.join(partition_dir, seg)
    data = open(path, "rb").read()
    return path, [(pos, h) for pos, h in iter_headers(data, 0, len(data))]


def test_out_of_order_sequence_bumps_the_epoch_and_continues(tmp_path):
    topic = "epoch-bump"
    b = BrokerProcess(tmp_path / "data").start()
    try:
        with Admin({"bootstrap.servers": b.bootstrap}) as a:
            a.create_topic(topic, 1)
        p = Producer({"bootstrap.servers": b.bootstrap, **FAST})
        for n in range(3):  # three acknowledged batches of 10: sequences 0-9, 10-19, 20-29
            futs = [p.send(topic, f"a{n}-{i}".encode(), partition=0) for i in range(10)]
            p.flush(10)
            assert [f.get(0).offset for f in futs] == list(range(n * 10, n * 10 + 10))
        pid, epoch = p.producer_id, p.producer_epoch
        assert pid >= 0 and epoch == 0

        b.kill9()
        pdir = tmp_path / "data" / f"{topic}-0"
        path, headers = batch_headers(pdir)
        assert [(h.producer_id, h.base_sequence, h.record_count) for _, h in headers] == \
            [(pid, 0, 10), (pid, 10, 10), (pid, 20, 10)]
        os.truncate(path, headers[2][0])  # the third batch (sequences 20-29) is gone
        for f in os.listdir(pdir):
            if f.endswith(".snapshot"):
                os.unlink(pdir / f)
        b.restart()

        # the next batch has sequence 30; the broker's last is 19 -> OUT_OF_ORDER_SEQUENCE_NUMBER
        futs = [p.send(topic, f"b-{i}".encode(), partition=0) for i in range(10)]
        p.flush(30)
        offsets = [f.get(0).offset for f in futs]
        assert offsets == list(range(20, 30))
        assert (p.producer_id, p.producer_epoch) == (pid, epoch + 1)
        # and the new epoch keeps going from sequence 10
        more = [p.send(topic, f"c-{i}".encode(), partition=0) for i in range(5)]
        p.flush(10)
        assert [f.get(0).offset for f in more] == list(range(30, 35))
        p.close()

        got = read_values(b.bootstrap, topic)
        assert [v for _, v in got] == ([f"a{n}-{i}".encode() for n in range(2) for i in range(10)]
                                       + [f"b-{i}".encode() for i in range(10)]
                                       + [f"c-{i}".encode() for i in range(5)])
        assert [o for o, _ in got] == list(range(35))
        _, headers = batch_headers(pdir)
        assert [(h.producer_epoch, h.base_sequence) for _, h in headers][2:] == [(1, 0), (1, 10)]
    finally:
        b.stop_clean()


def raw_produce(b, topic, batch):
    from support.broker_fixtures import call, connect

    with connect(b) as s:
        resp = call(s, 0, 8, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": topic, "partition_data": [{"index": 0, "records": bytes(batch)}]}]})
    return resp["responses"][0]["partition_responses"][0]["error_code"]


def test_expired_producer_id_is_forgotten_then_the_producer_bumps_on_a_sequence_gap(tmp_path):
    import time

    from support.broker_fixtures import build_batch, wait_for

    topic = "pid-expiry"
    b = BrokerProcess(tmp_path / "data", "--set", "producer.id.expiration.ms=800",
                      "--set", "producer.id.expiration.check.interval.ms=100").start()
    try:
        with Admin({"bootstrap.servers": b.bootstrap}) as a:
            a.create_topic(topic, 1)
        p = Producer({"bootstrap.servers": b.bootstrap, **FAST})
        futs = [p.send(topic, f"a-{i}".encode(), partition=0) for i in range(10)]
        p.flush(10)
        assert [f.get(0).offset for f in futs] == list(range(10))
        pid = p.producer_id
        stray = build_batch([(None, b"stray", None)], producer_id=pid, producer_epoch=0, base_sequence=5000)
        assert raw_produce(b, topic, stray) == 45  # the broker knows the producer: a gap is refused
        # once idle for producer.id.expiration.ms the broker forgets it and takes any sequence
        assert wait_for(lambda: raw_produce(b, topic, build_batch(
            [(None, b"stray", None)], base_timestamp=int(time.time() * 1000), producer_id=pid,
            producer_epoch=0, base_sequence=5000)) == 0, timeout=10, step=0.2)
        # the producer's next sequence (10) now follows 5000: OUT_OF_ORDER -> epoch bump, resend
        futs = [p.send(topic, f"b-{i}".encode(), partition=0) for i in range(10)]
        p.flush(30)
        assert [f.get(0).offset for f in futs] == list(range(11, 21))
        assert (p.producer_id, p.producer_epoch) == (pid, 1)
        p.close()
        got = [v for _, v in read_values(b.bootstrap, topic)]
        assert got == [f"a-{i}".encode() for i in range(10)] + [b"stray"] + [f"b-{i}".encode() for i in range(10)]
    finally:
        b.stop_clean()
