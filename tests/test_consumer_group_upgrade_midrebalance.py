"""A KIP-848 member joins a classic group that is in the middle of a rebalance.

Kafka 4.3.1 upgrades the group at once (only the migration policy, the embedded consumer
protocol and the size limit can refuse): the classic JoinGroup still parked is answered
REBALANCE_IN_PROGRESS so that member joins again, now into the consumer group. The same
steps run against Apache Kafka (`kafka_node`) and pylog's broker, and must agree.
"""
from __future__ import annotations

import socket

import pytest

from support.broker_fixtures import BrokerProcess, call, recv_frame
from support.cgroup_members import FAST, create_topic, wait_coordinator_knows
from support.waiting import wait_until

FIND_COORDINATOR, JOIN, SYNC, HEARTBEAT, DESCRIBE_GROUPS, LIST_GROUPS, CG_HEARTBEAT, CG_DESCRIBE = 10, 11, 14, 12, 15, 16, 68, 69
MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS = 79, 27


@pytest.fixture(params=["kafka", "pylog"])
def peer(request, tmp_path):
    """(bootstrap host:port, name) of Apache Kafka 4.3.1 or a pylog broker."""
    if request.param == "kafka":
        node = request.getfixturevalue("kafka_node")
        yield node
        return
    b = BrokerProcess(tmp_path / "data", *FAST).start()
    yield b
    b.stop_clean()


def _connect(peer) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", peer.port), timeout=60)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def test_consumer_member_joins_a_classic_group_mid_rebalance(peer):
    from pylog.core.protocol import decode_response, encode_request
    from pylog.core.protocol import consumer_protocol as cp

    topic, group = "midreb2", "mid-rebalance-848"
    create_topic(peer, topic, 2)
    wait_coordinator_knows(peer, group, topic, 2)
    meta = cp.encode_subscription({"topics": [topic], "user_data": None, "owned_partitions": [],
                                   "generation_id": -1, "rack_id": None})
    join = {"group_id": group, "session_timeout_ms": 30000, "rebalance_timeout_ms": 30000, "member_id": "",
            "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": meta}]}
    sa, sb, sc = _connect(peer), _connect(peer), _connect(peer)
    try:
        # member a: a Stable classic group of one, owning both partitions
        # Kafka creates __consumer_offsets when a coordinator is first looked up
        wait_until(lambda: call(sa, FIND_COORDINATOR, 4, {"key_type": 0, "coordinator_keys": [group]})[
            "coordinators"][0]["error_code"] == 0, 60, "the group coordinator")
        a = wait_until(lambda: (lambda r: r["member_id"] if r["error_code"] == MEMBER_ID_REQUIRED else None)(
            call(sa, JOIN, 5, join)), 60, "the group coordinator to load")
        r = call(sa, JOIN, 5, dict(join, member_id=a))
        assert r["error_code"] == 0 and r["generation_id"] == 1, r
        mine = cp.encode_assignment({"assigned_partitions": [{"topic": topic, "partitions": [0, 1]}],
                                     "user_data": None})
        r = call(sa, SYNC, 3, {"group_id": group, "generation_id": 1, "member_id": a,
                               "group_instance_id": None, "assignments": [{"member_id": a, "assignment": mine}]})
        assert r["error_code"] == 0, r
        # member b joins: the group prepares a rebalance, b's JoinGroup waits for a
        r = call(sb, JOIN, 5, join)
        assert r["error_code"] == MEMBER_ID_REQUIRED
        b = r["member_id"]
        sb.sendall(encode_request(JOIN, 5, 7, "mid-b", dict(join, member_id=b)))

        def classic_state():
            return call(sa, DESCRIBE_GROUPS, 5, {"groups": [group], "include_authorized_operations": False})[
                "groups"][0]["group_state"]
        wait_until(lambda: classic_state() == "PreparingRebalance", 30, "a rebalancing classic group")

        # a KIP-848 member arrives now
        r = call(sc, CG_HEARTBEAT, 0, {
            "group_id": group, "member_id": "", "member_epoch": 0, "instance_id": None, "rack_id": None,
            "rebalance_timeout_ms": 30000, "subscribed_topic_names": [topic], "subscribed_topic_regex": None,
            "server_assignor": None, "topic_partitions": []})
        assert r["error_code"] == 0, r  # the group is upgraded, not refused
        assert r["member_epoch"] == 2, r  # the classic generation 1, bumped by the join
        assert r["assignment"] == {"topic_partitions": []}, r  # a still owns both partitions
        # b's parked JoinGroup: join again (now as a classic member of a consumer group)
        corr, jb = decode_response(JOIN, 5, recv_frame(sb))
        assert corr == 7 and jb["error_code"] == REBALANCE_IN_PROGRESS, jb
        lg = call(sa, LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})["groups"]
        assert [g["group_type"] for g in lg if g["group_id"] == group] == ["consumer"]
        d = call(sa, CG_DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False})["groups"][0]
        assert d["error_code"] == 0 and d["group_epoch"] == 2, d
        # the upgraded group holds a (classic, its partitions) and the new member; b, which
        # had not been through SyncGroup, is a member with nothing yet
        types = sorted((m["member_type"], m["member_id"] == a) for m in d["members"])
        assert (0, True) in types and (1, False) in types, d["members"]
        owned = {m["member_id"]: sorted(p for t in m["assignment"]["topic_partitions"] for p in t["partitions"])
                 for m in d["members"]}
        assert owned[a] == [0, 1], d["members"]
        assert sorted(owned) == sorted({a, b, r["member_id"]}), d["members"]
    finally:
        for s in (sa, sb, sc):
            s.close()
