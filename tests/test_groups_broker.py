"""Consumer groups against a real `pylog broker` subprocess with real clients
(kafka-python, confluent-kafka/librdkafka, pylog's own consumer)."""
from __future__ import annotations

import json

import pytest

from support.cli import pylog_in_process
from support.broker_fixtures import BrokerProcess, call, connect, module_broker
from support.member_procs import MemberProcess, end_members
from support.waiting import wait_until
from support.group_members import (  # noqa: F401
    HERE, Member, SESSION_MS, committed, describe_json, exactly_once_owned, owners, pylog_cli,
)

FAST = ("--set", "group.initial.rebalance.delay.ms=100")


gbroker = module_broker("groups", *FAST)


def create_topic(b, name, partitions):
    from pylog.core.client import Admin

    with Admin({"bootstrap.servers": b.bootstrap}) as a:
        a.create_topic(name, partitions)


def produce(b, topic, partitions, per_partition, tag="v"):
    from pylog.core.client import Producer

    with Producer({"bootstrap.servers": b.bootstrap, "linger.ms": "5"}) as p:
        futs = [p.send(topic, f"{tag}-{part}-{i}".encode(), partition=part)
                for part in range(partitions) for i in range(per_partition)]
        p.flush()
        for f in futs:
            f.get(10)


def test_three_members_share_then_survive_a_crash(gbroker):
    topic, group = "orders6", "three"
    create_topic(gbroker, topic, 6)
    produce(gbroker, topic, 6, 20, "a")
    ms = [Member(gbroker, "kafka-python", group, topic) for _ in range(3)]
    try:
        wait_until(lambda: exactly_once_owned(ms, 6) and all(len(m.assignment) == 2 for m in ms), 60,
                   lambda: f"2 partitions each: {[m.assignment for m in ms]}")
        wait_until(lambda: sum(len(m.records) for m in ms) >= 120, 60, "120 records")
        d = describe_json(gbroker, group)
        assert d["state"] == "Stable" and d["protocol_type"] == "consumer" and len(d["members"]) == 3
        assert sorted(len(m["assignment"]) for m in d["members"]) == [2, 2, 2]

        # clean rebalance: one member leaves (commit, LeaveGroup); nothing is delivered twice
        ms[2].stop()
        assert ms[2].closed
        live = ms[:2]
        wait_until(lambda: exactly_once_owned(live, 6), 60, lambda: f"two owners of 6 partitions: "
                   f"{[m.assignment for m in live]}")
        produce(gbroker, topic, 6, 20, "b")
        # every record is delivered before it is committed: once all 40 per partition are committed,
        # every delivery (a duplicate too) has been reported
        wait_until(lambda: committed(gbroker, group) == {p: 40 for p in range(6)}, 60, "commits at 40")
        seen = [r for m in ms for r in m.records]
        assert len(seen) == len(set(seen)) == 240, "a record was delivered twice across a clean rebalance"

        # crash: kill -9; the member is expired (session.timeout.ms, no LeaveGroup) and the survivor
        # gets its partitions
        ms[1].kill()
        wait_until(lambda: sorted(ms[0].assignment) == list(range(6)), SESSION_MS / 1000 + 60,
                   lambda: f"the survivor to own every partition: {ms[0].assignment}")
        produce(gbroker, topic, 6, 20, "c")
        expected = {(p, o) for p in range(6) for o in range(60)}
        wait_until(lambda: {r for m in ms for r in m.records} >= expected, 60,
                   lambda: f"every record; missing {sorted(expected - {r for m in ms for r in m.records})[:10]}")
        d = describe_json(gbroker, group)
        assert d["state"] == "Stable" and len(d["members"]) == 1
        assert {(o["partition"], o["current_offset"], o["lag"]) for o in d["offsets"]} == \
            {(p, 60, 0) for p in range(6)}
    finally:
        end_members(ms)


