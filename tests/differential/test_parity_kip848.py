"""KIP-848 member lifecycles where pylog answered differently from Kafka: epochs on offset
commits (each partition's assignment epoch), a static member leaving while it revokes, a
regex member's full heartbeat. Each test runs the same requests against Apache Kafka 4.4 and
pylog (parametrized over both brokers): the assertions are Kafka's behaviour."""
from __future__ import annotations

import time

import pytest

from support import broker_fixtures, kafka_peer  # noqa: F401 - tier marks: both brokers run here

from diff_peers import ADMIN, end_txn
from diff_runner import create_topics
from pylog.core.errors import ErrorCode as E

BROKERS = ["kafka", "pylog"]
RETRIABLE = (E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE, E.NOT_COORDINATOR)


class Member:
    """One KIP-848 consumer driven by hand: it acknowledges what it is given (owned = the last
    assignment) unless told to hold on to partitions it should revoke."""

    def __init__(self, client, group: str, member_id: str, topics=None, regex=None, instance=None):
        self.c, self.group, self.id = client, group, member_id
        self.topics, self.regex, self.instance = topics, regex, instance
        self.epoch, self.owned = 0, []  # owned: [{topic_id, partitions}] as the wire has it

    def beat(self, owned=None, full: bool = False, epoch: int | None = None) -> dict:
        epoch = self.epoch if epoch is None else epoch
        first = epoch == 0 or full
        body = {"group_id": self.group, "member_id": self.id, "member_epoch": epoch, "instance_id": self.instance,
                "rack_id": None, "rebalance_timeout_ms": 30000 if first else -1,
                "subscribed_topic_names": self.topics if first else None,
                "subscribed_topic_regex": self.regex if first else None, "server_assignor": None,
                "topic_partitions": ([] if epoch == 0 else (self.owned if owned is None else owned)) if first
                else (None if owned is None else owned)}
        deadline = time.monotonic() + 30
        while True:
            r = self.c.call(68, 1, body)
            if r["error_code"] not in RETRIABLE or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        if r["error_code"] == E.NONE and epoch >= 0:
            self.epoch = r["member_epoch"]
            if r["assignment"] is not None:
                self.owned = r["assignment"]["topic_partitions"]
        return r

    def settle(self, until, owned=None, timeout: float = 30.0, what: str = "the member settled") -> dict:
        """Heartbeat (every 0.2 s) until `until(self)` holds, saying it owns `owned` (by default
        what it was last given: it acknowledges each revocation at once)."""
        deadline = time.monotonic() + timeout
        while True:
            r = self.beat(self.owned if owned is None else owned)
            assert r["error_code"] == E.NONE, r
            if until(self):
                return r
            assert time.monotonic() < deadline, f"{what}: not within {timeout}s (last answer {r})"
            time.sleep(0.2)

    def partitions(self) -> list[int]:
        return sorted(p for t in self.owned for p in t["partitions"])


def commit(c, group: str, member: str, epoch: int, topic: str, partition: int, offset: int = 7) -> int:
    r = c.call(8, 9, {"group_id": group, "generation_id_or_member_epoch": epoch, "member_id": member,
                      "group_instance_id": None, "topics": [{"name": topic, "partitions": [
                          {"partition_index": partition, "committed_offset": offset, "committed_leader_epoch": -1,
                           "committed_metadata": ""}]}]})
    return r["topics"][0]["partitions"][0]["error_code"]


def txn_commit(c, v: int, tid: str, pid: int, pepoch: int, group: str, member: str, epoch: int, topic: str,
               partition: int) -> int:
    r = c.call(28, v, {"transactional_id": tid, "group_id": group, "producer_id": pid, "producer_epoch": pepoch,
                       "generation_id_or_member_epoch": epoch, "member_id": member, "group_instance_id": None, "topics": [
                           {"name": topic, "partitions": [{"partition_index": partition, "committed_offset": 3,
                                                           "committed_leader_epoch": -1,
                                                           "committed_metadata": ""}]}]})
    return r["topics"][0]["partitions"][0]["error_code"]


def two_members_one_rebalance(peer, name: str):
    """m1 owns both partitions of `{name}-t` at epoch e1; m2 joins; m1 gives one partition up
    and moves on to a newer epoch. Returns (m1, m2, e1, kept partition, given-up partition)."""
    topic = f"{name}-t"
    create_topics(peer, {topic: 2})
    admin = peer.client(ADMIN)
    m1 = Member(admin, f"{name}-g", f"{name}-m1", topics=[topic])
    m1.settle(lambda m: m.partitions() == [0, 1], what="m1 owns both partitions")
    e1 = m1.epoch
    m2 = Member(admin, f"{name}-g", f"{name}-m2", topics=[topic])
    m2.beat()
    m1.settle(lambda m: m.epoch > e1 and len(m.partitions()) == 1, what="m1 revoked one partition")
    kept = m1.partitions()[0]
    return m1, m2, e1, kept, 1 - kept


# ---- OffsetCommit v9 with an older member epoch: accepted for partitions owned since then ----

