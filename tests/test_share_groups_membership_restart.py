"""Share group membership survives kill -9 of the broker, as on Apache Kafka 4.4 (tested on both in
the same test): the group's records in `__consumer_offsets` (Kafka's ShareGroup* record types)
bring back its epoch, assignment epoch and members, and a member heartbeating with the epoch it
had keeps it without joining again. The records pylog wrote decode as Kafka's types."""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from support import share_scenarios as sc
from support.broker_fixtures import BrokerProcess
from support.segments import logged_records
from support.kafka_peer import KafkaNode
from support.share_members import connect, describe, two_sharing
from pylog.core.protocol import share_group_records as sr


def _scenario(bs: str, restart) -> tuple:
    topic, group = sc.name("mr"), sc.name("mr-g")
    sc.create_topic(bs, topic, 2)
    s = connect(bs)
    a, b, before = two_sharing(s, group, [topic])
    s.close()
    bs = restart()
    s = connect(bs)
    after = describe(s, group)
    a.s = b.s = s
    epoch = a.epoch
    a.heartbeat()  # raises unless the broker still knows the member at its epoch
    b.heartbeat()
    kept = a.epoch == epoch
    s.close()
    return before, after, kept, group


def test_membership_survives_kill9(tmp_path):
    # pylog starts beside Kafka; Kafka from this thread (its JVM dies with the thread that started it)
    with ThreadPoolExecutor(1) as pool:
        pylog_start = pool.submit(BrokerProcess(tmp_path / "pylog").start, timeout=120)
        try:
            node = KafkaNode(tmp_path / "kafka").format().start()
        except BaseException:
            if pylog_start.exception() is None:
                pylog_start.result().stop_clean()
            raise
        try:
            b = pylog_start.result()
        except BaseException:
            node.stop()
            raise

    def restart_pylog():
        b.kill9()
        b.start(port=b.port, timeout=120)
        return b.bootstrap

    def restart_kafka():
        node.kill9()
        node.start()
        return node.bootstrap

    try:
        out = sc.on_both({"pylog": (b.bootstrap, restart_pylog), "kafka": (node.bootstrap, restart_kafka)},
                         lambda arg: _scenario(*arg))
    finally:
        with ThreadPoolExecutor(1) as pool:  # the two stop side by side
            kafka_stop = pool.submit(node.stop)
            b.stop_clean()
            kafka_stop.result()
    for which, (before, after, kept, _) in out.items():
        assert before == ("Stable", 4, 4, [4, 4]), (which, before)
        assert after == before and kept, (which, after, kept)
    _records_are_kafkas(tmp_path / "pylog", out["pylog"][3])


def _records_are_kafkas(log_dir: Path, group: str) -> None:
    from pylog.broker.groups import offsets_topic as ot  # noqa: PLC0415

    seen = set()
    for key, value in logged_records(log_dir, ot.TOPIC):
        if sr.is_share_record(key):
            rtype, k, _v = sr.decode(key, value)
            if k["group_id"] == group:
                seen.add(rtype)
    assert seen == {sr.MEMBER_METADATA, sr.GROUP_METADATA, sr.TARGET_METADATA, sr.TARGET_MEMBER,
                    sr.CURRENT_ASSIGNMENT, sr.STATE_PARTITION_METADATA}, seen
