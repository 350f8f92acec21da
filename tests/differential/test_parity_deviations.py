"""Deviations from Kafka an independent review found, each pinned by a test that runs the same
requests against Apache Kafka and pylog (parametrized over both brokers): the assertions are
Kafka's behaviour, so they hold on Kafka and must hold on pylog."""
from __future__ import annotations

import time

import pytest

from support import broker_fixtures, kafka_peer  # noqa: F401 - tier marks: both brokers run here

from diff_peers import ADMIN, OPERATIONS, RESOURCE_TYPES, end_txn, grant_acls
from diff_runner import _batch, create_topics
from pylog.core.errors import ErrorCode as E
from support.waiting import wait_until

BROKERS = ["kafka", "pylog"]


def acl(principal: str, rtype: str, name: str, op: str) -> dict:
    return {"resource_type": RESOURCE_TYPES[rtype], "resource_name": name, "resource_pattern_type": 3,
            "principal": f"User:{principal}", "host": "*", "operation": OPERATIONS[op], "permission_type": 3}


def topic_id(peer, name: str):
    md = peer.client(ADMIN).call(3, 12, {"topics": [{"name": name, "topic_id": None}],
                                         "allow_auto_topic_creation": False,
                                         "include_topic_authorized_operations": False})
    return md["topics"][0]["topic_id"]


def heartbeat(c, group, member, epoch=0, topics=None, regex=None, owned=(), instance=None):
    """One ConsumerGroupHeartbeat (retried while the coordinator is still loading)."""
    deadline = time.monotonic() + 30
    while True:
        r = _heartbeat(c, group, member, epoch, topics, regex, owned, instance)
        if r["error_code"] not in (E.COORDINATOR_LOAD_IN_PROGRESS, E.COORDINATOR_NOT_AVAILABLE) \
                or time.monotonic() > deadline:
            return r
        time.sleep(0.2)


def reader_of(peer, topics: dict, group: str, described: str):
    """Create `topics`; a client as alice, who may READ `group` and DESCRIBE only topic `described`."""
    create_topics(peer, topics)
    grant_acls(peer, [acl("alice", "GROUP", group, "READ"), acl("alice", "TOPIC", described, "DESCRIBE")])
    return peer.client("alice")


def regex_assignment(c, group, member, regex, what):
    """Join `group` as `member` subscribed to `regex` and heartbeat until the broker has
    resolved the regex to an assignment; its topic_partitions (the member then leaves)."""
    r = heartbeat(c, group, member, regex=regex)
    assert r["error_code"] == E.NONE, r
    epoch, last = r["member_epoch"], r["assignment"] and r["assignment"]["topic_partitions"]

    def assigned():
        nonlocal epoch, last
        a = heartbeat(c, group, member, epoch=epoch, owned=None)
        assert a["error_code"] == E.NONE, a
        epoch = a["member_epoch"]
        if a["assignment"] is not None:
            last = a["assignment"]["topic_partitions"]
        return last
    tps = wait_until(assigned, 60, what, step=0.5)
    heartbeat(c, group, member, epoch=-1)
    return tps


def _heartbeat(c, group, member, epoch, topics, regex, owned, instance):
    return c.call(68, 1, {"group_id": group, "member_id": member, "member_epoch": epoch, "instance_id": instance,
                          "rack_id": None, "rebalance_timeout_ms": 30000 if epoch == 0 else -1,
                          "subscribed_topic_names": topics, "subscribed_topic_regex": regex,
                          "server_assignor": None, "topic_partitions": list(owned) if owned is not None else None})


def init_pid(c, tid, pid=-1, epoch=-1):
    def ask():
        r = c.call(22, 4, {"transactional_id": tid, "transaction_timeout_ms": 60000, "producer_id": pid,
                           "producer_epoch": epoch})
        return None if r["error_code"] in (E.COORDINATOR_LOAD_IN_PROGRESS, E.CONCURRENT_TRANSACTIONS) else r
    return wait_until(ask, 30, "InitProducerId answered")


# ---- 1: KIP-848 consumers on a broker with an authorizer -------------------------------------

