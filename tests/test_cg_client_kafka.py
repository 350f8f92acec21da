"""pylog's consumer with `group.protocol=consumer` (KIP-848) against Apache Kafka 4.3.1
and against pylog's broker.

Kafka serves the new protocol by default: the broker assigns, pylog's consumer
heartbeats and reconciles. Every member here commits after each poll (as an
application with auto-commit off does), so a clean handover delivers nothing twice.
"""
from __future__ import annotations

import itertools
import time

import pytest

from support.broker_fixtures import module_broker
from support.cli import pylog
from support.kafka_fixtures import kafka_node  # noqa: F401
from support.kafka_peer import shell  # noqa: F401

# a heartbeat interval below Kafka's 5 s default keeps the pylog-broker runs short
PYLOG_BROKER = ("--set", "group.consumer.heartbeat.interval.ms=1000")


pylog_broker = module_broker("cgclient", *PYLOG_BROKER)


@pytest.fixture(params=["kafka", "pylog"])
def peer(request):
    """Each test runs against Apache Kafka 4.3.1 and against pylog's broker."""
    return request.getfixturevalue("kafka_node" if request.param == "kafka" else "pylog_broker")

_ids = itertools.count()


def name(prefix):
    return f"{prefix}-{next(_ids)}-{int(time.time() * 1000) % 100000}"


def create_topic(bootstrap, topic, partitions):
    from pylog.core.client import Admin

    with Admin({"bootstrap.servers": bootstrap}) as a:
        a.create_topic(topic, partitions)


def produce(bootstrap, topic, partitions, per_partition, tag="v"):
    from pylog.core.client import Producer

    with Producer({"bootstrap.servers": bootstrap, "linger.ms": "5"}) as p:
        futs = [p.send(topic, f"{tag}-{part}-{i}".encode(), partition=part)
                for part in range(partitions) for i in range(per_partition)]
        p.flush()
        for f in futs:
            f.get(30)


class Member:
    """One pylog consumer in the group, polled by the test's thread."""

    def __init__(self, bootstrap, group, topics, instance_id=None, **props):
        from pylog.core.client import Consumer
        from pylog.core.client.membership import attach_group

        conf = {"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer",
                "auto.offset.reset": "earliest", "enable.auto.commit": "false", "client.id": f"cgc-{group}"}
        if instance_id is not None:
            conf["group.instance.id"] = instance_id
        conf.update(props)
        self.consumer = Consumer(conf)
        self.events: list = []
        self.records: list = []
        self.membership = attach_group(self.consumer, on_assign=lambda tps: self.events.append(("assign", tps)),
                                       on_revoke=lambda tps: self.events.append(("revoke", tps)),
                                       on_lost=lambda tps: self.events.append(("lost", tps)))
        self.consumer.subscribe(topics)
        self.closed = False

    def poll(self):
        recs = self.consumer.poll(100)
        for tp, rs in recs.items():
            self.records += [(tp.topic, tp.partition, r.offset) for r in rs]
        if recs:
            self.consumer.commit()
        return recs

    def assignment(self):
        return sorted((tp.topic, tp.partition) for tp in self.consumer.assignment())

    def close(self):
        if not self.closed:
            self.closed = True
            self.consumer.close()


