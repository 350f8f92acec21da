"""KIP-848 consumer groups (`group.protocol=consumer`) against a real `pylog broker`.

Members are librdkafka (confluent-kafka) subprocesses (tests/support/cgroup_member_proc.py)
and the Java client 4.3.1; the group's state is read back with ConsumerGroupDescribe,
ListGroups and OffsetFetch over the wire.
"""
from __future__ import annotations

import json

import pytest

from support.broker_fixtures import BrokerProcess, call, connect
from support.member_procs import MemberProcess, end_members
from support.waiting import wait_until
from support.kafka_peer import shell  # noqa: F401 - a ToolShell JVM for the module
from support.cgroup_members import (  # noqa: F401
    CONSUMER_GROUP_DESCRIBE, DESCRIBE_GROUPS, FAST, HERE, LIST_GROUPS, Member, OFFSET_FETCH,
    SESSION_MS, committed, create_topic, describe, produce,
)

GROUP_ID_NOT_FOUND = 69


@pytest.fixture(scope="module")
def cbroker(tmp_path_factory):
    b = BrokerProcess(tmp_path_factory.mktemp("cg848") / "data", *FAST).start()
    yield b
    b.stop_clean()


def covers_once(members, partitions, topic=None):
    owned = [p for m in members for p in m.partitions(topic)]
    return sorted(owned) == list(range(partitions))


def test_three_members_handover_without_duplicates(cbroker):
    topic, group = "k6", "three848"
    create_topic(cbroker, topic, 6)
    produce(cbroker, topic, 6, 20, "a")
    ms = [Member(cbroker, group, topic) for _ in range(3)]
    try:
        wait_until(lambda: covers_once(ms, 6) and all(len(m.assignment) == 2 for m in ms), 60,
                   lambda: f"2 partitions each: {[m.assignment for m in ms]}")
        wait_until(lambda: sum(len(m.records) for m in ms) >= 120, 60, "120 records")
        d = wait_until(lambda: (lambda d: d if d["group_state"] == "Stable" else None)(describe(cbroker, group)), 30,
                       "a Stable group")
        assert d["error_code"] == 0 and d["assignor_name"] == "uniform" and len(d["members"]) == 3
        assert d["group_epoch"] == d["assignment_epoch"] >= 3
        for m in d["members"]:
            assert m["member_epoch"] == d["assignment_epoch"] and m["member_type"] == 1
            assert m["subscribed_topic_names"] == [topic]
            assert m["assignment"] == m["target_assignment"]
            assert [t["topic_name"] for t in m["assignment"]["topic_partitions"]] == [topic]
        # ListGroups (v5 filters by type) shows the type; DescribeGroups answers as Kafka does for a
        # consumer group: not a classic group
        s = connect(cbroker)
        try:
            lg = call(s, LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["consumer"]})["groups"]
            assert {"group_id": group, "protocol_type": "consumer", "group_state": "Stable",
                    "group_type": "consumer"} in lg
            assert not call(s, LIST_GROUPS, 5, {"states_filter": [], "types_filter": ["classic"]})["groups"] or \
                group not in [g["group_id"] for g in call(s, LIST_GROUPS, 5, {"states_filter": [],
                                                                               "types_filter": ["classic"]})["groups"]]
            dg = call(s, DESCRIBE_GROUPS, 5, {"groups": [group], "include_authorized_operations": False})["groups"][0]
            assert dg["group_state"] == "Dead" and dg["members"] == []
        finally:
            s.close()

        # a member leaves (commits, then revokes) and a new one joins: nothing is delivered twice
        ms[2].stop()
        assert ms[2].closed
        wait_until(lambda: covers_once(ms[:2], 6), 60, lambda: f"two owners: {[m.assignment for m in ms[:2]]}")
        ms.append(Member(cbroker, group, topic))
        live = [ms[0], ms[1], ms[3]]
        wait_until(lambda: covers_once(live, 6) and all(len(m.assignment) == 2 for m in live), 60,
                   lambda: f"three owners again: {[m.assignment for m in live]}")
        produce(cbroker, topic, 6, 20, "b")
        wait_until(lambda: committed(cbroker, group, topic, 6) == {p: 40 for p in range(6)}, 60, "commits at 40")
        seen = [r for m in ms for r in m.records]
        assert len(seen) == len(set(seen)) == 240, "a record was delivered twice across the handover"

        # kill -9: the member's session expires and the others take its partitions
        ms[3].kill()
        wait_until(lambda: covers_once(ms[:2], 6), SESSION_MS / 1000 + 60,
                   lambda: f"the survivors to own every partition: {[m.assignment for m in ms[:2]]}")
        d = describe(cbroker, group)
        assert len(d["members"]) == 2
    finally:
        end_members(ms)