@pytest.mark.parametrize("broker", BROKERS)
def test_kip848_heartbeat_and_describe_authorized_per_group_and_topic(peers, broker):
    peer = peers[broker]
    alice = reader_of(peer, {"d1-t": 2, "d1-secret": 1}, "d1-g", "d1-t")
    # READ on the group and DESCRIBE on the topic: a consumer joins (no CLUSTER_ACTION needed)
    r = heartbeat(alice, "d1-g", "d1-m1", topics=["d1-t"])
    assert r["error_code"] == E.NONE and r["member_epoch"] > 0, r
    # one subscribed topic it may not describe: the whole heartbeat is refused
    r = heartbeat(alice, "d1-g", "d1-m2", topics=["d1-t", "d1-secret"])
    assert r["error_code"] == E.TOPIC_AUTHORIZATION_FAILED, r
    # a group it may not read
    r = heartbeat(alice, "d1-other", "d1-m3", topics=["d1-t"])
    assert r["error_code"] == E.GROUP_AUTHORIZATION_FAILED, r
    # ConsumerGroupDescribe: DESCRIBE on each group (READ implies it)
    d = alice.call(69, 1, {"group_ids": ["d1-g", "d1-other"], "include_authorized_operations": False})
    codes = {g["group_id"]: g["error_code"] for g in d["groups"]}
    assert codes == {"d1-g": E.NONE, "d1-other": E.GROUP_AUTHORIZATION_FAILED}, d
    heartbeat(alice, "d1-g", "d1-m1", epoch=-1)


@pytest.mark.parametrize("broker", BROKERS)
def test_kip848_regex_keeps_only_topics_the_member_may_describe(peers, broker):
    peer = peers[broker]
    alice = reader_of(peer, {"d1r-open": 1, "d1r-closed": 1}, "d1r-g", "d1r-open")
    open_id = topic_id(peer, "d1r-open")
    tps = regex_assignment(alice, "d1r-g", "d1r-m", "d1r-.*", "the regex resolved to an assignment")
    assert [(t["topic_id"], t["partitions"]) for t in tps] == [(open_id, [0])]


# ---- 2: a fenced transactional producer stays fenced -----------------------------------------

@pytest.mark.parametrize("broker", BROKERS)
def test_fenced_producer_kip360_reinit_is_fenced(peers, broker):
    peer = peers[broker]
    create_topics(peer, {"d2-t": 1})
    a, b = peer.client(ADMIN), peer.fresh(ADMIN)
    try:
        first = init_pid(a, "d2-tx")
        assert first["error_code"] == E.NONE, first
        pid, epoch_a = first["producer_id"], first["producer_epoch"]
        second = init_pid(b, "d2-tx")  # producer B takes the transactional id over: A is fenced
        assert second["error_code"] == E.NONE and second["producer_id"] == pid, second
        epoch_b = second["producer_epoch"]
        assert epoch_b == epoch_a + 1
        # A tries KIP-360 recovery with its old (producer id, epoch): fenced, not handed B's epoch
        again = init_pid(a, "d2-tx", pid, epoch_a)
        assert again["error_code"] == E.PRODUCER_FENCED, again
        # B opens a transaction; A's recovery attempt fences it (Kafka aborts an open transaction
        # before it checks the epoch), so A can never commit B's transaction
        add = b.call(24, 3, {"v3_and_below_transactional_id": "d2-tx", "v3_and_below_producer_id": pid,
                             "v3_and_below_producer_epoch": epoch_b,
                             "v3_and_below_topics": [{"name": "d2-t", "partitions": [0]}]})
        assert add["results_by_topic_v3_and_below"][0]["results_by_partition"][0]["partition_error_code"] == 0
        again = init_pid(a, "d2-tx", pid, epoch_a)
        assert again["error_code"] == E.PRODUCER_FENCED, again
        end = end_txn(b, "d2-tx", pid, epoch_b, True)
        assert end["error_code"] == E.PRODUCER_FENCED, end
        d = a.call(65, 0, {"transactional_ids": ["d2-tx"]})["transaction_states"][0]
        assert (d["transaction_state"], d["producer_epoch"]) == ("CompleteAbort", epoch_b + 1), d
        # B starts over; its KIP-360 recovery with its current epoch bumps it, and a retry of
        # that (the answer lost) gets the same epoch back
        fresh = init_pid(b, "d2-tx")
        e3 = fresh["producer_epoch"]
        assert (fresh["error_code"], e3) == (E.NONE, epoch_b + 2), fresh
        rec = init_pid(b, "d2-tx", pid, e3)
        assert (rec["error_code"], rec["producer_epoch"]) == (E.NONE, e3 + 1), rec
        retry = init_pid(b, "d2-tx", pid, e3)
        assert (retry["error_code"], retry["producer_epoch"]) == (E.NONE, e3 + 1), retry
        # the fenced producer is still fenced
        assert init_pid(a, "d2-tx", pid, epoch_b)["error_code"] == E.PRODUCER_FENCED
    finally:
        b.close()


