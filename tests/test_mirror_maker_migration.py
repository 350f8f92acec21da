"""The way out, live: Kafka's MirrorMaker 2 (connect-mirror-maker, dedicated mode) replicates a
running pylog broker's topic, and its consumer group's committed offsets, to a 3-broker Apache
Kafka cluster (the run's `kafka_cluster`, shared with test_kafka_cluster); the group then moves
over and carries on from its position.

connect-mirror 4.4.0 is not on Maven Central yet, so MirrorMaker runs as Kafka 4.3.1 ships it
(tests/kafka/mirror/pom.xml, a classpath of its own); the target cluster is Kafka 4.4.0.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from support.broker_fixtures import BrokerProcess
from support.kafka_peer import java, jvm_options

pytestmark = pytest.mark.timeout(900)

MIRROR_POM = Path(__file__).parent / "kafka" / "mirror" / "pom.xml"
MIRROR_CP = MIRROR_POM.parent / "target" / "classpath.txt"
TOPIC, GROUP = "orders", "billing"
N = 200


def mirror_classpath() -> str:
    if not MIRROR_CP.exists() or MIRROR_CP.stat().st_mtime < MIRROR_POM.stat().st_mtime:
        subprocess.run([shutil.which("mvn"), "-q", "-B", "-f", str(MIRROR_POM), "dependency:build-classpath",
                        f"-Dmdep.outputFile={MIRROR_CP}"], check=True, capture_output=True, timeout=900)
    return MIRROR_CP.read_text().strip()


def mm2_properties(source: str, target: str) -> str:
    return "\n".join([
        "clusters = pylog, kafka",
        f"pylog.bootstrap.servers = {source}",
        f"kafka.bootstrap.servers = {target}",
        "pylog->kafka.enabled = true",
        "kafka->pylog.enabled = false",
        f"pylog->kafka.topics = {TOPIC}",
        f"pylog->kafka.groups = {GROUP}",
        # the same topic names on the target, so consumers move over without a change
        "replication.policy.class = org.apache.kafka.connect.mirror.IdentityReplicationPolicy",
        "sync.group.offsets.enabled = true",
        "sync.group.offsets.interval.seconds = 1",
        "emit.checkpoints.interval.seconds = 1",
        "refresh.topics.interval.seconds = 2",
        "refresh.groups.interval.seconds = 2",
        "offset.lag.max = 0",
        # the Connect worker commits its source tasks' offsets every second instead of every 60 s:
        # MirrorSourceTask hands its delayed offset syncs over on that commit, and the group's
        # offset can be translated (checkpointed, synced) only from those syncs
        "kafka.offset.flush.interval.ms = 1000",
        # MirrorMaker's plugins come with ServiceLoader manifests: no reflective scan of the classpath
        # (seconds of a start, done once for MirrorMaker and once for its herder's worker)
        "plugin.discovery = service_load",
        "kafka.plugin.discovery = service_load",
        # pylog is one node: whatever MirrorMaker keeps there has one replica (the offset syncs of
        # this flow; the Connect worker topics and heartbeats of the unused reverse flow)
        "pylog->kafka.offset-syncs.topic.replication.factor = 1",
        "kafka->pylog.emit.heartbeats.enabled = false",
        "kafka->pylog.heartbeats.topic.replication.factor = 1",
        "kafka->pylog.checkpoints.topic.replication.factor = 1",
        "kafka->pylog.offset-syncs.topic.replication.factor = 1",
        "pylog.config.storage.replication.factor = 1",
        "pylog.offset.storage.replication.factor = 1",
        "pylog.status.storage.replication.factor = 1",
        "replication.factor = 3",
        "",
    ])


def committed(bootstrap: str, group: str) -> int | None:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        (tp,) = c.committed([TopicPartition(TOPIC, 0)], timeout=20)
        return tp.offset if tp.offset >= 0 else None
    finally:
        c.close()


def end_offset(bootstrap: str) -> int:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "probe-end"})
    try:
        return c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=20)[1]
    except KafkaException:
        return -1  # not mirrored yet: the topic does not exist there
    finally:
        c.close()


def wait(cond, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(1)


@pytest.fixture(scope="module")
def pylog_source(tmp_path_factory):
    """pylog's broker, started beside the Kafka cluster (the fixture named after it starts there
    while this one starts here)."""
    with ThreadPoolExecutor(1) as pool:
        started = pool.submit(BrokerProcess(tmp_path_factory.mktemp("mm2-source") / "pylog").start)
        yield started
    started.result().stop_clean()


def test_mirror_maker_moves_topic_and_group_to_kafka(tmp_path, pylog_source, kafka_cluster):
    b = pylog_source.result()
    kafka_cluster.ensure_up()
    mm = None
    try:
        src = b.bootstrap
        admin = AdminClient({"bootstrap.servers": src})
        for f in admin.create_topics([NewTopic(TOPIC, 1, 1)]).values():
            f.result(30)
        p = Producer({"bootstrap.servers": src, "enable.idempotence": True})

        def produce(first: int, last: int) -> None:
            for i in range(first, last):
                p.produce(TOPIC, f"order-{i}".encode(), key=str(i).encode())
            assert p.flush(30) == 0

        # the group consumes and commits the first half of the topic on pylog
        produce(0, N // 2)
        c = Consumer({"bootstrap.servers": src, "group.id": GROUP, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False})
        c.subscribe([TOPIC])
        seen = []
        while len(seen) < N // 2:
            m = c.poll(1.0)
            if m is not None and not m.error():
                seen.append(m.value().decode())
        c.commit(offsets=[TopicPartition(TOPIC, 0, N // 2)], asynchronous=False)
        c.close()
        assert committed(src, GROUP) == N // 2

        props = tmp_path / "mm2.properties"
        props.write_text(mm2_properties(src, kafka_cluster.bootstrap))
        log = open(tmp_path / "mm2.log", "wb")
        mm = subprocess.Popen([java(), *jvm_options(), "-Dorg.slf4j.simpleLogger.defaultLogLevel=info",
                               "-Dorg.slf4j.simpleLogger.showDateTime=true",
                               "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
                               "-cp", mirror_classpath(), "org.apache.kafka.connect.mirror.MirrorMaker", str(props)],
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        target = kafka_cluster.bootstrap
        tail = lambda: (tmp_path / "mm2.log").read_text(errors="replace")[-3000:]  # noqa: E731
        # MirrorMaker translates a committed offset exactly only from an offset sync at the record
        # before it; as more records are mirrored it keeps fewer, further-spaced old syncs, and it
        # never moves a synced group offset back. So: mirror the first half, let the group's offset
        # (the end of that half) reach Kafka, then produce and mirror the rest
        wait(lambda: end_offset(target) == N // 2, 300, f"{N // 2} records mirrored (mm2 log: {tail()})")
        # MirrorMaker syncs a group's offsets to the target only while the group is not active there
        last = []

        def synced():
            last.append(committed(target, GROUP))
            return last[-1] == N // 2
        try:
            wait(synced, 180, "the group's offset on Kafka")
        except AssertionError as e:
            raise AssertionError(f"{e}: last seen {last[-5:]} (mm2 log: {tail()})") from None
        produce(N // 2, N)
        wait(lambda: end_offset(target) == N, 300, f"{N} records mirrored (mm2 log: {tail()})")
        assert committed(target, GROUP) == N // 2

        # the group moves over: on Kafka it reads exactly the records it had not consumed on pylog
        c = Consumer({"bootstrap.servers": target, "group.id": GROUP, "auto.offset.reset": "earliest",
                      "enable.auto.commit": False})
        c.subscribe([TOPIC])
        rest = []
        deadline = time.monotonic() + 120
        while len(rest) < N - N // 2 and time.monotonic() < deadline:
            m = c.poll(1.0)
            if m is not None and not m.error():
                rest.append(m.value().decode())
        c.close()
        assert rest == [f"order-{i}" for i in range(N // 2, N)]
        assert seen + rest == [f"order-{i}" for i in range(N)]
    finally:
        if mm is not None:
            os.killpg(mm.pid, 15)
            try:
                mm.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(mm.pid, 9)
                mm.wait()