def test_static_member_restart_keeps_its_partitions(cbroker):
    topic, group = "st4", "static848"
    create_topic(cbroker, topic, 4)
    ms = [Member(cbroker, group, topic, "inst-a"), Member(cbroker, group, topic, "inst-b")]
    try:
        wait_until(lambda: covers_once(ms, 4) and all(len(m.assignment) == 2 for m in ms), 60,
                   lambda: f"2 partitions each: {[m.assignment for m in ms]}")
        before = describe(cbroker, group)
        mine = ms[0].partitions()
        ms[0].stop()
        # it left with epoch -2: still a member, its partitions held for it, no new group epoch
        d = wait_until(lambda: (lambda d: d if any(m["member_epoch"] == -2 for m in d["members"]) else None)(
            describe(cbroker, group)), 30, "the static member to be away (epoch -2)")
        assert len(d["members"]) == 2 and d["group_epoch"] == before["group_epoch"]
        assert ms[1].partitions() == sorted(set(range(4)) - set(mine))
        ms.append(Member(cbroker, group, topic, "inst-a"))
        wait_until(lambda: ms[2].partitions() == mine, 60, lambda: f"the same partitions back: {ms[2].assignment}")
        d = describe(cbroker, group)
        assert d["group_epoch"] == before["group_epoch"] and len(d["members"]) == 2
        assert {m["instance_id"] for m in d["members"]} == {"inst-a", "inst-b"}
    finally:
        end_members(ms)


def test_regex_subscription_picks_up_new_topics(cbroker):
    group = "regex848"
    create_topic(cbroker, "rx-one", 2)
    m = Member(cbroker, group, "^rx-.*")
    try:
        wait_until(lambda: m.assignment == [("rx-one", 0), ("rx-one", 1)], 60, lambda: f"rx-one: {m.assignment}")
        d = describe(cbroker, group)
        assert "^rx-.*" in d["members"][0]["subscribed_topic_regex"]  # librdkafka sends "(^rx-.*)"
        create_topic(cbroker, "rx-two", 3)
        create_topic(cbroker, "other", 1)
        wait_until(lambda: m.partitions("rx-two") == [0, 1, 2], 60, lambda: f"rx-two too: {m.assignment}")
        assert not m.partitions("other")
        produce(cbroker, "rx-two", 3, 5)
        wait_until(lambda: len([r for r in m.records if r[0] == "rx-two"]) == 15, 60, "rx-two's records")
    finally:
        end_members([m])


