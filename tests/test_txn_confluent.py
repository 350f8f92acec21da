"""Transactions on pylog's broker, driven by confluent-kafka (librdkafka 2.16) and the raw protocol.

Commit and abort with exact read_committed / read_uncommitted views, an open
transaction holding back the last stable offset, consume-transform-produce
with send_offsets_to_transaction, fencing by a second producer with the same
transactional id, a transaction left open across a broker kill -9 that the
broker aborts after its timeout, a PrepareCommit completed on restart, state
replayed after a restart, and KIP-890's refusal of a partition not added.
"""
from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from support.broker_fixtures import call, connect, module_broker, read_to_end
from support.waiting import wait_until
from support.txn_clients import (  # noqa: F401
    READ_COMMITTED, READ_UNCOMMITTED, create, list_offset, open_raw_txn, read,
)

FAST_ABORT = ("--set", "transaction.abort.timed.out.transaction.cleanup.interval.ms=300")


# the consume-transform-produce group's first join is not held back group.initial.rebalance.delay.ms (3 s)
broker = module_broker("txn", *FAST_ABORT, "--set", "group.initial.rebalance.delay.ms=0")


def txn_producer(b, tid, **extra) -> Producer:
    p = Producer({"bootstrap.servers": b.bootstrap, "transactional.id": tid, "linger.ms": 5, **extra})
    p.init_transactions(30)
    return p


def describe_txn(b, tid) -> dict:
    with connect(b) as s:
        return call(s, 65, 0, {"transactional_ids": [tid]})["transaction_states"][0]


def test_commit_and_abort_views_are_exact(broker):
    create(broker, "tx-views", 2)
    p = txn_producer(broker, "tx-views-id")
    p.begin_transaction()
    for i in range(6):
        p.produce("tx-views", f"c{i}".encode(), partition=i % 2)
    p.commit_transaction(30)
    p.begin_transaction()
    for i in range(4):
        p.produce("tx-views", f"a{i}".encode(), partition=i % 2)
    p.flush(30)
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce("tx-views", b"c-last", partition=1)
    p.commit_transaction(30)
    assert read(broker, "tx-views", [0, 1], READ_COMMITTED) == {0: ["c0", "c2", "c4"], 1: ["c1", "c3", "c5", "c-last"]}
    assert read(broker, "tx-views", [0, 1], READ_UNCOMMITTED) == {
        0: ["c0", "c2", "c4", "a0", "a2"], 1: ["c1", "c3", "c5", "a1", "a3", "c-last"]}
    # the abort left its range in the .txnindex of each partition
    for part in (0, 1):
        idx = list((broker.log_dir / f"tx-views-{part}").glob("*.txnindex"))
        assert idx and sum(f.stat().st_size for f in idx) == 34, idx  # one AbortedTxn entry
    state = describe_txn(broker, "tx-views-id")
    assert (state["error_code"], state["transaction_state"]) == (0, "CompleteCommit")


def test_open_transaction_holds_back_the_last_stable_offset(broker):
    create(broker, "tx-lso")
    p = txn_producer(broker, "tx-lso-id")
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    plain.produce("tx-lso", b"before")
    plain.flush(10)
    p.begin_transaction()
    p.produce("tx-lso", b"in-txn")
    p.flush(30)
    plain.produce("tx-lso", b"after")
    plain.flush(10)
    assert list_offset(broker, "tx-lso", 0, 1) == 1  # READ_COMMITTED: the open transaction's first offset
    assert list_offset(broker, "tx-lso", 0, 0) == 3
    assert read(broker, "tx-lso", [0], READ_COMMITTED) == {0: ["before"]}
    assert read(broker, "tx-lso", [0], READ_UNCOMMITTED) == {0: ["before", "in-txn", "after"]}
    p.commit_transaction(30)
    assert list_offset(broker, "tx-lso", 0, 1) == 4  # past the COMMIT marker
    assert read(broker, "tx-lso", [0], READ_COMMITTED) == {0: ["before", "in-txn", "after"]}


def committed(b, group, topic, partition) -> int:
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return c.committed([TopicPartition(topic, partition)], timeout=15)[0].offset
    finally:
        c.close()