def test_two_groups_each_get_every_record(gbroker):
    from pylog.core.client import Consumer
    from pylog.core.client.membership import attach_group

    topic = "fanout"
    create_topic(gbroker, topic, 3)
    produce(gbroker, topic, 3, 30)
    got = {}
    for group in ("ga", "gb"):
        c = Consumer({"bootstrap.servers": gbroker.bootstrap, "group.id": group, "auto.offset.reset": "earliest"})
        attach_group(c)
        c.subscribe([topic])
        seen = []
        wait_until(lambda: seen.extend((tp.partition, r.offset) for tp, rs in c.poll(300).items() for r in rs)
                   or len(seen) >= 90, 60, lambda: f"90 records for {group}, got {len(seen)}")
        c.close()
        got[group] = seen
    for group, seen in got.items():
        assert sorted(seen) == [(p, o) for p in range(3) for o in range(30)], group
    # close() committed the consumed positions (enable.auto.commit: commit before revocation)
    for group in ("ga", "gb"):
        d = describe_json(gbroker, group)
        assert d["state"] == "Empty"
        assert {(o["partition"], o["current_offset"]) for o in d["offsets"]} == {(0, 30), (1, 30), (2, 30)}


def test_pylog_and_librdkafka_in_one_group(gbroker):
    topic, group = "mixed", "mixed-g"
    create_topic(gbroker, topic, 6)
    produce(gbroker, topic, 6, 10)
    ms = [Member(gbroker, "pylog", group, topic), Member(gbroker, "confluent", group, topic)]
    try:
        wait_until(lambda: exactly_once_owned(ms, 6) and all(len(m.assignment) == 3 for m in ms), 60,
                   lambda: f"3 partitions each: {[m.assignment for m in ms]}")
        wait_until(lambda: committed(gbroker, group) == {p: 10 for p in range(6)}, 60, "commits at 10")
        seen = [r for m in ms for r in m.records]
        assert sorted(seen) == sorted(set(seen))
        assert set(seen) == {(p, o) for p in range(6) for o in range(10)}
        d = describe_json(gbroker, group)
        clients = sorted(m["client_id"] for m in d["members"])
        assert clients == [f"pylog-{group}", f"rdk-{group}"] and d["protocol"] == "range"
        for m in ms:
            m.stop()
        assert all(m.closed for m in ms)
        d = describe_json(gbroker, group)
        assert d["state"] == "Empty" and {o["current_offset"] for o in d["offsets"]} == {10}
    finally:
        end_members(ms)