def test_empty_classic_group_continues_as_a_consumer_group(cbroker):
    """A classic group with committed offsets and no members becomes a consumer group when a
    KIP-848 member arrives, and the member starts from the classic group's offsets."""
    from confluent_kafka import Consumer

    topic, group = "mig2", "classic-then-848"
    create_topic(cbroker, topic, 2)
    produce(cbroker, topic, 2, 10, "a")
    c = Consumer({"bootstrap.servers": cbroker.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": False})
    c.subscribe([topic])
    got = []
    wait_until(lambda: got.extend(x for x in c.consume(100, 0.2) if not x.error()) or len(got) >= 20, 60, "20 records")
    c.commit(asynchronous=False)
    c.close()
    produce(cbroker, topic, 2, 5, "b")
    m = Member(cbroker, group, topic)
    try:
        wait_until(lambda: len(m.records) >= 10, 60, lambda: f"the 10 new records: {m.records}")
        assert sorted(o for _, _, o in m.records) == sorted([10, 11, 12, 13, 14] * 2)
        assert describe(cbroker, group)["error_code"] == 0
    finally:
        end_members([m])


def test_broker_kill9_and_restart_keeps_the_group(tmp_path):
    b = BrokerProcess(tmp_path / "data", *FAST).start()
    ms = []
    try:
        topic, group = "dur6", "durable848"
        create_topic(b, topic, 6)
        ms = [Member(b, group, topic), Member(b, group, topic)]
        wait_until(lambda: covers_once(ms, 6) and all(len(m.assignment) == 3 for m in ms), 60,
                   lambda: f"3 partitions each: {[m.assignment for m in ms]}")
        before = wait_until(lambda: (lambda d: d if d["group_state"] == "Stable" else None)(describe(b, group)), 30,
                            "a Stable group")
        b.kill9()
        b.restart()
        after = describe(b, group)
        assert after["group_epoch"] == before["group_epoch"]
        assert after["assignment_epoch"] == before["assignment_epoch"]

        def key(d):
            return sorted((m["member_id"], m["member_epoch"], json.dumps(m["assignment"], default=str))
                          for m in d["members"])
        assert key(after) == key(before)
        # the members carry on at their epochs: no rebalance, every new record consumed once
        produce(b, topic, 6, 10)
        wait_until(lambda: committed(b, group, topic, 6) == {p: 10 for p in range(6)}, 90, "commits at 10")
        assert describe(b, group)["group_epoch"] == before["group_epoch"]
        seen = [r for m in ms for r in m.records]
        assert len(seen) == len(set(seen)) == 60
    finally:
        end_members(ms)
        b.stop()


JAVA_MEMBER = r"""
import java.time.Duration;
import java.util.*;
import org.apache.kafka.clients.consumer.*;
import org.apache.kafka.clients.producer.*;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class Member848 {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("group.id", args[1]);
        p.put("group.protocol", "consumer");
        p.put("group.remote.assignor", args[4]);
        p.put("auto.offset.reset", "earliest");
        p.put("enable.auto.commit", "false");
        p.put("key.deserializer", StringDeserializer.class.getName());
        p.put("value.deserializer", StringDeserializer.class.getName());
        int want = Integer.parseInt(args[3]);
        Set<String> seen = new TreeSet<>();
        long deadline = System.currentTimeMillis() + 90000;
        boolean produced = false;
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            c.subscribe(List.of(args[2]));
            while (System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200)))
                    seen.add(r.partition() + ":" + r.offset());
                c.commitSync();
                if (!produced && c.assignment().size() == want) {
                    // once the group has settled: five records to each of the six partitions
                    Properties pp = new Properties();
                    pp.put("bootstrap.servers", args[0]);
                    pp.put("key.serializer", StringSerializer.class.getName());
                    pp.put("value.serializer", StringSerializer.class.getName());
                    try (KafkaProducer<String, String> prod = new KafkaProducer<>(pp)) {
                        for (int part = 0; part < 6; part++)
                            for (int i = 0; i < 5; i++)
                                prod.send(new ProducerRecord<>(args[2], part, null, "j" + i)).get();
                    }
                    produced = true;
                }
                if (produced && seen.size() >= want * 5) break;
            }
            List<Integer> mine = new ArrayList<>();
            for (TopicPartition tp : c.assignment()) mine.add(tp.partition());
            Collections.sort(mine);
            System.out.println("assignment " + mine + " records " + seen.size());
        }
    }
}
"""


def test_java_client_and_librdkafka_in_one_group(cbroker):
    """The Java client 4.3.1 (group.protocol=consumer, the range assignor by name) and a
    librdkafka member share six partitions; each consumes only its own."""
    from support.kafka_peer import java_program

    topic, group = "jv6", "java848"
    create_topic(cbroker, topic, 6)
    m = Member(cbroker, group, topic)
    try:
        wait_until(lambda: len(m.assignment) == 6, 60, lambda: f"the first member to own all: {m.assignment}")
        out = java_program(JAVA_MEMBER, cbroker.bootstrap, group, topic, "3", "range", timeout=240)
        line = [x for x in out.stdout.splitlines() if x.startswith("assignment ")][-1]
        java_parts = json.loads(line.split(" records ")[0].split(" ", 1)[1])
        assert len(java_parts) == 3 and int(line.rsplit(" ", 1)[1]) == 15, out.stdout + out.stderr[-2000:]
        others = sorted(set(range(6)) - set(java_parts))
        wait_until(lambda: sorted(m.records) == [(topic, p, o) for p in others for o in range(5)], 60,
                   lambda: f"the other partitions' records at the librdkafka member: {m.records}")
        # the Java member has left: the librdkafka member gets everything back
        wait_until(lambda: len(m.assignment) == 6, 60, lambda: f"all six back: {m.assignment}")
    finally:
        end_members([m])


def _records_of(bootstrap, topic):
    """Every (key, value) of a topic, read to its end with librdkafka."""
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.auto.commit": False})
    try:
        parts = c.list_topics(topic, timeout=30).topics[topic].partitions
        ends = {p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1] for p in parts}
        c.assign([TopicPartition(topic, p, 0) for p, e in ends.items() if e > 0])
        out, pos = [], {}

        def done():
            for m in c.consume(500, 0.5):
                if not m.error():
                    out.append((m.key(), m.value()))
                    pos[m.partition()] = m.offset() + 1
            return all(pos.get(p, 0) >= e for p, e in ends.items() if e > 0)
        wait_until(done, 60, f"{topic} read to its end", step=0)
        return out
    finally:
        c.close()


def test_kafka_written_consumer_group_records_decode(kafka_node, tmp_path):
    """Apache Kafka 4.3.1 coordinates a KIP-848 group; every record it writes to
    `__consumer_offsets` decodes with pylog's codec and says what the group is."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from pylog.core.protocol import consumer_group_records as cr
    from pylog.core.protocol import internal_records as ir

    topic, group = "golden848", "golden-848"
    admin = AdminClient({"bootstrap.servers": kafka_node.bootstrap})
    admin.create_topics([NewTopic(topic, 4, 1)])[topic].result(60)
    m = Member(kafka_node, group, topic, "golden-inst")
    try:
        wait_until(lambda: len(m.assignment) == 4, 90, lambda: f"four partitions: {m.assignment}")
        m.stop()
    finally:
        end_members([m])
    seen: dict = {}
    for key, value in _records_of(kafka_node.bootstrap, "__consumer_offsets"):
        rtype = int.from_bytes(key[:2], "big")
        if rtype in cr.RECORD_TYPES:
            t, k, v = cr.decode(key, value)
            if k["group_id"] == group:
                seen.setdefault(t, []).append((k, v))
        else:
            ir.decode_record(key, value)  # the classic types still decode
    assert {cr.GROUP_METADATA, cr.MEMBER_METADATA, cr.TARGET_METADATA, cr.TARGET_MEMBER,
            cr.CURRENT_ASSIGNMENT} <= set(seen), sorted(seen)
    members = [v for _, v in seen[cr.MEMBER_METADATA] if v is not None]
    assert members and all(v["subscribed_topic_names"] == [topic] and v["instance_id"] == "golden-inst"
                           for v in members)
    targets = [v for _, v in seen[cr.TARGET_MEMBER] if v is not None]
    assert any(sorted(p for tp in v["topic_partitions"] for p in tp["partitions"]) == [0, 1, 2, 3] for v in targets)
    current = [v for _, v in seen[cr.CURRENT_ASSIGNMENT] if v is not None]
    assert any(v["member_epoch"] >= 1 and v["state"] == 0 and
               sorted(p for tp in v["assigned_partitions"] for p in tp["partitions"]) == [0, 1, 2, 3] for v in current)
    assert current[-1]["member_epoch"] == -2  # the static member left for now
    assert [v["epoch"] for _, v in seen[cr.GROUP_METADATA] if v is not None][-1] >= 1


class ClassicMember(Member):
    """A classic-protocol librdkafka member (tests/support/group_member_proc.py: range, eager); it
    reports partitions without topics and records as (partition, offset)."""

    def __init__(self, b, group, topic):
        self._spawn([str(HERE / "group_member_proc.py"), "confluent", b.bootstrap, group, topic, str(SESSION_MS)])


def list_group(b, group):
    s = connect(b)
    try:
        return [g for g in call(s, LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})["groups"]
                if g["group_id"] == group]
    finally:
        s.close()


def test_mixed_group_upgrades_to_consumer_and_back(cbroker):
    """Two classic members (librdkafka, range); a KIP-848 member joins: the group becomes a
    consumer group with all three sharing the partitions; it leaves: classic again."""
    topic, group = "mix4", "mixed848"
    create_topic(cbroker, topic, 4)
    produce(cbroker, topic, 4, 10, "a")
    classic = [ClassicMember(cbroker, group, topic) for _ in range(2)]
    new = None
    try:
        wait_until(lambda: covers_once(classic, 4) and all(len(m.assignment) == 2 for m in classic), 60,
                   lambda: f"2 partitions each: {[m.assignment for m in classic]}")
        assert list_group(cbroker, group)[0]["group_type"] == "classic"
        wait_until(lambda: sum(len(m.records) for m in classic) >= 40, 60, "40 records")
        new = Member(cbroker, group, topic)
        everyone = classic + [new]
        wait_until(lambda: list_group(cbroker, group)[0]["group_type"] == "consumer", 60, "a consumer group")
        wait_until(lambda: covers_once(everyone, 4) and all(m.assignment for m in everyone), 90,
                   lambda: f"three owners of 4 partitions: {[m.assignment for m in everyone]}")
        d = describe(cbroker, group)
        assert sorted(m["member_type"] for m in d["members"]) == [0, 0, 1]  # KIP-1099: classic, consumer
        produce(cbroker, topic, 4, 10, "b")
        wait_until(lambda: committed(cbroker, group, topic, 4) == {p: 20 for p in range(4)}, 60, "commits at 20")
        new.stop()
        wait_until(lambda: list_group(cbroker, group)[0]["group_type"] == "classic", 60, "a classic group again")
        wait_until(lambda: covers_once(classic, 4), 90, lambda: f"the classic two: {[m.assignment for m in classic]}")
        produce(cbroker, topic, 4, 10, "c")
        wait_until(lambda: committed(cbroker, group, topic, 4) == {p: 30 for p in range(4)}, 60, "commits at 30")
        seen = [(p, o) for m in classic for p, o in m.records] + [(p, o) for _, p, o in new.records]
        assert len(seen) == len(set(seen)) == 120, "a record was delivered twice across the migrations"
    finally:
        end_members(classic + ([new] if new else []))


def test_wire_rules(cbroker):
    """Kafka's answers at the edges: validation, fencing, the rebalance timeout, offsets with epochs."""
    s = connect(cbroker)
    topic, group = "wire2", "wire848"
    create_topic(cbroker, topic, 2)

    def hb(mid, epoch, owned=None, **kw):
        body = {"group_id": group, "member_id": mid, "member_epoch": epoch, "instance_id": None, "rack_id": None,
                "rebalance_timeout_ms": kw.pop("rebalance_timeout_ms", 1000 if epoch == 0 else -1),
                "subscribed_topic_names": [topic] if epoch == 0 else None, "subscribed_topic_regex": None,
                "server_assignor": None, "topic_partitions": [] if epoch == 0 else owned}
        body.update(kw)
        return call(s, 68, 1, body)

    def commit(mid, epoch):
        return call(s, 8, 9, {"group_id": group, "generation_id_or_member_epoch": epoch, "member_id": mid,
                              "group_instance_id": None, "topics": [{"name": topic, "partitions": [
                                  {"partition_index": 0, "committed_offset": 0, "committed_leader_epoch": -1,
                                   "committed_metadata": ""}]}]})["topics"][0]["partitions"][0]["error_code"]

    try:
        assert hb("", 0)["error_code"] == 42  # INVALID_REQUEST: v1 members name themselves
        assert hb("m-bad", 0, server_assignor="sticky")["error_code"] == 112  # UNSUPPORTED_ASSIGNOR
        assert hb("m-bad", 0, subscribed_topic_regex="(")["error_code"] == 128  # INVALID_REGULAR_EXPRESSION
        assert hb("m-bad", 3)["error_code"] == 69  # GROUP_ID_NOT_FOUND: only epoch 0 creates
        a = hb("member-a", 0)
        assert a["error_code"] == 0 and a["heartbeat_interval_ms"] == 500
        owned_a = a["assignment"]["topic_partitions"]
        assert sorted(owned_a[0]["partitions"]) == [0, 1]
        assert hb("member-a", a["member_epoch"] + 1)["error_code"] == 110  # FENCED_MEMBER_EPOCH
        assert commit("member-a", a["member_epoch"]) == 0
        assert commit("member-a", a["member_epoch"] + 5) == 113  # STALE_MEMBER_EPOCH
        assert commit("nobody", a["member_epoch"]) == 25  # UNKNOWN_MEMBER_ID
        b = hb("member-b", 0)
        assert b["assignment"]["topic_partitions"] == []  # nothing is free yet
        r = hb("member-a", a["member_epoch"], owned_a)
        assert r["member_epoch"] == a["member_epoch"] and len(r["assignment"]["topic_partitions"][0]["partitions"]) == 1
        # member-a never confirms the revocation: after its rebalance timeout (1 s) it is fenced
        wait_until(lambda: len(describe(cbroker, group)["members"]) == 1, 30, "member-a fenced")
        assert hb("member-a", a["member_epoch"], owned_a)["error_code"] == 25
        r = hb("member-b", b["member_epoch"], [])
        assert sorted(r["assignment"]["topic_partitions"][0]["partitions"]) == [0, 1]
        # a session ends SESSION_MS after the last heartbeat
        wait_until(lambda: describe(cbroker, group)["group_state"] == "Empty", SESSION_MS / 1000 + 30,
                   "member-b's session to expire")
        assert commit("", -1) == 0  # an admin commit to an empty consumer group
        assert call(s, 42, 2, {"groups_names": [group]})["results"][0]["error_code"] == 0  # DeleteGroups
        assert describe(cbroker, group)["error_code"] == GROUP_ID_NOT_FOUND
    finally:
        s.close()


def test_records_pylog_writes_dump_as_kafka_dumps_them(tmp_path):
    """Kafka's DumpLogSegments --offsets-decoder and `pylog dump-segment` print the same text
    for a `__consumer_offsets` pylog wrote for a KIP-848 group (Kafka's parser reads every record)."""
    from support.dump_compare import assert_same_dump

    b = BrokerProcess(tmp_path / "data", *FAST).start()
    m = None
    try:
        create_topic(b, "dumped", 3)
        m = Member(b, "dump848", "dumped", "inst-d")
        wait_until(lambda: len(m.assignment) == 3, 60, lambda: f"three partitions: {m.assignment}")
        m.stop()
    finally:
        if m is not None:
            end_members([m])
        assert b.stop() == 0, b.stderr()
    segments = [f for d in sorted((tmp_path / "data").glob("__consumer_offsets-*"))
                for f in sorted(d.glob("*.log")) if f.stat().st_size]
    out = assert_same_dump(segments, "--offsets-decoder")
    for rtype in (3, 5, 6, 7, 8):
        assert f'"type":"{rtype}","data":{{"groupId":"dump848"' in out, rtype
    assert '"instanceId":"inst-d"' in out and '"memberEpoch":-2' in out


def test_kafka_consumer_groups_tool_describes_a_consumer_group(cbroker, shell):
    """kafka-consumer-groups 4.3.1 (Admin: ListGroups with types, ConsumerGroupDescribe), its three
    runs in one JVM."""
    cmd = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
    topic, group = "tool2", "tool848"
    create_topic(cbroker, topic, 2)
    m = Member(cbroker, group, topic)
    try:
        wait_until(lambda: len(m.assignment) == 2, 60, lambda: f"two partitions: {m.assignment}")
        wait_until(lambda: describe(cbroker, group)["group_state"] == "Stable", 30, "Stable")
        out = shell.run(cmd, "--bootstrap-server", cbroker.bootstrap, "--list", "--type", "consumer").stdout
        assert group in out.split()
        out = shell.run(cmd, "--bootstrap-server", cbroker.bootstrap, "--describe", "--group", group, "--members",
                       "--verbose").stdout
        rows = [line.split() for line in out.splitlines() if line.startswith(group)]
        assert len(rows) == 1 and f"{topic}:0,1" in rows[0], out
        out = shell.run(cmd, "--bootstrap-server", cbroker.bootstrap, "--describe", "--group", group, "--state",
                       "--verbose").stdout
        assert "Stable" in out and "uniform" in out, out
    finally:
        end_members([m])