@pytest.mark.parametrize("broker", BROKERS)
def test_offset_commit_older_epoch_for_partitions_owned_since(peers, broker):
    peer = peers[broker]
    m1, _, e1, kept, gone = two_members_one_rebalance(peer, "d4c")
    admin = peer.client(ADMIN)
    assert commit(admin, "d4c-g", m1.id, e1, "d4c-t", kept) == E.NONE  # owned since e1
    assert commit(admin, "d4c-g", m1.id, e1, "d4c-t", gone) == E.STALE_MEMBER_EPOCH  # no longer its own
    assert commit(admin, "d4c-g", m1.id, m1.epoch, "d4c-t", kept) == E.NONE
    assert commit(admin, "d4c-g", m1.id, m1.epoch + 1, "d4c-t", kept) == E.STALE_MEMBER_EPOCH  # from the future
    assert commit(admin, "d4c-g", m1.id, e1 - 1, "d4c-t", kept) == E.STALE_MEMBER_EPOCH  # before it owned it


# ---- TxnOffsetCommit: the same rule; a version without STALE_MEMBER_EPOCH gets ILLEGAL_GENERATION ----

@pytest.mark.parametrize("broker", BROKERS)
def test_txn_offset_commit_member_epochs(peers, broker):
    peer = peers[broker]
    m1, _, e1, kept, gone = two_members_one_rebalance(peer, "d4t")
    admin = peer.client(ADMIN)
    tid = "d4t-tx"
    deadline = time.monotonic() + 30
    while True:
        init = admin.call(22, 4, {"transactional_id": tid, "transaction_timeout_ms": 60000, "producer_id": -1,
                                  "producer_epoch": -1})
        if init["error_code"] not in (E.COORDINATOR_LOAD_IN_PROGRESS, E.CONCURRENT_TRANSACTIONS) \
                or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    pid, pepoch = init["producer_id"], init["producer_epoch"]
    added = admin.call(25, 3, {"transactional_id": tid, "producer_id": pid, "producer_epoch": pepoch,
                               "group_id": "d4t-g"})
    assert added["error_code"] == E.NONE, added
    for v in (3, 4):
        assert txn_commit(admin, v, tid, pid, pepoch, "d4t-g", m1.id, e1, "d4t-t", kept) == E.NONE
        # the Java client takes STALE_MEMBER_EPOCH here as fatal: Kafka answers these versions
        # ILLEGAL_GENERATION, which it handles
        assert txn_commit(admin, v, tid, pid, pepoch, "d4t-g", m1.id, e1, "d4t-t", gone) == E.ILLEGAL_GENERATION
        assert txn_commit(admin, v, tid, pid, pepoch, "d4t-g", m1.id, m1.epoch + 1, "d4t-t",
                          kept) == E.ILLEGAL_GENERATION
        assert txn_commit(admin, v, tid, pid, pepoch, "d4t-g", "d4t-nobody", m1.epoch, "d4t-t",
                          kept) == E.UNKNOWN_MEMBER_ID
    end = end_txn(admin, tid, pid, pepoch, False)
    assert end["error_code"] == E.NONE, end


# ---- a static member leaving (epoch -2) while it revokes: the partitions go to the others ----

@pytest.mark.parametrize("broker", BROKERS)
def test_static_leave_releases_partitions_being_revoked(peers, broker):
    peer = peers[broker]
    create_topics(peer, {"d8-t": 2})
    admin = peer.client(ADMIN)
    s = Member(admin, "d8-g", "d8-s", topics=["d8-t"], instance="d8-i")
    s.settle(lambda m: m.partitions() == [0, 1], what="the static member owns both partitions")
    held = list(s.owned)
    m2 = Member(admin, "d8-g", "d8-m2", topics=["d8-t"])
    m2.beat()
    # the static member is asked to give one up and does not (it keeps saying it owns both)
    s.settle(lambda m: len(m.partitions()) == 1, owned=held, what="the static member is asked to revoke")
    given_up = 1 - s.partitions()[0]
    r = s.beat(epoch=-2)
    assert (r["error_code"], r["member_epoch"]) == (E.NONE, -2), r
    # well inside the session timeout (45 s): the partition is not held for the member that left
    m2.settle(lambda m: given_up in m.partitions(), timeout=15, what="m2 gets the partition the static member left")


# ---- a regex member's full heartbeat gets its assignment back ----

@pytest.mark.parametrize("broker", BROKERS)
def test_regex_member_full_heartbeat_gets_assignment(peers, broker):
    peer = peers[broker]
    create_topics(peer, {"d9-t": 1})
    admin = peer.client(ADMIN)
    m = Member(admin, "d9-g", "d9-m", regex="d9-.*")
    m.settle(lambda x: x.partitions() == [0], what="the regex member owns d9-t 0")
    # a client that lost an answer sends everything again: Kafka answers the assignment in full
    r = m.beat(full=True)
    assert r["error_code"] == E.NONE, r
    assert r["assignment"] is not None, r
    assert [p for t in r["assignment"]["topic_partitions"] for p in t["partitions"]] == [0]
    # a plain heartbeat with nothing new carries none
    r = m.beat()
    assert (r["error_code"], r["assignment"]) == (E.NONE, None), r