def poll_until(members, cond, timeout=90, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for m in members:
            if not m.closed:
                m.poll()
        if cond():
            return
    raise AssertionError(f"timed out waiting for {what}: " +
                         "; ".join(f"{m.membership.member_id}={m.assignment()}" for m in members if not m.closed))


def balanced(members, total):
    live = [m for m in members if not m.closed]
    parts = [p for m in live for p in m.assignment()]
    return (len(parts) == total and len(set(parts)) == total
            and max(len(m.assignment()) for m in live) - min(len(m.assignment()) for m in live) <= 1)


@pytest.fixture
def members():
    made: list = []
    yield made
    for m in made:
        m.close()


def filled_topic(b, prefix: str, partitions: int, per_partition: int, **kw) -> tuple[str, str]:
    """(topic, group): a fresh topic of `partitions` with `per_partition` records each, and a fresh group name."""
    topic = name(prefix)
    create_topic(b, topic, partitions)
    produce(b, topic, partitions, per_partition, **kw)
    return topic, name("cgc-g")


def test_three_members_share_six_partitions(peer, members):
    b = peer.bootstrap
    topic, group = filled_topic(b, "cgc-six", 6, 20)
    members += [Member(b, group, [topic]) for _ in range(3)]
    poll_until(members, lambda: balanced(members, 6) and len({r for m in members for r in m.records}) == 120,
               what="three members with two partitions each and every record read")
    assert [len(m.assignment()) for m in members] == [2, 2, 2]
    seen = [r for m in members for r in m.records]
    assert len(seen) == len(set(seen)) == 120
    for m in members:
        assert m.membership.member_epoch > 0
        # the callbacks tell the same story as the assignment: added minus revoked
        owned = set()
        for kind, tps in m.events:
            assert kind in ("assign", "revoke"), m.events
            tps = {(tp.topic, tp.partition) for tp in tps}
            if kind == "assign":
                assert not owned & tps
                owned |= tps
            else:
                assert tps <= owned
                owned -= tps
        assert sorted(owned) == m.assignment()


def test_leave_and_join_hand_over_with_no_duplicates(peer, members):
    b = peer.bootstrap
    topic, group = filled_topic(b, "cgc-hand", 4, 30, tag="a")
    first, second = Member(b, group, [topic]), Member(b, group, [topic])
    members += [first, second]
    poll_until(members, lambda: balanced(members, 4) and len({r for m in members for r in m.records}) == 120,
               what="two members sharing four partitions, every record read")
    owned_by_first = first.assignment()
    first.close()  # revokes and leaves with epoch -1: its partitions move to the others
    third = Member(b, group, [topic])
    members.append(third)
    produce(b, topic, 4, 30, tag="b")
    total = 4 * 60
    poll_until(members, lambda: balanced(members, 4) and len({r for m in members for r in m.records}) == total,
               what="the handover done and every record read")
    seen = [r for m in members for r in m.records]
    assert len(seen) == len(set(seen)) == total, "a record was delivered twice across the handover"
    assert third.assignment() and second.assignment()
    # closing revoked what the first member owned (after its last commit)
    assert first.events[-1][0] == "revoke"
    assert sorted((tp.topic, tp.partition) for tp in first.events[-1][1]) == owned_by_first


def test_static_member_restart_keeps_its_partitions(peer, members):
    b = peer.bootstrap
    topic, group = filled_topic(b, "cgc-static", 4, 10)
    s1, s2 = Member(b, group, [topic], instance_id="s1"), Member(b, group, [topic], instance_id="s2")
    members += [s1, s2]
    poll_until(members, lambda: balanced(members, 4), what="two static members with two partitions each")
    before, s2_events = s1.assignment(), list(s2.events)
    s1.close()  # leaves with epoch -2: the broker keeps s1's assignment for its session
    again = Member(b, group, [topic], instance_id="s1")
    members.append(again)
    poll_until(members, lambda: again.assignment() == before, what="the restarted static member's partitions")
    assert again.membership.member_id != s1.membership.member_id
    # the other member never noticed: no revocation, no new assignment
    assert s2.events == s2_events
    seen = [r for m in members for r in m.records]
    assert len(seen) == len(set(seen))


def test_regex_subscription_picks_up_a_new_topic(peer, members):
    b = peer.bootstrap
    prefix = name("cgcre").replace("-", "_")
    create_topic(b, f"{prefix}-a", 2)
    m = Member(b, name("cgc-g"), [f"^{prefix}-.*"])
    members.append(m)
    poll_until(members, lambda: m.assignment() == [(f"{prefix}-a", 0), (f"{prefix}-a", 1)],
               what="the regex's first topic assigned")
    create_topic(b, f"{prefix}-b", 2)
    produce(b, f"{prefix}-b", 2, 5)
    poll_until(members, lambda: len(m.assignment()) == 4 and len(m.records) == 10, timeout=120,
               what="the topic created later assigned through the broker-side regex")
    assert {t for t, _ in m.assignment()} == {f"{prefix}-a", f"{prefix}-b"}
    assert m.membership._heartbeat_body(1)["subscribed_topic_regex"] == f"^{prefix}-.*"


def _kafka_table(text):
    """kafka-consumer-groups' fixed-width table -> [{HEADER: value}] (cells may be empty)."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    head = lines[0]
    starts = [i for i, ch in enumerate(head) if ch != " " and (i == 0 or head[i - 1] == " ")]
    names = head.split()
    rows = []
    for ln in lines[1:]:
        cells = [ln[a:b].strip() for a, b in zip(starts, starts[1:] + [None])]
        rows.append(dict(zip(names, cells)))
    return rows


def _pylog(*args):
    r = pylog(*args)
    assert r.returncode == 0, r.stderr
    return r.stdout


def test_groups_describe_matches_kafka_consumer_groups(peer, members, shell):
    import json

    b = peer.bootstrap
    topic, group = name("cgc-desc"), name("cgc-g")
    create_topic(b, topic, 4)
    members += [Member(b, group, [topic]), Member(b, group, [topic], instance_id="desc-static")]
    poll_until(members, lambda: balanced(members, 4) and all(m.membership.stable for m in members),
               what="a stable group of two")
    tool = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
    kafka = shell.run(tool, "--bootstrap-server", b, "--describe", "--group", group, "--members", "--verbose",
                      check=True)
    state = shell.run(tool, "--bootstrap-server", b, "--describe", "--group", group, "--state", "--verbose",
                      check=True)
    listed = shell.run(tool, "--bootstrap-server", b, "--list", "--type", check=True)
    ours = json.loads(_pylog("groups", "describe", group, "-b", b, "--members", "--json"))[0]

    [st] = _kafka_table(state.stdout)
    assert ours["type"] == "consumer" and ours["state"] == st["STATE"] == "Stable"
    assert ours["protocol"] == st["ASSIGNMENT-STRATEGY"]
    assert str(ours["group_epoch"]) == st["GROUP-EPOCH"]
    assert str(ours["assignment_epoch"]) == st["TARGET-ASSIGNMENT-EPOCH"]

    def parts(text):
        return sorted((t, int(p)) for chunk in text.split(";") if chunk and chunk != "-"
                      for t, ps in [chunk.rsplit(":", 1)] for p in ps.split(","))

    theirs = {r["CONSUMER-ID"]: r for r in _kafka_table(kafka.stdout)}
    assert set(theirs) == {m["member_id"] for m in ours["members"]} == {m.membership.member_id for m in members}
    for m in ours["members"]:
        k = theirs[m["member_id"]]
        assert (k["GROUP-INSTANCE-ID"] or None) == m["group_instance_id"]
        assert k["CLIENT-ID"] == m["client_id"] and k["HOST"] == m["host"]
        assert str(m["member_epoch"]) == k["CURRENT-EPOCH"]
        assert str(ours["assignment_epoch"]) == k["TARGET-EPOCH"]
        assert parts(k["CURRENT-ASSIGNMENT"]) == sorted((a["topic"], a["partition"]) for a in m["assignment"])
        assert parts(k["TARGET-ASSIGNMENT"]) == sorted((a["topic"], a["partition"]) for a in m["target_assignment"])
        assert m["subscribed_topic_names"] == [topic]

    # the human table carries Kafka's columns and values too
    text = _pylog("groups", "describe", group, "-b", b, "--members")
    assert "CURRENT-EPOCH" in text and "TARGET-ASSIGNMENT" in text
    assert f"group epoch: {ours['group_epoch']}" in text
    # groups list shows the type, as kafka-consumer-groups --list --type does
    kafka_types = {r["GROUP"]: r["TYPE"].lower() for r in _kafka_table(listed.stdout)}
    ours_list = {g["group_id"]: g["type"] for g in json.loads(_pylog("groups", "list", "-b", b, "--json"))}
    assert kafka_types[group] == ours_list[group] == "consumer"


@pytest.mark.parametrize("how", [("--group-protocol", "consumer"), ("-X", "group.protocol=consumer")])
def test_pylog_consume_joins_a_consumer_group(peer, how):
    import json

    b = peer.bootstrap
    topic, group = filled_topic(b, "cgc-cli", 3, 4)
    out = _pylog("consume", topic, "-b", b, "--group", group, *how, "--from-beginning", "-c", "12", "--json")
    got = sorted((r["partition"], r["offset"]) for r in map(json.loads, out.splitlines()))
    assert got == [(p, o) for p in range(3) for o in range(4)]
    desc = json.loads(_pylog("groups", "describe", group, "-b", b, "--json", "--rate-window", "0"))[0]
    # closing committed what was consumed; the group is a KIP-848 one, empty now
    assert desc["type"] == "consumer" and desc["state"] == "Empty"
    assert {o["partition"]: o["current_offset"] for o in desc["offsets"]} == {0: 4, 1: 4, 2: 4}


def test_classic_only_settings_are_refused_with_the_consumer_protocol(peer):
    pass

    topic = name("cgc-refuse")
    create_topic(peer.bootstrap, topic, 1)
    r = pylog("consume", topic, "-b", peer.bootstrap, "--group", "g", "--group-protocol", "consumer",
              "-X", "session.timeout.ms=10000", timeout=60)
    assert r.returncode == 2 and "session.timeout.ms is not supported when group.protocol=consumer" in r.stderr
    assert "Traceback" not in r.stderr


def test_a_fenced_member_loses_its_partitions_and_rejoins(peer, members):
    b = peer.bootstrap
    topic, group = filled_topic(b, "cgc-fence", 2, 5)
    m = Member(b, group, [topic])
    members.append(m)
    poll_until(members, lambda: len(m.assignment()) == 2 and len(m.records) == 10, what="the member's partitions")

    async def wrong_epoch():
        m.membership.member_epoch += 7  # the broker no longer recognises this epoch
    m.consumer._loop.run(wrong_epoch())
    poll_until(members, lambda: any(kind == "lost" for kind, _ in m.events) and len(m.assignment()) == 2
               and m.membership.stable, what="FENCED_MEMBER_EPOCH: partitions lost, then assigned again")
    lost = [tps for kind, tps in m.events if kind == "lost"]
    assert sorted((tp.topic, tp.partition) for tp in lost[0]) == [(topic, 0), (topic, 1)]
    # the committed positions survived: nothing is read again after the rejoin
    produce(b, topic, 2, 1, tag="after")
    poll_until(members, lambda: len(m.records) == 12, what="the two new records")
    assert len(set(m.records)) == 12


def test_a_member_that_stops_polling_leaves_and_rejoins(peer, members):
    b = peer.bootstrap
    topic, group = name("cgc-maxpoll"), name("cgc-g")
    create_topic(b, topic, 2)
    slow = Member(b, group, [topic], **{"max.poll.interval.ms": "2000"})
    busy = Member(b, group, [topic])
    members += [slow, busy]
    poll_until(members, lambda: balanced(members, 2), what="one partition each")
    # only `busy` polls: `slow` passes max.poll.interval.ms and leaves (epoch -1)
    poll_until([busy], lambda: len(busy.assignment()) == 2, what="the member still polling owning both")
    poll_until(members, lambda: balanced(members, 2), what="the slow member back after polling again")
    assert [kind for kind, _ in slow.events][-2:] == ["lost", "assign"]


def test_the_remote_assignor_is_the_members_choice(peer, members):
    import json

    b = peer.bootstrap
    topic, group = name("cgc-range"), name("cgc-g")
    create_topic(b, topic, 3)
    m = Member(b, group, [topic], **{"group.remote.assignor": "range"})
    members.append(m)
    poll_until(members, lambda: len(m.assignment()) == 3 and m.membership.stable, what="the member's partitions")
    desc = json.loads(_pylog("groups", "describe", group, "-b", b, "--json", "--rate-window", "0"))[0]
    assert desc["protocol"] == "range"


def test_pylog_and_librdkafka_members_share_a_group(peer, members):
    from support.cgroup_members import Member as RdkMember
    from support.member_procs import end_members

    b = peer.bootstrap
    topic, group = filled_topic(b, "cgc-mixed", 4, 20)
    mine = Member(b, group, [topic])
    members.append(mine)
    rdk = RdkMember(peer, group, topic)
    try:
        def all_read(total):
            seen = mine.records + list(rdk.records)
            return len(set(seen)) == total

        poll_until(members, lambda: sorted(p for _, p in mine.assignment()) != [] and len(mine.assignment()) == 2
                   and sorted(rdk.partitions() + [p for _, p in mine.assignment()]) == [0, 1, 2, 3]
                   and all_read(80), what="pylog and librdkafka with two partitions each, every record read")
        rdk.stop()  # librdkafka leaves: pylog's member takes its partitions
        produce(b, topic, 4, 5, tag="b")
        poll_until(members, lambda: len(mine.assignment()) == 4 and all_read(100),
                   what="the pylog member owning all four partitions, every record read")
        seen = mine.records + list(rdk.records)
        assert len(seen) == len(set(seen)) == 100, "a record was delivered twice across the handover"
    finally:
        end_members([rdk])


def test_a_broker_without_kip_848_is_a_one_line_error(tansu):
    # Tansu (an independent Kafka-compatible broker) serves classic groups only
    from support.client_fixtures import pylog_cli

    r = pylog_cli("consume", "t848", "-b", tansu.bootstrap, "--group", "g", "--group-protocol", "consumer",
                  "--timeout-ms", "3000")
    assert r.returncode == 1, r.stderr
    assert "ConsumerGroupHeartbeat" in r.stderr and "group.protocol=classic" in r.stderr
    errors = [ln for ln in r.stderr.splitlines() if ln.startswith("pylog: error:")]
    assert len(errors) == 1 and "Traceback" not in r.stderr, r.stderr