def test_consume_cli_with_group_and_groups_commands(gbroker):
    run = pylog_in_process  # each command (and each failing exit) also runs here as a real process
    topic, group = "cli-topic", "cli-g"
    create_topic(gbroker, topic, 2)
    produce(gbroker, topic, 2, 5)
    r = pylog_cli("consume", topic, "-b", gbroker.bootstrap, "--group", group, "--from-beginning",
                  "--max-messages", "10", "--timeout-ms", "15000")
    assert r.returncode == 0, r.stderr
    assert sorted(r.stdout.split()) == sorted(f"v-{p}-{i}" for p in range(2) for i in range(5))
    r = pylog_cli("groups", "list", "-b", gbroker.bootstrap)
    assert r.returncode == 0 and any(line.split()[:2] == [group, "Empty"] for line in r.stdout.splitlines())
    r = pylog_cli("groups", "describe", group, "-b", gbroker.bootstrap)
    assert r.returncode == 0, r.stderr
    rows = [line.split() for line in r.stdout.splitlines() if line.startswith(topic)]
    # caught up: no time lag, and nothing consumed during the rate window
    assert sorted(rows) == [[topic, "0", "5", "5", "0", "0ms", "0.0", "-", "-", "-"],
                            [topic, "1", "5", "5", "0", "0ms", "0.0", "-", "-", "-"]]
    assert "lag 0 records, 0ms behind" in r.stdout and "caught up" in r.stdout

    # reset-offsets: dry run by default, --execute commits
    r = pylog_cli("groups", "reset-offsets", group, "-b", gbroker.bootstrap, "--topic", topic, "--to-earliest")
    assert r.returncode == 0 and "dry run" in r.stderr
    assert {o["current_offset"] for o in describe_json(gbroker, group)["offsets"]} == {5}
    r = run("groups", "reset-offsets", group, "-b", gbroker.bootstrap, "--topic", f"{topic}:1", "--shift-by",
                  "-2", "--execute", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["offsets"] == [{"group": group, "topic": topic, "partition": 1,
                                                "previous_offset": 5, "new_offset": 3}]
    r = run("groups", "reset-offsets", group, "-b", gbroker.bootstrap, "--all-topics", "--to-offset", "99",
                  "--execute")
    assert r.returncode == 0
    assert {(o["partition"], o["current_offset"]) for o in describe_json(gbroker, group)["offsets"]} == \
        {(0, 5), (1, 5)}  # clamped to the end
    r = run("groups", "reset-offsets", group, "-b", gbroker.bootstrap, "--all-topics",
                  "--to-datetime", "2001-01-01T00:00:00", "--execute")
    assert r.returncode == 0
    assert {o["current_offset"] for o in describe_json(gbroker, group)["offsets"]} == {0}
    r = pylog_cli("groups", "reset-offsets", group, "-b", gbroker.bootstrap, "--all-topics")
    assert r.returncode == 2 and "exactly one of" in r.stderr

    # an active group is refused
    from pylog.core.client import Consumer
    from pylog.core.client.membership import attach_group

    c = Consumer({"bootstrap.servers": gbroker.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                  "enable.auto.commit": "false"})
    attach_group(c)
    c.subscribe([topic])
    try:
        wait_until(lambda: c.poll(100) is not None and len(c.assignment()) == 2, 60, "both partitions assigned")
        r = pylog_cli("groups", "reset-offsets", group, "-b", gbroker.bootstrap, "--all-topics", "--to-latest",
                      "--execute")
        assert r.returncode == 1 and "inactive" in r.stderr and "Stable" in r.stderr
        r = pylog_cli("groups", "delete", group, "-b", gbroker.bootstrap)
        assert r.returncode == 1 and "NON_EMPTY_GROUP" in r.stderr
        d = describe_json(gbroker, group)
        assert d["state"] == "Stable" and len(d["members"]) == 1
        assert sorted((a["topic"], a["partition"]) for a in d["members"][0]["assignment"]) == [(topic, 0), (topic, 1)]
        # the text views show the same driven state
        r = run("groups", "describe", group, "-b", gbroker.bootstrap, "--members")
        assert r.returncode == 0, r.stderr
        assert f"GROUP {group}  state: Stable  protocol: consumer/range  members: 1" in r.stdout
        rows = [line.split() for line in r.stdout.splitlines() if line.startswith(d["members"][0]["member_id"])]
        assert len(rows) == 1 and rows[0][-2:] == ["2", f"{topic}-0,{topic}-1"], r.stdout
        r = run("groups", "describe", group, "-b", gbroker.bootstrap)
        rows = sorted(line.split() for line in r.stdout.splitlines() if line.startswith(topic))
        assert [row[:5] for row in rows] == [[topic, "0", "0", "5", "5"], [topic, "1", "0", "5", "5"]]
        assert {row[7] for row in rows} == {d["members"][0]["member_id"]}
        r = run("groups", "list", "-b", gbroker.bootstrap, "--state", "stable", "--json")
        assert {g["group_id"]: g["state"] for g in json.loads(r.stdout)}.get(group) == "Stable"
        r = run("groups", "list", "-b", gbroker.bootstrap, "--state", "Empty", "--json")
        assert group not in {g["group_id"] for g in json.loads(r.stdout)}
    finally:
        c.close()
    r = run("groups", "delete", group, "-b", gbroker.bootstrap)
    assert r.returncode == 0 and f"deleted group {group}" in r.stdout
    r = run("groups", "list", "-b", gbroker.bootstrap, "--json")
    assert group not in {g["group_id"] for g in json.loads(r.stdout)}
    r = pylog_cli("groups", "delete", group, "-b", gbroker.bootstrap)
    assert r.returncode == 1 and "GROUP_ID_NOT_FOUND" in r.stderr
    # describing a group that does not exist is a data error (exit 1), like deleting it;
    # the other groups named are still described
    r = pylog_cli("groups", "describe", group, "-b", gbroker.bootstrap)
    assert r.returncode == 1 and f"consumer group '{group}' does not exist" in r.stderr
    r = run("groups", "describe", group, "-b", gbroker.bootstrap, "--json")
    assert r.returncode == 1 and json.loads(r.stdout)[0]["state"] == "Dead"


def test_wire_protocol_details(gbroker):
    """Member-id handshake, generations, static membership fencing, batched leave,
    batched FindCoordinator, multi-group OffsetFetch."""
    from pylog.core.client.subscription import Subscription, encode_subscription

    create_topic(gbroker, "wire", 1)  # commits name a topic that exists (else UNKNOWN_TOPIC_OR_PARTITION, as Kafka)
    s = connect(gbroker)
    meta = encode_subscription(Subscription(["wire"]))
    fc = call(s, 10, 4, {"key_type": 0, "coordinator_keys": ["w1", "w2"]})
    assert [(c["key"], c["error_code"], c["port"]) for c in fc["coordinators"]] == \
        [("w1", 0, gbroker.port), ("w2", 0, gbroker.port)]
    join = {"group_id": "w1", "session_timeout_ms": 6000, "rebalance_timeout_ms": 3000, "member_id": "",
            "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": meta}]}
    r = call(s, 11, 5, join)
    assert r["error_code"] == 79 and r["member_id"]  # MEMBER_ID_REQUIRED
    mid = r["member_id"]
    r = call(s, 11, 5, dict(join, member_id=mid))
    assert r["error_code"] == 0 and r["leader"] == mid and r["generation_id"] == 1
    assert r["members"][0]["metadata"] == meta
    r = call(s, 14, 3, {"group_id": "w1", "generation_id": 1, "member_id": mid,
                        "assignments": [{"member_id": mid, "assignment": b"\x00\x00"}]})
    assert r["error_code"] == 0 and r["assignment"] == b"\x00\x00"
    assert call(s, 12, 3, {"group_id": "w1", "generation_id": 1, "member_id": mid})["error_code"] == 0
    assert call(s, 12, 3, {"group_id": "w1", "generation_id": 0, "member_id": mid})["error_code"] == 22
    assert call(s, 12, 3, {"group_id": "w1", "generation_id": 1, "member_id": "nobody"})["error_code"] == 25
    # commits: wrong generation refused, right one stored; multi-group fetch (v8)
    commit = {"group_id": "w1", "generation_id_or_member_epoch": 1, "member_id": mid,
              "topics": [{"name": "wire", "partitions": [{"partition_index": 0, "committed_offset": 42,
                                                          "committed_metadata": "m"}]}]}
    assert call(s, 8, 8, dict(commit, generation_id_or_member_epoch=7))["topics"][0]["partitions"][0]["error_code"] == 22
    assert call(s, 8, 8, commit)["topics"][0]["partitions"][0]["error_code"] == 0
    r = call(s, 9, 8, {"groups": [{"group_id": "w1", "topics": None}, {"group_id": "w-none", "topics": None}]})
    assert [(g["group_id"], g["error_code"]) for g in r["groups"]] == [("w1", 0), ("w-none", 0)]
    p = r["groups"][0]["topics"][0]["partitions"][0]
    assert (p["committed_offset"], p["metadata"]) == (42, "m") and r["groups"][1]["topics"] == []
    # static members: a wrong member id for a known instance is fenced
    sjoin = dict(join, group_id="w2", group_instance_id="inst-1")
    r = call(s, 11, 5, sjoin)
    assert r["error_code"] == 0 and r["member_id"]  # static members skip the handshake
    smid = r["member_id"]
    assert call(s, 12, 3, {"group_id": "w2", "generation_id": 1, "member_id": "other",
                           "group_instance_id": "inst-1"})["error_code"] == 82  # FENCED_INSTANCE_ID
    # batched leave (v3+): one known, one unknown
    r = call(s, 13, 3, {"group_id": "w1", "members": [{"member_id": mid}, {"member_id": "ghost"}]})
    assert r["error_code"] == 0 and [m["error_code"] for m in r["members"]] == [0, 25]
    r = call(s, 15, 4, {"groups": ["w1", "w2", "never"]})
    assert [(g["group_id"], g["group_state"]) for g in r["groups"]] == \
        [("w1", "Empty"), ("w2", "CompletingRebalance"), ("never", "Dead")]
    assert r["groups"][1]["members"][0]["group_instance_id"] == "inst-1" and \
        r["groups"][1]["members"][0]["member_id"] == smid
    r = call(s, 16, 4, {"states_filter": ["Empty"]})
    assert "w1" in {g["group_id"] for g in r["groups"]} and "w2" not in {g["group_id"] for g in r["groups"]}
    # OffsetDelete on an empty group, DeleteGroups on a non-empty one
    r = call(s, 47, 0, {"group_id": "w1", "topics": [{"name": "wire", "partitions": [{"partition_index": 0}]}]})
    assert r["error_code"] == 0
    r = call(s, 9, 8, {"groups": [{"group_id": "w1", "topics": None}]})
    assert r["groups"][0]["topics"] == []
    assert call(s, 42, 2, {"groups_names": ["w2"]})["results"][0]["error_code"] == 68
    # a static member restarts (no member id, same instance id): it takes over without a rebalance
    r = call(s, 14, 3, {"group_id": "w2", "generation_id": 1, "member_id": smid, "group_instance_id": "inst-1",
                        "assignments": [{"member_id": smid, "assignment": b"\x00\x07"}]})
    assert r["error_code"] == 0 and r["assignment"] == b"\x00\x07"
    r = call(s, 11, 5, sjoin)
    assert r["error_code"] == 0 and r["generation_id"] == 1 and r["member_id"] not in ("", smid)
    new_id = r["member_id"]
    assert call(s, 12, 3, {"group_id": "w2", "generation_id": 1, "member_id": smid,
                           "group_instance_id": "inst-1"})["error_code"] == 82
    r = call(s, 14, 3, {"group_id": "w2", "generation_id": 1, "member_id": new_id, "group_instance_id": "inst-1"})
    assert r["error_code"] == 0 and r["assignment"] == b"\x00\x07"  # the old assignment, kept
    assert call(s, 15, 4, {"groups": ["w2"]})["groups"][0]["group_state"] == "Stable"
    s.close()


