"""murmur2 and partition choice equal to the Java client's."""
from __future__ import annotations

import os

from kafka.partitioner.default import murmur2 as kp_murmur2

from pylog.core.client import Consumer, Producer, TopicPartition
from pylog.core.client.partitioner import StickyPartitioner, murmur2, murmur2_many, partition_for_key

# Kafka's UtilsTest.testMurmur2 vectors (signed Java ints)
KAFKA_VECTORS = {
    b"21": -973932308,
    b"foobar": -790332482,
    b"a-little-bit-long-string": -985981536,
    b"a-little-bit-longer-string": -1486304829,
    b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
    b"abc": 479470107,
}


def test_murmur2_matches_kafka_vectors():
    for key, expected in KAFKA_VECTORS.items():
        assert murmur2(key) == expected, key


def test_murmur2_matches_kafka_python_on_random_keys():
    for i in range(3000):
        k = os.urandom(i % 61)
        assert murmur2(k) & 0xFFFFFFFF == kp_murmur2(k) & 0xFFFFFFFF


def test_vectorised_murmur2_matches_kafka_vectors_and_kafka_python():
    # the reference vectors, many times over so they go through the lanes, not the scalar path
    keys = list(KAFKA_VECTORS) * 40
    assert murmur2_many(keys) == [KAFKA_VECTORS[k] & 0x7FFFFFFF for k in keys]
    # every length the lanes take, mixed, in more than one chunk; then keys past the limit
    for rnd in ([os.urandom(i % 256) for i in range(9000)] + [b""] * 20 + [b"same-key"] * 50,
                [os.urandom(i % 300) for i in range(600)]):
        assert murmur2_many(rnd) == [kp_murmur2(k) & 0x7FFFFFFF for k in rnd]
    assert murmur2_many([]) == []


def expected_partition(key: bytes, n: int) -> int:
    # Java: Utils.toPositive(Utils.murmur2(keyBytes)) % numPartitions, computed from the vectors
    return (KAFKA_VECTORS[key] & 0x7FFFFFFF) % n


def test_partition_table():
    for n in (1, 2, 3, 7, 12, 100):
        for key in KAFKA_VECTORS:
            assert partition_for_key(key, n) == expected_partition(key, n)
    # a few hand-computed rows: toPositive(-973932308)=1173551340; 1173551340 % 7 == 1
    assert partition_for_key(b"21", 7) == 1173551340 % 7
    assert partition_for_key(b"abc", 12) == 479470107 % 12


def test_sticky_switches_partition():
    s = StickyPartitioner()
    first = s.partition("t", 4)
    assert s.partition("t", 4) == first
    nxt = s.next_partition("t", 4, prev=first)
    assert nxt != first and s.partition("t", 4) == nxt


def test_keyed_records_land_where_java_puts_them(broker):
    from pylog.core.client import Admin

    with Admin({"bootstrap.servers": broker.bootstrap}) as a:
        a.create_topic("keyed", 7)
    keys = list(KAFKA_VECTORS) + [f"user-{i}".encode() for i in range(40)]
    with Producer({"bootstrap.servers": broker.bootstrap}) as p:
        futs = [(k, p.send("keyed", b"v", key=k)) for k in keys]
        p.flush()
        placed = {k: f.get(10).partition for k, f in futs}
    for k in KAFKA_VECTORS:
        assert placed[k] == expected_partition(k, 7)
    for k in keys:
        assert placed[k] == (kp_murmur2(k) & 0x7FFFFFFF) % 7
    # and the broker holds them there
    c = Consumer({"bootstrap.servers": broker.bootstrap, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition("keyed", p) for p in range(7)])
    seen = {}
    deadline = 0
    while len(seen) < len(keys) and deadline < 50:
        for tp, recs in c.poll(200).items():
            for r in recs:
                seen[r.key] = tp.partition
        deadline += 1
    c.close()
    assert seen == placed


def test_keyless_records_stick_to_a_partition_until_the_batch_is_full(broker):
    from pylog.core.client import Admin

    with Admin({"bootstrap.servers": broker.bootstrap}) as a:
        a.create_topic("sticky", 4)
    with Producer({"bootstrap.servers": broker.bootstrap, "batch.size": "1000", "linger.ms": "1000"}) as p:
        futs = [p.send("sticky", b"x" * 100) for _ in range(90)]
        p.flush()
        parts = [f.get(5).partition for f in futs]
    runs = []
    for part in parts:
        if runs and runs[-1][0] == part:
            runs[-1][1] += 1
        else:
            runs.append([part, 1])
    assert len(runs) >= 5  # it moved on as batches filled...
    assert all(n >= 5 for _, n in runs[:-1])  # ...and stayed while they had room (~8 records of 100 B)
    assert len(set(parts)) > 1


def test_send_many_places_keys_partitions_and_nulls_as_send_does(broker):
    """The bulk path: keyed records where Java puts them, explicit partitions kept, null keys
    sticky, null values as tombstones, headers on every record, each partition in input order,
    and every record reported in exactly one batch."""
    from pylog.core.client import Admin

    with Admin({"bootstrap.servers": broker.bootstrap}) as a:
        a.create_topic("bulk", 5)
    n = 3000
    keys = [None if i % 7 == 0 else f"user-{i % 97}".encode() for i in range(n)]
    values = [None if i % 11 == 0 else f"{i}".encode() for i in range(n)]
    parts = [4 if i % 13 == 0 else None for i in range(n)]
    shared = [("src", b"bulk")]
    with Producer({"bootstrap.servers": broker.bootstrap, "batch.size": "2000"}) as p:
        runs, refused = p.send_many("bulk", values, keys=keys, headers=[shared] * n, partitions=parts, runs=True)
        p.flush()
    assert refused == []
    placed = {}
    for b, idx, first in runs:
        assert b.done and b.error is None
        for j, i in enumerate(idx):
            assert i not in placed
            placed[i] = (b.partition, b.base_offset + first + j)
    assert sorted(placed) == list(range(n))
    for i in range(n):
        if parts[i] is not None:
            assert placed[i][0] == parts[i]
        elif keys[i] is not None:
            assert placed[i][0] == (kp_murmur2(keys[i]) & 0x7FFFFFFF) % 5
    c = Consumer({"bootstrap.servers": broker.bootstrap, "auto.offset.reset": "earliest"})
    tps = [TopicPartition("bulk", q) for q in range(5)]
    c.assign(tps)
    end = c.end_offsets(tps)
    got = {}
    while sum(c.position(tp) for tp in tps) < sum(end.values()):
        for tp, recs in c.poll(500).items():
            for r in recs:
                got[(tp.partition, r.offset)] = r
    c.close()
    for i, where in placed.items():
        r = got[where]
        assert (r.key, r.value, list(r.headers)) == (keys[i], values[i], shared)
    for q in range(5):  # input order within each partition
        mine = sorted((off, i) for i, (part, off) in placed.items() if part == q)
        assert [i for _, i in mine] == sorted(i for _, i in mine)
