"""kill -9 the broker mid-stream and restart it on the same log dir (pylog's broker)."""
from __future__ import annotations

import threading
import time
from collections import defaultdict

from pylog.core.client import Admin, Consumer, KafkaTimeoutError, Producer, TopicPartition

from support.broker_fixtures import BrokerProcess
from support.waiting import wait_until

FAST_RETRY = {"retry.backoff.ms": "50", "reconnect.backoff.ms": "50", "reconnect.backoff.max.ms": "200",
              "request.timeout.ms": "3000", "linger.ms": "2"}


def read_all(bootstrap, topic, partitions, expect):
    """Every record of the topic, read up to each partition's end offset: {partition: [value]}."""
    c = Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest"})
    tps = [TopicPartition(topic, p) for p in range(partitions)]
    c.assign(tps)
    ends = c.end_offsets(tps)
    assert sum(ends.values()) >= expect, ends
    out = defaultdict(list)

    def read_to_end():
        for tp, recs in c.poll(300).items():
            out[tp.partition] += [r.value for r in recs]
        return all(c.position(tp) >= ends[tp] for tp in tps)

    wait_until(read_to_end, 120, lambda: f"the end offsets {ends}", step=0)
    c.close()
    return out


def broker_with_topic(tmp_path, topic: str, partitions: int) -> BrokerProcess:
    """A started broker on tmp_path/data holding `topic`."""
    b = BrokerProcess(tmp_path / "data").start()
    with Admin({"bootstrap.servers": b.bootstrap}) as a:
        a.create_topic(topic, partitions)
    return b


def stream_through_crash(tmp_path, props, topic):
    b = broker_with_topic(tmp_path, topic, 3)
    p = Producer({"bootstrap.servers": b.bootstrap, **FAST_RETRY, **props})
    futures = []
    completions = []
    stop = threading.Event()

    def produce():
        i = 0
        while not stop.is_set() and i < 200_000:
            futures.append((i, p.send(topic, f"{i:08d}".encode(), key=f"k{i % 50}".encode(),
                                      callback=lambda md, e, i=i: completions.append((md.partition, i)))))
            i += 1
            if i % 200 == 0:
                time.sleep(0.002)

    t = threading.Thread(target=produce)
    t.start()
    try:
        wait_until(lambda: len(completions) >= 2000, 60, lambda: f"2000 completions (got {len(completions)})")
        b.kill9()
        before = len(completions)
        b.restart()
        wait_until(lambda: len(completions) >= before + 2000, 60, "completions after the restart")
    finally:
        stop.set()
        t.join()
    p.flush(60)
    results = [(i, f.get(0).partition) for i, f in futures]
    p.close()
    # callbacks ran in send order within each partition, retries and all
    last = {}
    for part, i in completions:
        assert i > last.get(part, -1), (part, i, last.get(part))
        last[part] = i
    assert len(completions) == len(results)
    return b, results


def test_idempotent_exactly_once_in_order_after_kill9(tmp_path):
    b, results = stream_through_crash(tmp_path, {}, "crash-idem")
    try:
        got = read_all(b.bootstrap, "crash-idem", 3, len(results))
        expected = defaultdict(list)
        for i, part in results:
            expected[part].append(f"{i:08d}".encode())
        for part in range(3):
            # exactly once and in send order per partition
            assert got[part] == expected[part], f"partition {part}"
        assert sum(len(v) for v in got.values()) == len(results) > 1000
    finally:
        b.stop_clean()


def test_without_idempotence_at_least_once_after_kill9(tmp_path):
    b, results = stream_through_crash(tmp_path, {"enable.idempotence": "false", "acks": "1"}, "crash-plain")
    try:
        got = read_all(b.bootstrap, "crash-plain", 3, len(results))
        present = {part: set(vals) for part, vals in got.items()}
        missing = [i for i, part in results if f"{i:08d}".encode() not in present.get(part, ())]
        assert not missing, f"{len(missing)} acknowledged records missing, first {missing[:5]}"
        assert sum(len(v) for v in got.values()) >= len(results) > 1000
    finally:
        b.stop_clean()


def test_failures_past_delivery_timeout_are_reported_per_record(tmp_path):
    b = broker_with_topic(tmp_path, "doomed", 2)
    p = Producer({"bootstrap.servers": b.bootstrap, "delivery.timeout.ms": "1500", "request.timeout.ms": "500",
                  "linger.ms": "0", "retry.backoff.ms": "50", "reconnect.backoff.ms": "50"})
    first = p.send("doomed", b"before")
    assert first.get(10).offset == 0
    b.kill9()
    errors = {}
    futs = [p.send("doomed", f"r{i}".encode(), callback=lambda md, e, i=i: errors.__setitem__(i, e))
            for i in range(20)]
    p.flush(60)
    assert all(f.done() for f in futs)  # expired by delivery.timeout.ms (below), not by flush's timeout
    for i, f in enumerate(futs):
        e = f.exception()
        assert isinstance(e, KafkaTimeoutError), (i, e)
        assert "ms has passed since batch creation" in str(e) and "record(s) for doomed-" in str(e)
        assert errors[i] is e
    # the broker comes back: the sequence gap left by the expired batches is closed by a new
    # epoch (KIP-360), and later records are delivered exactly once
    b.restart()
    later = [p.send("doomed", f"after{i}".encode(), partition=i % 2) for i in range(10)]
    p.flush(30)
    assert all(f.get(0).offset >= 0 for f in later)
    p.close()
    try:
        got = read_all(b.bootstrap, "doomed", 2, 11)
        values = sorted(v for vs in got.values() for v in vs)
        assert values == sorted([b"before"] + [f"after{i}".encode() for i in range(10)])
    finally:
        b.stop_clean()


def test_buffer_memory_back_pressure_blocks_max_block_ms(tmp_path):
    from pylog.core.client import BufferExhaustedError

    b = broker_with_topic(tmp_path, "full", 1)
    p = Producer({"bootstrap.servers": b.bootstrap, "buffer.memory": "40000", "batch.size": "16384",
                  "max.block.ms": "500", "linger.ms": "0", "delivery.timeout.ms": "3000",
                  "request.timeout.ms": "1000"})
    p.partitions_for("full")
    b.kill9()  # nothing is acknowledged any more: memory is only freed by expiry
    t0 = time.monotonic()
    futs = [p.send("full", b"x" * 1000) for _ in range(60)]
    blocked = time.monotonic() - t0
    errors = [f.exception() for f in futs if f.done() and isinstance(f.exception(), BufferExhaustedError)]
    assert errors, "the pool of 40000 bytes cannot hold 60 kB of records"
    assert "Failed to allocate" in str(errors[0]) and "max blocking time 500 ms" in str(errors[0])
    assert blocked >= 0.5
    p.flush(10)  # the rest expire after delivery.timeout.ms
    assert all(f.exception() is not None for f in futs)
    p.close()