def test_consume_transform_produce_with_offsets(broker):
    create(broker, "tx-in")
    create(broker, "tx-out")
    plain = Producer({"bootstrap.servers": broker.bootstrap})
    for i in range(20):
        plain.produce("tx-in", f"{i}".encode())
    plain.flush(10)
    c = Consumer({"bootstrap.servers": broker.bootstrap, "group.id": "tx-ctp", "enable.auto.commit": False,
                  "auto.offset.reset": "earliest", "isolation.level": READ_COMMITTED})
    c.subscribe(["tx-in"])
    p = txn_producer(broker, "tx-ctp-id")
    try:
        for commit, wanted in ((True, 10), (False, 10), (True, 10)):
            got = []
            deadline = time.monotonic() + 30
            while len(got) < wanted:
                assert time.monotonic() < deadline, f"read {len(got)} of {wanted}"
                got += [m for m in c.consume(wanted - len(got), 1.0) if not m.error()]
            p.begin_transaction()
            for m in got:
                p.produce("tx-out", (m.value().decode() + "!").encode())
            p.send_offsets_to_transaction([TopicPartition("tx-in", 0, got[-1].offset() + 1)],
                                          c.consumer_group_metadata(), 30)
            if commit:
                p.commit_transaction(30)
            else:
                p.flush(30)  # the aborted records are in the log, not just purged from the queue
                p.abort_transaction(30)
                # an abort rewinds the consumer to the last committed offset, as an EOS app does
                c.seek(TopicPartition("tx-in", 0, committed(broker, "tx-ctp", "tx-in", 0)))
    finally:
        c.close()
    assert committed(broker, "tx-ctp", "tx-in", 0) == 20
    assert read(broker, "tx-out", [0], READ_COMMITTED) == {0: [f"{i}!" for i in range(20)]}
    assert len(read(broker, "tx-out", [0], READ_UNCOMMITTED)[0]) == 30


def test_second_producer_fences_the_first(broker):
    create(broker, "tx-fence")
    p1 = txn_producer(broker, "tx-fence-id")
    p1.begin_transaction()
    p1.produce("tx-fence", b"zombie")
    p1.flush(30)
    p2 = txn_producer(broker, "tx-fence-id")  # aborts p1's transaction and bumps the epoch
    with pytest.raises(KafkaException) as e:
        p1.produce("tx-fence", b"zombie-2")
        p1.commit_transaction(30)
    assert e.value.args[0].fatal(), e.value.args[0]
    p2.begin_transaction()
    p2.produce("tx-fence", b"p2")
    p2.commit_transaction(30)
    assert read(broker, "tx-fence", [0], READ_COMMITTED) == {0: ["p2"]}
    assert read(broker, "tx-fence", [0], READ_UNCOMMITTED)[0][0] == "zombie"