def test_max_poll_interval_leaves_the_group(gbroker):
    from pylog.core.client import Consumer
    from pylog.core.client.membership import attach_group

    topic, group = "stall", "stall-g"
    create_topic(gbroker, topic, 2)
    events = []
    c = Consumer({"bootstrap.servers": gbroker.bootstrap, "group.id": group, "max.poll.interval.ms": "1500",
                  "heartbeat.interval.ms": "300", "session.timeout.ms": "6000"})
    attach_group(c, on_assign=lambda tps: events.append(("assigned", len(tps))),
                 on_lost=lambda tps: events.append(("lost", len(tps))))
    c.subscribe([topic])
    try:
        wait_until(lambda: c.poll(100) is not None and len(c.assignment()) == 2, 60, "both partitions assigned")
        # the application stalls (no poll) past max.poll.interval.ms: the member leaves the group
        d = wait_until(lambda: (lambda d: d if d["state"] == "Empty" else None)(describe_json(gbroker, group)), 60,
                       "the stalled member to leave the group")
        assert d["members"] == []
        wait_until(lambda: c.poll(100) is not None and len(c.assignment()) == 2, 60, "both partitions assigned")
        assert events == [("assigned", 2), ("lost", 2), ("assigned", 2)]
        # asked in-process: a CLI subprocess can take longer than max.poll.interval.ms to start on a
        # loaded machine, and the member (not polled meanwhile) would rightly leave again
        from pylog.core.client.group_admin import GroupAdmin
        with GroupAdmin({"bootstrap.servers": gbroker.bootstrap}) as admin:
            assert admin.describe_group(group).state == "Stable"
    finally:
        c.close()


