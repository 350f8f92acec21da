"""A KIP-848 group whose `__consumer_offsets` writes fail (storage's fault seam,
PYLOG_STORAGE_FAULTS): the heartbeat answers COORDINATOR_NOT_AVAILABLE and the group stays
exactly as it was, in memory and on disk (Kafka applies a change once its records are written).
"""
from __future__ import annotations

from support.broker_fixtures import BrokerProcess, call, connect
from support.cgroup_members import FAST, create_topic, describe
from support.waiting import wait_until

HEARTBEAT = 68
NONE, COORDINATOR_NOT_AVAILABLE = 0, 15


def state(d: dict) -> tuple:
    """What a ConsumerGroupDescribe answer says about the group's membership and epochs."""
    return (d["group_epoch"], d["assignment_epoch"], d["group_state"],
            sorted((m["member_id"], m["member_epoch"], repr(m["assignment"]), repr(m["target_assignment"]))
                   for m in d["members"]))


def test_failed_write_leaves_the_group_as_it_was(tmp_path, monkeypatch):
    faults = tmp_path / "faults"
    faults.write_text("")
    monkeypatch.setenv("PYLOG_STORAGE_FAULTS", str(faults))
    b = BrokerProcess(tmp_path / "data", *FAST).start()
    topic, group = "fault2", "fault848"
    try:
        create_topic(b, topic, 2)
        s = connect(b)

        def hb(mid, epoch, owned=None):
            return call(s, HEARTBEAT, 1, {
                "group_id": group, "member_id": mid, "member_epoch": epoch, "instance_id": None, "rack_id": None,
                "rebalance_timeout_ms": 30000 if epoch == 0 else -1,
                "subscribed_topic_names": [topic] if epoch == 0 else None, "subscribed_topic_regex": None,
                "server_assignor": None, "topic_partitions": [] if epoch == 0 else owned})

        a = hb("member-a", 0)
        assert a["error_code"] == NONE and a["member_epoch"] == 1
        owned = a["assignment"]["topic_partitions"]
        before = state(describe(b, group))
        assert before[2] == "Stable" and len(before[3]) == 1

        faults.write_text("pwrite ENOSPC __consumer_offsets\n")
        # a join (a new member, a new group epoch, a new target): nothing of it stays
        r = hb("member-b", 0)
        assert r["error_code"] == COORDINATOR_NOT_AVAILABLE, r
        assert state(describe(b, group)) == before
        # a leave: the member is still there
        assert hb("member-a", -1)["error_code"] == COORDINATOR_NOT_AVAILABLE
        assert state(describe(b, group)) == before
        # a heartbeat that changes nothing writes nothing and is answered
        r = hb("member-a", 1, owned)
        assert r["error_code"] == NONE and r["member_epoch"] == 1

        faults.write_text("")
        r = hb("member-b", 0)
        assert r["error_code"] == NONE, r
        after = describe(b, group)
        assert after["group_epoch"] == before[0] + 1 and len(after["members"]) == 2
        # what is on disk is what was in memory: the replay after kill -9 agrees
        r = hb("member-a", 1, owned)  # member-a is asked to give up one partition
        want = wait_until(lambda: (lambda d: d if d["group_state"] == "Reconciling" else None)(describe(b, group)),
                          30, "a Reconciling group")
        s.close()
        b.kill9()
        b.restart()
        assert state(describe(b, group)) == state(want)
    finally:
        b.stop()