def test_kip890_transactional_produce_to_a_partition_not_added(broker):
    from support.broker_fixtures import build_batch
    from pylog.core.records import BatchBuilder

    create(broker, "tx-890", 2)
    with connect(broker) as s:
        init = call(s, 22, 4, {"transactional_id": "tx-890-id", "transaction_timeout_ms": 60000,
                               "producer_id": -1, "producer_epoch": -1})
        pid, epoch = init["producer_id"], init["producer_epoch"]
        r = call(s, 24, 3, {"v3_and_below_transactional_id": "tx-890-id", "v3_and_below_producer_id": pid,
                            "v3_and_below_producer_epoch": epoch,
                            "v3_and_below_topics": [{"name": "tx-890", "partitions": [0]}]})
        assert r["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"] == 0

        def produce(version, partition, seq):
            b = BatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True)
            b.append(int(time.time() * 1000), None, b"x")
            resp = call(s, 0, version, {"transactional_id": "tx-890-id", "acks": -1, "timeout_ms": 5000,
                                        "topic_data": [{"name": "tx-890", "partition_data": [
                                            {"index": partition, "records": bytearray(b.build())}]}]})
            return resp["responses"][0]["partition_responses"][0]

        assert produce(9, 0, 0)["error_code"] == 0
        refused = produce(9, 1, 0)
        assert (refused["error_code"], refused["error_message"]) == (48, "Partition was not added to the transaction")
        assert produce(11, 1, 0)["error_code"] == 120  # TRANSACTION_ABORTABLE for v11 clients
        assert list_offset(broker, "tx-890", 1, 0) == 0  # nothing stored
        # a batch without the transactional bit is not a transaction's: no check
        plain = build_batch([(None, b"y", [])])
        r = call(s, 0, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": "tx-890", "partition_data": [{"index": 1, "records": plain}]}]})
        assert r["responses"][0]["partition_responses"][0]["error_code"] == 0
        assert call(s, 26, 3, {"transactional_id": "tx-890-id", "producer_id": pid, "producer_epoch": epoch,
                               "committed": False})["error_code"] == 0


def test_open_transaction_across_kill9_is_aborted_after_its_timeout(broker_factory):
    b = broker_factory(None, *FAST_ABORT)
    create(b, "tx-kill")
    p = txn_producer(b, "tx-kill-id", **{"transaction.timeout.ms": 4000})
    p.begin_transaction()
    for i in range(3):
        p.produce("tx-kill", f"open{i}".encode())
    p.flush(30)
    before = describe_txn(b, "tx-kill-id")
    assert before["transaction_state"] == "Ongoing"
    b.kill9()
    b.restart()
    plain = Producer({"bootstrap.servers": b.bootstrap})
    plain.produce("tx-kill", b"after")
    plain.flush(15)
    # replayed Ongoing, then aborted by the timer once its 4 s are up
    wait_until(lambda: describe_txn(b, "tx-kill-id")["transaction_state"] == "CompleteAbort", 60)
    after = describe_txn(b, "tx-kill-id")
    assert after["producer_epoch"] == before["producer_epoch"] + 1  # the old producer is fenced
    assert read(b, "tx-kill", [0], READ_COMMITTED) == {0: ["after"]}
    assert read(b, "tx-kill", [0], READ_UNCOMMITTED) == {0: ["open0", "open1", "open2", "after"]}
    del p  # its next request would be fenced; librdkafka's destructor does not block on it


@pytest.mark.parametrize("prepared, done, visible", [("PREPARE_COMMIT", "CompleteCommit", ["prepared"]),
                                                      ("PREPARE_ABORT", "CompleteAbort", [])])
def test_prepared_transaction_is_completed_on_restart(broker_factory, prepared, done, visible):
    """A kill -9 after the PrepareCommit/PrepareAbort record but before the markers: the restart
    writes the markers and the Complete state."""
    from pylog.broker.txn.state import TOPIC, TxnMetadata
    from pylog.core.config import TOPIC_CONFIGS
    from pylog.core.protocol.txn_log import TxnState
    from pylog.core.records import BatchBuilder
    from pylog.broker.groups.offsets_topic import partition_for
    from pylog.storage.log import Log

    b = broker_factory(None)
    create(b, "tx-prep")
    tid = "tx-prep-id"
    pid, epoch = open_raw_txn(b, tid, "tx-prep", b"prepared")
    assert read(b, "tx-prep", [0], READ_UNCOMMITTED) == {0: ["prepared"]}
    b.kill9()
    # what the coordinator writes first when EndTxn(commit) arrives, then "crash"
    tdir = b.log_dir / f"{TOPIC}-{partition_for(tid, 50)}"
    lg = Log(tdir, TOPIC_CONFIGS.resolve({"cleanup.policy": "compact"}), fsync=False, had_clean_shutdown=False)
    now = int(time.time() * 1000)
    m = TxnMetadata(tid, pid, epoch, 60000, TxnState[prepared], pid, -1, -1, {("tx-prep", 0)}, now, now)
    rec = BatchBuilder()
    rec.append(now, m.key(), m.to_value())
    lg.append_internal(bytearray(rec.build()), 0)
    lg.close()
    b.restart()
    assert describe_txn(b, tid)["transaction_state"] == done
    assert read(b, "tx-prep", [0], READ_COMMITTED) == {0: visible}
    assert list_offset(b, "tx-prep", 0, 1) == 2  # the marker is there: nothing is left open


def test_state_is_replayed_after_restart(broker_factory):
    b = broker_factory(None)
    with connect(b) as s:
        first = call(s, 22, 4, {"transactional_id": "tx-replay", "transaction_timeout_ms": 60000,
                                "producer_id": -1, "producer_epoch": -1})
    b.stop()
    b.restart()
    with connect(b) as s:
        again = call(s, 22, 4, {"transactional_id": "tx-replay", "transaction_timeout_ms": 60000,
                                "producer_id": -1, "producer_epoch": -1})
    assert (again["producer_id"], again["producer_epoch"]) == (first["producer_id"], first["producer_epoch"] + 1)


def test_open_transaction_survives_a_clean_restart_in_the_snapshot(broker_factory):
    """A clean shutdown writes producer snapshots; the open transaction in them still holds the LSO."""
    from pylog.storage.producer_state import read_snapshot

    b = broker_factory(None)
    create(b, "tx-snap")
    tid = "tx-snap-id"
    pid, epoch = open_raw_txn(b, tid, "tx-snap", b"open", timeout_ms=600000)
    plain = Producer({"bootstrap.servers": b.bootstrap})
    plain.produce("tx-snap", b"after")
    plain.flush(10)
    b.stop()
    snaps = sorted((b.log_dir / "tx-snap-0").glob("*.snapshot"))
    assert snaps and [e.current_txn_first_offset for e in read_snapshot(snaps[-1]) if e.producer_id == pid] == [0]
    b.restart()
    assert list_offset(b, "tx-snap", 0, 1) == 0 and list_offset(b, "tx-snap", 0, 0) == 2
    with connect(b) as s:
        assert call(s, 26, 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                               "committed": True})["error_code"] == 0
    assert read(b, "tx-snap", [0], READ_COMMITTED) == {0: ["open", "after"]}