def test_committed_offsets_survive_restarts(tmp_path):
    from pylog.core.client import Consumer
    from pylog.core.client.membership import attach_group
    from pylog.core.client.group_admin import GroupAdmin
    from pylog.broker.groups.offsets_topic import partition_for

    b = BrokerProcess(tmp_path / "data", *FAST).start()
    try:
        create_topic(b, "durable", 3)
        produce(b, "durable", 3, 10)
        # kafka-python commits part of the topic
        from kafka import KafkaConsumer, TopicPartition as KTP
        from kafka.structs import OffsetAndMetadata

        kc = KafkaConsumer(bootstrap_servers=b.bootstrap, group_id="dur", enable_auto_commit=False)
        kc.commit({KTP("durable", 0): OffsetAndMetadata(4, "meta-0", -1), KTP("durable", 2): OffsetAndMetadata(7, "", -1)})
        kc.close()
        for how in ("kill9", "sigterm"):
            if how == "kill9":
                b.kill9()
            else:
                assert b.stop() == 0
            b.restart()
            with GroupAdmin({"bootstrap.servers": b.bootstrap}) as ga:
                got = {(tp.partition, off, md) for tp, (off, md) in ga.committed("dur").items()}
            assert got == {(0, 4, "meta-0"), (2, 7, "")}, how
        # a new member resumes at the committed offsets
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "dur", "auto.offset.reset": "earliest"})
        attach_group(c)
        c.subscribe(["durable"])
        seen = []
        wait_until(lambda: seen.extend((tp.partition, r.offset) for tp, rs in c.poll(300).items() for r in rs)
                   or len(seen) >= 6 + 10 + 3, 60, lambda: f"19 records, got {sorted(seen)}")
        c.close()
        assert sorted(seen) == sorted([(0, o) for o in range(4, 10)] + [(1, o) for o in range(10)] +
                                      [(2, o) for o in range(7, 10)])
    finally:
        b.stop_clean()
    # the records are Kafka's: dump-segment's offsets decoder reads them
    part = partition_for("dur", 50)
    seg = sorted((tmp_path / "data" / f"__consumer_offsets-{part}").glob("*.log"))[0]
    r = pylog_cli("dump-segment", "--offsets-decoder", seg)
    assert r.returncode == 0, r.stderr
    assert '"data":{"group":"dur","topic":"durable","partition":0}' in r.stdout
    assert '"offset":4,"leaderEpoch":-1,"metadata":"meta-0"' in r.stdout
    assert '"protocolType":"consumer"' in r.stdout  # the group metadata of the pylog member's generations


