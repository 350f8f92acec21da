"""pylog's transactional producer and read_committed consumer against Apache Kafka (the reference).

Commit and abort seen exactly through both isolation levels, fencing by a second producer with
the same transactional.id, consume-transform-produce with send_offsets_to_transaction, an
abortable error followed by a successful transaction, and the state machine's refusals.
"""
from __future__ import annotations

import time

import pytest

from pylog.core.client import Admin, Consumer, Producer, TopicPartition
from pylog.core.client.membership import attach_group
from pylog.core.client.transactions import (
    AbortableTransactionError,
    ConsumerGroupMetadata,
    FatalTransactionError,
    TransactionStateError,
)
from pylog.core.errors import ProducerFencedError, UsageError
from support.waiting import wait_until
from support.txn_clients import PEERS, _n, new_topic, read_all, values  # noqa: F401


@pytest.fixture(params=PEERS)
def peer(request):
    if request.param == "kafka":
        return request.getfixturevalue("kafka_node").bootstrap
    return request.getfixturevalue("broker").bootstrap


def txn_producer(bootstrap, tid, **props) -> Producer:
    p = Producer({"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": "5", **props})
    return p


def committed_offset(consumer, tp):
    got = consumer.committed([tp]).get(tp)
    off = got[0] if isinstance(got, tuple) else got
    return None if off is None or off < 0 else off


def test_commit_and_abort_seen_exactly_by_both_isolation_levels(peer):
    topic = new_topic(peer)
    p = txn_producer(peer, f"tx-{topic}")
    try:
        p.init_transactions()
        assert p.transaction_state == "READY" and p.producer_id >= 0
        p.begin_transaction()
        for i in range(100):
            p.send(topic, f"c{i}", key=f"k{i % 5}")
        p.commit_transaction()
        p.begin_transaction()
        p.send_many(topic, [f"a{i}".encode() for i in range(50)])
        p.flush()  # sent, then aborted: on disk but never visible to read_committed
        p.abort_transaction()
        p.begin_transaction()
        futs = [p.send(topic, f"d{i}", partition=1) for i in range(10)]
        p.commit_transaction()
        assert all(f.done() and f.exception() is None for f in futs)
        assert p.transaction_state == "READY"
    finally:
        p.close()
    committed = read_all(peer, topic, 2, "read_committed", expect=110)
    assert values(committed) == sorted([f"c{i}".encode() for i in range(100)] + [f"d{i}".encode() for i in range(10)])
    everything = read_all(peer, topic, 2, "read_uncommitted")
    assert values(everything) == sorted(values(committed) + [f"a{i}".encode() for i in range(50)])
    # the records keep their offsets in both views; control batches (markers) are never records
    for part, recs in committed.items():
        assert set(recs) <= set(everything[part])
    assert sum(len(r) for r in everything.values()) == 160


def test_open_transaction_is_invisible_until_commit(peer):
    topic = new_topic(peer, 1)
    p = txn_producer(peer, f"tx-{topic}")
    try:
        p.init_transactions()
        p.begin_transaction()
        for i in range(20):
            p.send(topic, f"v{i}")
        p.flush()
        # read_committed stops at the last stable offset, before the open transaction
        assert read_all(peer, topic, 1, "read_committed") == {0: []}
        assert len(read_all(peer, topic, 1, "read_uncommitted")[0]) == 20
        p.commit_transaction()
    finally:
        p.close()
    assert len(read_all(peer, topic, 1, "read_committed", expect=20)[0]) == 20


