"""Producer and consumer engines against real brokers (pylog's and Tansu), plus interop."""
from __future__ import annotations

import subprocess
import time

import pytest
from kafka import KafkaConsumer
from kafka import TopicPartition as KTP

from pylog.core.client import (
    Admin,
    Consumer,
    NoOffsetForPartitionError,
    Producer,
    TopicPartition,
)
from pylog.core.client.consumer import ConsumerEngine, resolve_consumer_config
from pylog.core.errors import CorruptMessageError
from pylog.core.records import BatchBuilder, LegacyBuilder, build_end_txn_batch
from pylog.core.records.header import CRC_OFFSET

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def create(bootstrap, topic, partitions=1, configs=None):
    with Admin({"bootstrap.servers": bootstrap}) as a:
        a.create_topic(topic, partitions, configs=configs)


def read(bootstrap, topic, partitions, expect, timeout=20.0, **props):
    c = Consumer({"bootstrap.servers": bootstrap, "auto.offset.reset": "earliest", **props})
    c.assign([TopicPartition(topic, p) for p in range(partitions)])
    out = {}
    deadline = time.monotonic() + timeout
    n = 0
    while n < expect and time.monotonic() < deadline:
        for tp, recs in c.poll(200).items():
            out.setdefault(tp.partition, []).extend(recs)
            n += len(recs)
    c.close()
    return out


@pytest.fixture(params=["pylog", "tansu"])
def any_broker(request):
    return request.getfixturevalue("broker" if request.param == "pylog" else "tansu")


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_every_codec(any_broker, codec):
    broker = any_broker
    topic = f"rt-{codec}"
    create(broker.bootstrap, topic, 2)
    sent = []
    with Producer({"bootstrap.servers": broker.bootstrap, "compression.type": codec, "linger.ms": "20"}) as p:
        for i in range(2000):
            k = f"k{i % 17}".encode()
            v = (f"value-{i}-" * (i % 5 + 1)).encode()
            h = [("h", str(i).encode())] if i % 3 == 0 else None
            sent.append((k, v, h, p.send(topic, v, key=k, headers=h)))
        p.flush()
    md = [f.get(5) for *_, f in sent]
    got = read(broker.bootstrap, topic, 2, len(sent))
    by_offset = {(tp, r.offset): r for tp, rs in got.items() for r in rs}
    for (k, v, h, _), m in zip(sent, md):
        r = by_offset[(m.partition, m.offset)]
        assert (r.key, r.value) == (k, v)
        assert [(hk, bytes(hv)) for hk, hv in r.headers] == (h or [])
    # per partition: offsets dense and in send order
    for p_, rs in got.items():
        assert [r.offset for r in rs] == list(range(len(rs)))


def test_core_round_trip_against_tansu(tansu):
    topic = "tansu-rt"
    create(tansu.bootstrap, topic, 3)
    with Producer({"bootstrap.servers": tansu.bootstrap}) as p:
        futs = [p.send(topic, f"v{i}".encode(), key=f"k{i}".encode()) for i in range(600)]
        keyless = [p.send(topic, f"x{i}".encode()) for i in range(400)]
        p.flush()
        mds = [f.get(5) for f in futs + keyless]
    assert all(m.offset >= 0 for m in mds)
    got = read(tansu.bootstrap, topic, 3, 1000)
    values = sorted(r.value for rs in got.values() for r in rs)
    assert values == sorted([f"v{i}".encode() for i in range(600)] + [f"x{i}".encode() for i in range(400)])
    # keyed records went where murmur2 says
    from pylog.core.client import partition_for_key
    for p_, rs in got.items():
        for r in rs:
            if r.key is not None:
                assert partition_for_key(r.key, 3) == p_