def test_idle_transactional_id_expires(broker_factory):
    """transactional.id.expiration.ms: an id with no transaction for that long is removed (a
    tombstone in __transaction_state, so it stays removed after a restart); a later
    InitProducerId starts it afresh with a new producer id."""
    b = broker_factory(None, "--set", "transactional.id.expiration.ms=1500",
                       "--set", "transaction.remove.expired.transaction.cleanup.interval.ms=200")
    with connect(b) as s:
        first = call(s, 22, 4, {"transactional_id": "tx-expire", "transaction_timeout_ms": 1000,
                                "producer_id": -1, "producer_epoch": -1})
    assert describe_txn(b, "tx-expire")["error_code"] == 0
    wait_until(lambda: describe_txn(b, "tx-expire")["error_code"] == 105, 30, "TRANSACTIONAL_ID_NOT_FOUND")
    b.stop()
    b.restart()
    assert describe_txn(b, "tx-expire")["error_code"] == 105
    with connect(b) as s:
        again = call(s, 22, 4, {"transactional_id": "tx-expire", "transaction_timeout_ms": 1000,
                                "producer_id": -1, "producer_epoch": -1})
    assert again["error_code"] == 0 and again["producer_id"] != first["producer_id"]
    assert again["producer_epoch"] == 0


def test_transaction_timeout_above_the_broker_maximum_is_refused(broker):
    with connect(broker) as s:
        r = call(s, 22, 4, {"transactional_id": "tx-too-long", "transaction_timeout_ms": 900001,
                            "producer_id": -1, "producer_epoch": -1})
    assert r["error_code"] == 50  # INVALID_TRANSACTION_TIMEOUT (transaction.max.timeout.ms=900000)


def test_transactional_offsets_are_replayed_by_their_markers(broker_factory):
    """__consumer_offsets replay: a committed transaction's offsets apply, an aborted one's do
    not, an open one's stay pending (require_stable: UNSTABLE_OFFSET_COMMIT) until its COMMIT."""
    b = broker_factory(None)
    create(b, "tx-off")
    tid, group = "tx-off-id", "tx-off-group"
    with connect(b) as s:
        init = call(s, 22, 4, {"transactional_id": tid, "transaction_timeout_ms": 600000,
                               "producer_id": -1, "producer_epoch": -1})
        pid, epoch = init["producer_id"], init["producer_epoch"]

        def txn(offset, end):
            ids = {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch}
            assert call(s, 25, 3, {**ids, "group_id": group})["error_code"] == 0
            r = call(s, 28, 3, {**ids, "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                                "group_instance_id": None, "topics": [{"name": "tx-off", "partitions": [
                                    {"partition_index": 0, "committed_offset": offset,
                                     "committed_leader_epoch": -1, "committed_metadata": ""}]}]})
            assert r["topics"][0]["partitions"][0]["error_code"] == 0
            if end is not None:
                assert call(s, 26, 3, {**ids, "committed": end})["error_code"] == 0

        txn(5, True)
        txn(9, False)
        txn(11, None)
    b.stop()
    b.restart()

    def fetch(stable):
        with connect(b) as s:
            r = call(s, 9, 8, {"groups": [{"group_id": group, "topics": [{"name": "tx-off", "partition_indexes": [0]}]}],
                               "require_stable": stable})
        p = r["groups"][0]["topics"][0]["partitions"][0]
        return p["error_code"], p["committed_offset"]

    assert fetch(False) == (0, 5)
    assert fetch(True) == (88, -1)  # UNSTABLE_OFFSET_COMMIT: the open transaction holds an offset
    with connect(b) as s:
        assert call(s, 26, 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": epoch,
                               "committed": True})["error_code"] == 0
    assert fetch(True) == (0, 11)