# ---- 3: transactional writes authorized per topic ---------------------------------------------

@pytest.mark.parametrize("broker", BROKERS)
def test_transactional_writes_need_topic_acls(peers, broker):
    peer = peers[broker]
    create_topics(peer, {"d3-t": 1, "d3-ok": 1})
    admin = peer.client(ADMIN)
    assert admin.call(8, 8, {"group_id": "d3-g", "generation_id_or_member_epoch": -1, "member_id": "",
                             "group_instance_id": None, "topics": [{"name": "d3-t", "partitions": [
                                 {"partition_index": 0, "committed_offset": 7, "committed_leader_epoch": -1,
                                  "committed_metadata": ""}]}]})["topics"][0]["partitions"][0]["error_code"] == 0
    grant_acls(peer, [acl("bob", "TRANSACTIONAL_ID", "d3-tx", "WRITE"), acl("bob", "GROUP", "d3-g", "READ"),
                      acl("bob", "TOPIC", "d3-ok", "WRITE"), acl("bob", "TOPIC", "d3-ok", "READ")])
    bob = peer.client("bob")
    r = init_pid(bob, "d3-tx")
    pid, epoch = r["producer_id"], r["producer_epoch"]

    def add(topics):
        a = bob.call(24, 3, {"v3_and_below_transactional_id": "d3-tx", "v3_and_below_producer_id": pid,
                             "v3_and_below_producer_epoch": epoch, "v3_and_below_topics": topics})
        return {(t["name"], p["partition_index"]): p["partition_error_code"]
                for t in a["results_by_topic_v3_and_below"] for p in t["results_by_partition"]}
    # no WRITE on d3-t: refused, and nothing else of the request is added
    assert add([{"name": "d3-t", "partitions": [0]}, {"name": "d3-ok", "partitions": [0]}]) == {
        ("d3-t", 0): E.TOPIC_AUTHORIZATION_FAILED, ("d3-ok", 0): E.OPERATION_NOT_ATTEMPTED}
    # internal topics are never added by a client
    assert add([{"name": "__consumer_offsets", "partitions": [0]}]) == {
        ("__consumer_offsets", 0): E.TOPIC_AUTHORIZATION_FAILED}
    assert add([{"name": "d3-ok", "partitions": [0]}]) == {("d3-ok", 0): E.NONE}
    ao = bob.call(25, 3, {"transactional_id": "d3-tx", "producer_id": pid, "producer_epoch": epoch,
                          "group_id": "d3-g"})
    assert ao["error_code"] == E.NONE, ao
    # TxnOffsetCommit needs READ on each topic: bob may not rewrite d3-g's offset of d3-t
    tc = bob.call(28, 3, {"transactional_id": "d3-tx", "group_id": "d3-g", "producer_id": pid,
                          "producer_epoch": epoch, "generation_id": -1, "member_id": "", "group_instance_id": None,
                          "topics": [{"name": n, "partitions": [{"partition_index": 0, "committed_offset": 1,
                                                                 "committed_leader_epoch": -1,
                                                                 "committed_metadata": ""}]}
                                     for n in ("d3-t", "d3-ok")]})
    codes = {t["name"]: t["partitions"][0]["error_code"] for t in tc["topics"]}
    assert codes == {"d3-t": E.TOPIC_AUTHORIZATION_FAILED, "d3-ok": E.NONE}, tc
    end = end_txn(bob, "d3-tx", pid, epoch, True)
    assert end["error_code"] == E.NONE, end

    def committed():
        f = admin.call(9, 8, {"groups": [{"group_id": "d3-g", "topics": [{"name": "d3-t", "partition_indexes": [0]},
                                                                         {"name": "d3-ok", "partition_indexes": [0]}]}],
                              "require_stable": True})
        parts = {t["name"]: t["partitions"][0] for t in f["groups"][0]["topics"]}
        if any(p["error_code"] == E.UNSTABLE_OFFSET_COMMIT for p in parts.values()):
            return None
        return {n: p["committed_offset"] for n, p in parts.items()}
    assert wait_until(committed, 30, "the transaction's offsets settled") == {"d3-t": 7, "d3-ok": 1}