def test_interop_pylog_produce_then_kafka_python_and_kcat_consume(broker):
    topic = "interop-out"
    create(broker.bootstrap, topic, 1)
    with Producer({"bootstrap.servers": broker.bootstrap, "compression.type": "lz4"}) as p:
        for i in range(300):
            p.send(topic, f"m{i}".encode(), key=b"k", headers=[("n", str(i).encode())])
        p.flush()
    c = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False, consumer_timeout_ms=5000)
    c.assign([KTP(topic, 0)])
    c.seek_to_beginning()
    msgs = []
    for m in c:
        msgs.append(m)
        if len(msgs) == 300:
            break
    c.close()
    assert [m.value for m in msgs] == [f"m{i}".encode() for i in range(300)]
    assert msgs[7].headers == [("n", b"7")]
    r = subprocess.run(["kcat", "-C", "-b", broker.bootstrap, "-t", topic, "-o", "beginning", "-e", "-q",
                        "-f", "%k=%s\\n"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [f"k=m{i}" for i in range(300)]


def test_interop_kcat_and_confluent_produce_then_pylog_consume(broker):
    from confluent_kafka import Producer as CProducer

    topic = "interop-in"
    create(broker.bootstrap, topic, 2)
    lines = "".join(f"key{i}:val{i}\n" for i in range(200))
    r = subprocess.run(["kcat", "-P", "-b", broker.bootstrap, "-t", topic, "-K", ":", "-z", "gzip"],
                       input=lines, capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    cp = CProducer({"bootstrap.servers": broker.bootstrap, "compression.type": "zstd",
                    "partitioner": "murmur2_random"})  # the Java-compatible partitioner
    for i in range(200):
        cp.produce(topic, value=f"c{i}".encode(), key=f"ck{i}".encode(), headers=[("src", b"ck")])
    cp.flush(10)
    got = read(broker.bootstrap, topic, 2, 400)
    recs = [r for rs in got.values() for r in rs]
    assert len(recs) == 400
    kv = {(r.key, r.value) for r in recs}
    assert {(f"key{i}".encode(), f"val{i}".encode()) for i in range(200)} <= kv
    assert {(f"ck{i}".encode(), f"c{i}".encode()) for i in range(200)} <= kv
    from pylog.core.client import partition_for_key
    for p_, rs in got.items():
        for r in rs:  # librdkafka's murmur2_random partitioner agrees with ours
            if r.value.startswith(b"c"):
                assert partition_for_key(r.key, 2) == p_


def test_idempotent_producer_sequences_and_split_on_message_too_large(broker):
    # the topic accepts batches of at most 2000 bytes: a 16 kB batch is split, no record lost or repeated
    topic = "split"
    create(broker.bootstrap, topic, 1, configs={"max.message.bytes": "2000"})
    with Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": "50", "batch.size": "16384"}) as p:
        futs = [p.send(topic, b"x" * 90 + f"{i:05d}".encode()) for i in range(300)]
        p.flush()
        offsets = [f.get(5).offset for f in futs]
        assert p.producer_id >= 0
    assert offsets == list(range(300))
    got = read(broker.bootstrap, topic, 1, 300)
    assert [r.value[-5:] for r in got[0]] == [f"{i:05d}".encode() for i in range(300)]


def test_record_larger_than_max_request_size_fails_that_record_only(broker):
    create(broker.bootstrap, "big", 1)
    with Producer({"bootstrap.servers": broker.bootstrap, "max.request.size": "10000"}) as p:
        ok = p.send("big", b"small")
        big = p.send("big", b"x" * 20000)
        p.flush()
        assert ok.get(5).offset == 0
        with pytest.raises(Exception, match="max.request.size"):
            big.get(5)


def test_offset_reset_policies_and_seek(broker):
    topic = "resets"
    create(broker.bootstrap, topic, 1)
    t0 = int(time.time() * 1000)
    with Producer({"bootstrap.servers": broker.bootstrap}) as p:
        for i in range(100):
            p.send(topic, f"{i}".encode(), timestamp=t0 + i * 10)
        p.flush()
    tp = TopicPartition(topic, 0)
    # none: no committed offset -> NoOffsetForPartition
    c = Consumer({"bootstrap.servers": broker.bootstrap, "auto.offset.reset": "none"})
    c.assign([tp])
    with pytest.raises(NoOffsetForPartitionError):
        c.poll(500)
    # seek to a timestamp
    c.seek_to_timestamp(t0 + 505, [tp])
    assert c.position(tp) == 51
    # explicit seek works with reset none
    c.seek(tp, 97)
    recs = c.poll(2000)[tp]
    assert [r.value for r in recs] == [b"97", b"98", b"99"]
    assert c.offsets_for_times({tp: t0 + 10})[tp].offset == 1
    assert c.beginning_offsets([tp]) == {tp: 0} and c.end_offsets([tp]) == {tp: 100}
    c.close()
    # latest starts at the end; out-of-range positions reset per policy
    c = Consumer({"bootstrap.servers": broker.bootstrap, "auto.offset.reset": "earliest"})
    c.assign([tp])
    c.seek(tp, 5000)  # beyond the end -> OFFSET_OUT_OF_RANGE -> earliest
    got = []
    deadline = time.monotonic() + 10
    while len(got) < 100 and time.monotonic() < deadline:
        got += c.poll(200).get(tp, [])
    assert [r.offset for r in got] == list(range(100))
    c.close()
    c = Consumer({"bootstrap.servers": broker.bootstrap, "auto.offset.reset": "latest"})
    c.assign([tp])
    assert c.poll(300) == {}
    assert c.position(tp) == 100
    c.close()


def engine(**props):
    return ConsumerEngine(resolve_consumer_config({"bootstrap.servers": "127.0.0.1:1", **props}))


def test_parse_legacy_message_sets_and_skip_below_position():
    e = engine()
    tp = TopicPartition("t", 0)
    for magic in (0, 1):
        for codec in (0, 1):
            b = LegacyBuilder(magic, codec, base_offset=10)
            for i in range(5):
                b.append(1000 + i, f"k{i}".encode(), f"v{i}".encode())
            recs, nxt, _ = e.parse_records(tp, b.build(), 12)
            assert [(r.offset, r.value) for r in recs] == [(12, b"v2"), (13, b"v3"), (14, b"v4")]
            assert nxt == 15


def test_parse_hides_control_batches_and_checks_crcs():
    e = engine()
    tp = TopicPartition("t", 0)
    data = BatchBuilder(base_offset=0, codec=3)
    for i in range(3):
        data.append(1000, None, f"a{i}".encode())
    first = data.build()
    marker = build_end_txn_batch(1, 7, 0, 0, base_offset=3)
    second = BatchBuilder(base_offset=4)
    second.append(1000, None, b"b")
    buf = first + marker + second.build()
    recs, nxt, _ = e.parse_records(tp, buf, 1)
    assert [r.value for r in recs] == [b"a1", b"a2", b"b"] and nxt == 5
    # a partial batch at the end of a fetch is left for the next fetch
    recs, nxt, _ = e.parse_records(tp, buf[:-5], 0)
    assert nxt == 4 and len(recs) == 3
    bad = bytearray(buf)
    bad[70] ^= 0xFF
    with pytest.raises(CorruptMessageError):
        e.parse_records(tp, bytes(bad), 0)
    # only the stored CRC of the last batch is wrong, its records intact: check.crcs refuses
    # the fetch, check.crcs=false reads every record
    wrong_crc = bytearray(buf)
    wrong_crc[len(first) + len(marker) + CRC_OFFSET] ^= 0xFF
    with pytest.raises(CorruptMessageError):
        e.parse_records(tp, bytes(wrong_crc), 0)
    e2 = engine(**{"check.crcs": "false"})
    recs, nxt, _ = e2.parse_records(tp, bytes(wrong_crc), 0)
    assert [r.value for r in recs] == [b"a0", b"a1", b"a2", b"b"] and nxt == 5


def test_read_committed_drops_aborted_transactions():
    e = engine(**{"isolation.level": "read_committed"})
    tp = TopicPartition("t", 0)
    txn = BatchBuilder(base_offset=0, producer_id=9, producer_epoch=0, base_sequence=0, is_transactional=True)
    txn.append(1000, None, b"aborted")
    plain = BatchBuilder(base_offset=2)
    plain.append(1000, None, b"kept")
    buf = txn.build() + build_end_txn_batch(0, 9, 0, 0, base_offset=1) + plain.build()
    recs, nxt, _ = e.parse_records(tp, buf, 0, [{"producer_id": 9, "first_offset": 0}])
    assert [r.value for r in recs] == [b"kept"] and nxt == 3


def test_leader_epoch_validation_detects_truncation(broker):
    from pylog.core.client import LogTruncationError

    topic = "epochs"
    create(broker.bootstrap, topic, 1)
    with Producer({"bootstrap.servers": broker.bootstrap}) as p:
        for i in range(10):
            p.send(topic, f"{i}".encode())
        p.flush()
    tp = TopicPartition(topic, 0)
    for policy in ("earliest", "none"):
        c = Consumer({"bootstrap.servers": broker.bootstrap, "auto.offset.reset": policy})
        c.assign([tp])
        c.seek(tp, 0)
        got = []
        while len(got) < 10:
            got += c.poll(1000).get(tp, [])
        eng = c.engine
        epoch = eng.positions[tp][1]
        assert epoch >= 0  # the position carries the leader epoch of the last batch read

        async def diverge():
            # a position past where our epoch ends on the leader: as after an unclean leader change
            eng.seek(tp, 50, epoch)
            eng.need_validation.add(tp)
        c._run(diverge())
        if policy == "none":
            with pytest.raises(LogTruncationError, match="offset 50"):
                c.poll(500)
        else:
            assert c.poll(500) == {}
            assert c.position(tp) == 10
        c.close()


def test_fetch_settings_are_honoured(broker):
    topic = "fetch-settings"
    create(broker.bootstrap, topic, 1)
    with Producer({"bootstrap.servers": broker.bootstrap, "batch.size": "2000", "linger.ms": "0"}) as p:
        for i in range(200):
            p.send(topic, b"v" * 100)
        p.flush()
    tp = TopicPartition(topic, 0)
    # max.poll.records caps each poll; tiny max.partition.fetch.bytes still makes progress (one batch)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "auto.offset.reset": "earliest",
                  "max.poll.records": "7", "max.partition.fetch.bytes": "100", "fetch.max.bytes": "100"})
    c.assign([tp])
    sizes = []
    offsets = []
    deadline = time.monotonic() + 20
    while len(offsets) < 200 and time.monotonic() < deadline:
        recs = c.poll(200).get(tp, [])
        if recs:
            sizes.append(len(recs))
            offsets += [r.offset for r in recs]
    c.close()
    assert offsets == list(range(200))
    assert max(sizes) == 7
    # a budget of one and a half batches: every answer ends in a partial batch (Kafka's byte
    # slice), which the consumer leaves for its next fetch
    c = Consumer({"bootstrap.servers": broker.bootstrap, "auto.offset.reset": "earliest",
                  "max.partition.fetch.bytes": "3000"})
    c.assign([tp])
    offsets = []
    deadline = time.monotonic() + 20
    while len(offsets) < 200 and time.monotonic() < deadline:
        offsets += [r.offset for r in c.poll(200).get(tp, [])]
    c.close()
    assert offsets == list(range(200))
    # fetch.min.bytes not reached: the broker holds the fetch for fetch.max.wait.ms
    c = Consumer({"bootstrap.servers": broker.bootstrap, "auto.offset.reset": "latest",
                  "fetch.min.bytes": "1000000", "fetch.max.wait.ms": "700"})
    c.assign([tp])
    t0 = time.monotonic()
    c.poll(100)
    with Producer({"bootstrap.servers": broker.bootstrap}) as p:
        p.send(topic, b"late").get(10)
    got = []
    while not got and time.monotonic() - t0 < 10:
        got = c.poll(100).get(tp, [])
    assert [r.value for r in got] == [b"late"]
    # every fetch waited the full fetch.max.wait.ms since 1 MB never arrived
    assert time.monotonic() - t0 >= 0.7
    c.close()