def test_pattern_subscription_and_cooperative_sticky(gbroker):
    from pylog.core.client import Consumer
    from pylog.core.client.membership import attach_group

    for t in ("pat-a", "pat-b"):
        create_topic(gbroker, t, 2)
    create_topic(gbroker, "other-c", 1)
    conf = {"bootstrap.servers": gbroker.bootstrap, "group.id": "coop", "heartbeat.interval.ms": "200",
            "partition.assignment.strategy": "cooperative-sticky", "auto.offset.reset": "earliest"}
    events = {"a": [], "b": []}

    memberships = {}

    def member(name):
        c = Consumer(conf)
        memberships[name] = attach_group(c, on_assign=lambda tps: events[name].append(("+", sorted(map(str, tps)))),
                                         on_revoke=lambda tps: events[name].append(("-", sorted(map(str, tps)))))
        c.subscribe(["^pat-.*"])
        return c

    a = member("a")
    try:
        wait_until(lambda: a.poll(50) is not None and len(a.assignment()) == 4, 60, "a owns all 4 partitions")
        assert sorted(map(str, a.assignment())) == ["pat-a-0", "pat-a-1", "pat-b-0", "pat-b-1"]
        b = member("b")
        try:
            def balanced():
                a.poll(20)
                b.poll(20)
                return len(a.assignment()) == 2 and len(b.assignment()) == 2
            wait_until(balanced, 60, "2 partitions each", step=0)
            assert set(a.assignment()).isdisjoint(b.assignment())
            # incremental: a revoked only the two partitions that moved, and never gave up the rest
            revoked = [e for e in events["a"] if e[0] == "-"]
            assert len(revoked) == 1 and len(revoked[0][1]) == 2
            assert set(revoked[0][1]) == {str(tp) for tp in b.assignment()}
            assert describe_json(gbroker, "coop")["protocol"] == "cooperative-sticky"
            # an asynchronous commit from the application thread
            done = []
            memberships["a"].commit_async({tp: (1, -1, "async") for tp in a.assignment()},
                                          callback=lambda offsets, e: done.append((len(offsets), e)))
            wait_until(lambda: done, 60, "the commit callback")
            assert done == [(2, None)]
            assert {tp: v[0] for tp, v in a.committed(a.assignment()).items()} == {tp: 1 for tp in a.assignment()}
        finally:
            b.close()
    finally:
        a.close()
