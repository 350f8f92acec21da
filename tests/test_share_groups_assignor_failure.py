"""When the share assignor throws, the heartbeat that needed the new target assignment is answered
UNKNOWN_SERVER_ERROR with no message and nothing it changed is kept, as Kafka 4.4 does
(GroupMetadataManager.maybeUpdateTargetAssignment rethrows the assignor's failure as an
UnknownServerException; the coordinator's write is rolled back, and the error's message is not sent).
Kafka's assignor fails only on rare member/partition layouts (tests/test_share_assignor_parity.py
finds them on both sides), so the failure is forced here on an embedded pylog broker."""
from __future__ import annotations

from support import share_scenarios as sc
from support.broker_fixtures import call
from support.share_members import Member, connect, describe
from pylog.broker.groups.share import group as share_group
from pylog.broker.groups.share.assignor import AssignorError
from pylog.testing import EmbeddedBroker


def test_an_assignor_failure_fails_the_heartbeat_and_keeps_nothing(monkeypatch):
    real = share_group.assign

    def failing(*args, **kwargs):
        raise AssignorError("NoSuchElementException")

    with EmbeddedBroker() as broker:
        bs = broker.bootstrap
        topic, group = sc.name("af"), sc.name("af-g")
        sc.create_topic(bs, topic, 2)
        sc.set_group_configs(bs, group, share_assignment_interval_ms="0")  # every join assigns at once
        s = connect(bs)
        a = Member(s, group, [topic])
        a.heartbeat()
        before = a.until(2)
        monkeypatch.setattr(share_group, "assign", failing)
        b = Member(s, group, [topic])
        r = call(s, 76, 1, {"group_id": group, "member_id": b.id, "member_epoch": 0, "rack_id": None,
                            "subscribed_topic_names": [topic]})
        assert (r["error_code"], r["error_message"], r["assignment"]) == (-1, None, None), r
        assert describe(s, group) == before  # b is not a member, no epoch moved
        fresh = Member(s, sc.name("af-new"), [topic])  # a new group's first join: no group is left behind
        r = call(s, 76, 1, {"group_id": fresh.group, "member_id": fresh.id, "member_epoch": 0, "rack_id": None,
                            "subscribed_topic_names": [topic]})
        assert r["error_code"] == -1, r
        assert describe(s, fresh.group)[0] == "Dead"
        monkeypatch.setattr(share_group, "assign", real)
        b.heartbeat()
        assert b.until(1)[0] == "Stable" and a.until(1)[3] == b.until(1)[3]
        s.close()