def test_second_producer_with_the_same_id_fences_the_first(peer):
    topic = new_topic(peer, 1)
    tid = f"tx-{topic}"
    p1 = txn_producer(peer, tid)
    p2 = txn_producer(peer, tid)
    try:
        p1.init_transactions()
        p1.begin_transaction()
        p1.send(topic, "old-1").get(30)
        p2.init_transactions()  # fences p1 and aborts its open transaction
        assert p2.producer_id == p1.producer_id and p2.producer_epoch > p1.producer_epoch
        with pytest.raises(FatalTransactionError) as e:
            p1.send(topic, "old-2")
            p1.commit_transaction()
        assert e.value.fenced and isinstance(e.value.cause, ProducerFencedError)
        assert p1.transaction_state == "FATAL_ERROR"
        with pytest.raises(FatalTransactionError):
            p1.begin_transaction()
        p2.begin_transaction()
        p2.send(topic, "new-1")
        p2.commit_transaction()
    finally:
        p1.close()
        p2.close()
    assert values(read_all(peer, topic, 1, "read_committed", expect=1)) == [b"new-1"]


def test_send_offsets_to_transaction_commits_offsets_only_with_the_transaction(peer):
    src = new_topic(peer, 1)
    dst = new_topic(peer, 1)
    group = f"g-{src}"
    plain = Producer({"bootstrap.servers": peer})
    plain.send_many(src, [f"in{i}".encode() for i in range(30)])
    plain.flush()
    plain.close()
    c = Consumer({"bootstrap.servers": peer, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": "false", "isolation.level": "read_committed"})
    p = txn_producer(peer, f"tx-{src}")
    tp = TopicPartition(src, 0)
    try:
        attach_group(c)
        c.subscribe([src])
        got = []
        wait_until(lambda: got.extend(r for rs in c.poll(200).values() for r in rs) or len(got) >= 30,
                   60, "30 input records")
        meta = c.group_metadata()
        assert isinstance(meta, ConsumerGroupMetadata) and meta.generation_id >= 1 and meta.member_id
        p.init_transactions()
        # an aborted transaction commits neither its output nor its offsets
        p.begin_transaction()
        for r in got[:10]:
            p.send(dst, r.value.upper())
        p.send_offsets_to_transaction({tp: got[9].offset + 1}, meta)
        p.abort_transaction()
        assert committed_offset(c, tp) is None
        p.begin_transaction()
        for r in got:
            p.send(dst, r.value.upper())
        p.send_offsets_to_transaction({tp: got[-1].offset + 1}, meta)
        p.commit_transaction()
        # the markers (also to __consumer_offsets) are written after EndTxn is answered
        wait_until(lambda: committed_offset(c, tp) == 30, 30, "the offsets committed with the transaction")
    finally:
        p.close()
        c.close()
    assert values(read_all(peer, dst, 1, "read_committed", expect=30)) == sorted(f"IN{i}".encode() for i in range(30))


def test_abortable_error_then_abort_then_a_good_transaction(peer):
    topic = new_topic(peer, 1, configs={"max.message.bytes": "2000"})
    p = txn_producer(peer, f"tx-{topic}")
    try:
        p.init_transactions()
        p.begin_transaction()
        p.send(topic, "fine")
        big = p.send(topic, b"x" * 5000, partition=0)
        with pytest.raises(AbortableTransactionError):
            p.commit_transaction()
        assert big.exception() is not None
        assert p.transaction_state == "ABORTABLE_ERROR"
        with pytest.raises(AbortableTransactionError):
            p.send(topic, "refused")
        p.abort_transaction()
        assert p.transaction_state == "READY"
        p.begin_transaction()
        p.send(topic, "after")
        p.commit_transaction()
    finally:
        p.close()
    assert values(read_all(peer, topic, 1, "read_committed", expect=1)) == [b"after"]


def test_close_aborts_an_open_transaction(peer):
    topic = new_topic(peer, 1)
    p = txn_producer(peer, f"tx-{topic}")
    p.init_transactions()
    p.begin_transaction()
    p.send(topic, "never").get(30)
    p.close()
    # the markers are written: the LSO passes the aborted records at once (no transaction timeout)
    view = read_all(peer, topic, 1, "read_committed")
    assert view == {0: []}
    assert len(read_all(peer, topic, 1, "read_uncommitted")[0]) == 1


def test_state_machine_refusals(peer):
    topic = new_topic(peer, 1)
    with pytest.raises(UsageError, match="idempotence"):
        Producer({"bootstrap.servers": peer, "transactional.id": "x", "enable.idempotence": "false"})
    plain = Producer({"bootstrap.servers": peer})
    try:
        with pytest.raises(UsageError, match="transactional.id"):
            plain.begin_transaction()
    finally:
        plain.close()
    p = txn_producer(peer, f"tx-{topic}")
    try:
        with pytest.raises(TransactionStateError):
            p.begin_transaction()  # before init_transactions
        p.init_transactions()
        with pytest.raises(TransactionStateError, match="begin_transaction"):
            p.send(topic, "outside")
        with pytest.raises(TransactionStateError):
            p.commit_transaction()
        with pytest.raises(TransactionStateError):
            p.send_offsets_to_transaction({(topic, 0): 1}, "g")
        p.begin_transaction()
        with pytest.raises(TransactionStateError):
            p.begin_transaction()
        p.commit_transaction()  # an empty transaction: nothing to tell the coordinator
        assert p.transaction_state == "READY"
    finally:
        p.close()


def test_interleaved_transactions_on_one_partition(peer):
    """Batches of a committed and an aborted transaction and of a plain producer interleave on one
    partition: read_committed drops exactly the aborted producer's, by the fetch's aborted list."""
    topic = new_topic(peer, 1)
    p1 = txn_producer(peer, f"tx1-{topic}")
    p2 = txn_producer(peer, f"tx2-{topic}")
    plain = Producer({"bootstrap.servers": peer})
    try:
        p1.init_transactions()
        p2.init_transactions()
        for round_ in range(3):
            p1.begin_transaction()
            p2.begin_transaction()
            for i in range(5):
                p1.send(topic, f"keep-{round_}-{i}").get(30)
                p2.send(topic, f"drop-{round_}-{i}").get(30)
                plain.send(topic, f"plain-{round_}-{i}").get(30)
            if round_ == 1:  # the aborted one ends first in this round
                p2.abort_transaction()
                p1.commit_transaction()
            else:
                p1.commit_transaction()
                p2.abort_transaction()
    finally:
        p1.close()
        p2.close()
        plain.close()
    kept = values(read_all(peer, topic, 1, "read_committed", expect=30))
    assert kept == sorted([f"keep-{r}-{i}".encode() for r in range(3) for i in range(5)]
                          + [f"plain-{r}-{i}".encode() for r in range(3) for i in range(5)])
    assert len(read_all(peer, topic, 1, "read_uncommitted")[0]) == 45


def test_a_batch_send_many_opened_but_not_filled_is_never_drained():
    """send_many opens a batch and appends to it under a second lock hold: a sender turn in
    between must not send it empty (Kafka answers INVALID_RECORD, which in a transaction makes
    it abortable: seen under load in bench txn)."""
    from pylog.core.client.accumulator import BufferPool, RecordAccumulator
    from pylog.core.client.cluster import BrokerInfo, ClusterMetadata, PartitionInfo, TopicInfo
    from pylog.core.client.producer import resolve_producer_config

    cfg = resolve_producer_config({"bootstrap.servers": "127.0.0.1:1", "linger.ms": "0"})
    acc = RecordAccumulator(cfg, BufferPool(cfg["buffer.memory"], cfg["batch.size"]), 0)
    md = ClusterMetadata({1: BrokerInfo(1, "127.0.0.1", 1)},
                         {"t": TopicInfo("t", partitions={0: PartitionInfo(0, 1)})})
    assert acc.add_batch(acc.new_batch("t", 0, 10))
    acc.flushing = 1  # the most eager the sender gets
    ready, _, _ = acc.ready(md, time.monotonic() + 1, set())
    assert ready == set() and acc.drain(md, 1, 1 << 20, set(), None) == []
    acc.deques[("t", 0)][0].try_append(0, None, b"v", None)
    ready, _, _ = acc.ready(md, time.monotonic() + 1, set())
    assert ready == {1} and len(acc.drain(md, 1, 1 << 20, set(), None)) == 1