# ---- 6: a transactional batch without a transactional id -------------------------------------

@pytest.mark.parametrize("broker", BROKERS)
def test_transactional_batch_without_transactional_id_is_refused(peers, broker):
    peer = peers[broker]
    create_topics(peer, {"d6-t": 1})
    admin = peer.client(ADMIN)
    batch = _batch({"values": ["x"], "producer_id": 77, "producer_epoch": 0, "base_sequence": 0,
                    "transactional": True})
    r = admin.call(0, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": "d6-t", "partition_data": [{"index": 0, "records": batch}]}]})
    assert r["responses"][0]["partition_responses"][0]["error_code"] == E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
    def end_offset():
        lo = admin.call(2, 7, {"replica_id": -1, "isolation_level": 1, "topics": [
            {"name": "d6-t", "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
        part = lo["topics"][0]["partitions"][0]
        return part if part["error_code"] == E.NONE else None
    assert wait_until(end_offset, 30, "ListOffsets answered")["offset"] == 0  # nothing stored, the LSO moves on



# ---- 10: a KIP-848 regex matches internal topics too ------------------------------------------

@pytest.mark.parametrize("broker", BROKERS)
def test_kip848_regex_matches_internal_topics(peers, broker):
    peer = peers[broker]
    admin = peer.client(ADMIN)
    offsets_id = topic_id(peer, "__consumer_offsets")
    tps = regex_assignment(admin, "d10-g", "d10-m", ".*(?:__consumer_offsets).*",
                           "the regex resolved to __consumer_offsets")
    assert [t["topic_id"] for t in tps] == [offsets_id]


# ---- 11: offsets of topics that do not exist are not stored -----------------------------------

@pytest.mark.parametrize("broker", BROKERS)
@pytest.mark.parametrize("version", [2, 8])
def test_offset_commit_unknown_topic(peers, broker, version):
    peer = peers[broker]
    create_topics(peer, {"d11-t": 1})
    admin = peer.client(ADMIN)
    r = admin.call(8, version, {"group_id": f"d11-g{version}", "generation_id_or_member_epoch": -1, "member_id": "",
                                "group_instance_id": None, "retention_time_ms": -1, "topics": [
                                    {"name": n, "partitions": [{"partition_index": p, "committed_offset": 3,
                                                                "committed_leader_epoch": -1, "committed_metadata": "",
                                                                "commit_timestamp": -1}]}
                                    for n, p in (("d11-missing", 0), ("d11-t", 4), ("d11-t", 0))]})
    codes = [(t["name"], p["partition_index"], p["error_code"]) for t in r["topics"] for p in t["partitions"]]
    assert codes == [("d11-missing", 0, E.UNKNOWN_TOPIC_OR_PARTITION), ("d11-t", 4, E.UNKNOWN_TOPIC_OR_PARTITION),
                     ("d11-t", 0, E.NONE)]
    f = admin.call(9, 8, {"groups": [{"group_id": f"d11-g{version}", "topics": None}], "require_stable": False})
    assert [(t["name"], [p["partition_index"] for p in t["partitions"]]) for t in f["groups"][0]["topics"]] == [
        ("d11-t", [0])]


# ---- 12: EndTxn abort of an empty transaction; a static member rejoining while active ----------

@pytest.mark.parametrize("broker", BROKERS)
def test_end_txn_abort_with_nothing_added(peers, broker):
    admin = peers[broker].client(ADMIN)
    r = init_pid(admin, "d12-tx")
    end = end_txn(admin, "d12-tx", r["producer_id"], r["producer_epoch"], False)
    assert end["error_code"] == E.INVALID_TXN_STATE, end


@pytest.mark.parametrize("broker", BROKERS)
def test_static_member_rejoining_while_active(peers, broker):
    peer = peers[broker]
    create_topics(peer, {"d12-t": 1})
    admin = peer.client(ADMIN)
    assert heartbeat(admin, "d12-g", "d12-m", topics=["d12-t"], instance="i")["error_code"] == E.NONE
    for member in ("d12-m", "d12-other"):
        r = heartbeat(admin, "d12-g", member, topics=["d12-t"], instance="i")
        assert r["error_code"] == E.UNRELEASED_INSTANCE_ID, r
