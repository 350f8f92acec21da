"""KIP-848 group members (librdkafka subprocesses) and the consumer-group test helpers."""
from __future__ import annotations
from pathlib import Path
from support.broker_fixtures import call, connect
from support.member_procs import MemberProcess


HERE = Path(__file__).resolve().parent


SESSION_MS = 6000


FAST = ("--set", "group.consumer.heartbeat.interval.ms=500", "--set", f"group.consumer.session.timeout.ms={SESSION_MS}")


CONSUMER_GROUP_DESCRIBE, LIST_GROUPS, DESCRIBE_GROUPS, OFFSET_FETCH = 69, 16, 15, 9


def create_topic(b, name, partitions):
    from confluent_kafka.admin import AdminClient, NewTopic

    from support.waiting import wait_until

    a = AdminClient({"bootstrap.servers": b.bootstrap})
    a.create_topics([NewTopic(name, partitions, 1)])[name].result(30)

    def served():
        t = a.list_topics(name, timeout=10).topics.get(name)
        return t is not None and t.error is None and len(t.partitions) == partitions and all(
            p.leader >= 0 for p in t.partitions.values())
    # Kafka answers CreateTopics once its controller has the topic; the broker learns it a moment
    # later. Its group coordinator, upgrading a classic group, keeps a member's assignment only of
    # topics it knows: the likely cause of the upgraded member described with no partitions once
    # under load (test_consumer_group_upgrade_midrebalance)
    wait_until(served, 60, f"topic {name} in the broker's metadata")


def _offsets_partition(group: str, partitions: int = 50) -> int:
    """The __consumer_offsets partition Kafka gives `group`: Java's String.hashCode, made
    non-negative as Kafka's Utils.abs does, modulo the partition count."""
    h, units = 0, group.encode("utf-16-be")
    for i in range(0, len(units), 2):
        h = (31 * h + int.from_bytes(units[i:i + 2], "big")) & 0xFFFFFFFF
    h = h - (1 << 32) if h >= 1 << 31 else h
    return (0 if h == -(1 << 31) else abs(h)) % partitions


def wait_coordinator_knows(b, group, topic, partitions):
    """Wait until the coordinator shard of `group` assigns `topic`'s partitions.

    Kafka's broker serves a new topic in Metadata before each group-coordinator shard has the
    metadata image with it, and a shard upgrading a classic group keeps only assigned partitions
    of topics in its image. A throwaway KIP-848 member, in a group on the same shard, is assigned
    the topic only once that shard knows it."""
    from support.waiting import wait_until

    import socket

    shard = _offsets_partition(group)
    probes = (f"{group}-probe-{i}" for i in range(10**6))
    s = socket.create_connection(("127.0.0.1", b.port), timeout=30)  # a KafkaNode has no .host
    try:
        # Kafka creates __consumer_offsets when a coordinator is first looked up
        wait_until(lambda: call(s, 10, 4, {"key_type": 0, "coordinator_keys": [group]})[
            "coordinators"][0]["error_code"] == 0, 60, "the group coordinator", step=0.2)

        def assigned():
            probe = next(g for g in probes if _offsets_partition(g) == shard)
            r = call(s, 68, 0, {"group_id": probe, "member_id": "", "member_epoch": 0, "instance_id": None,
                                "rack_id": None, "rebalance_timeout_ms": 30000,
                                "subscribed_topic_names": [topic], "subscribed_topic_regex": None,
                                "server_assignor": None, "topic_partitions": []})
            if r["error_code"] != 0:
                return False
            got = sum(len(t["partitions"]) for t in (r["assignment"] or {}).get("topic_partitions", []))
            call(s, 68, 0, {"group_id": probe, "member_id": r["member_id"], "member_epoch": -1,
                            "instance_id": None, "rack_id": None, "rebalance_timeout_ms": -1,
                            "subscribed_topic_names": None, "subscribed_topic_regex": None,
                            "server_assignor": None, "topic_partitions": None})
            return got == partitions
        wait_until(assigned, 60, f"the coordinator of {group} to know topic {topic}", step=0.2)
    finally:
        s.close()


def produce(b, topic, partitions, per_partition, tag="v"):
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 5})
    for part in range(partitions):
        for i in range(per_partition):
            p.produce(topic, f"{tag}-{part}-{i}".encode(), partition=part)
    assert p.flush(30) == 0


def describe(b, group) -> dict:
    s = connect(b)
    try:
        return call(s, CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": [group], "include_authorized_operations": False})[
            "groups"][0]
    finally:
        s.close()


def committed(b, group, topic, partitions) -> dict:
    s = connect(b)
    try:
        r = call(s, OFFSET_FETCH, 9, {"groups": [{"group_id": group, "member_id": None, "member_epoch": -1, "topics": [
            {"name": topic, "partition_indexes": list(range(partitions))}]}], "require_stable": False})
    finally:
        s.close()
    g = r["groups"][0]
    assert g["error_code"] == 0, g
    return {p["partition_index"]: p["committed_offset"] for t in g["topics"] for p in t["partitions"]}


class Member(MemberProcess):
    """A librdkafka KIP-848 member subprocess and what it reported."""

    def __init__(self, b, group, topics, instance_id=None):
        self._spawn([str(HERE / "cgroup_member_proc.py"), b.bootstrap, group, topics]
                    + ([instance_id] if instance_id else []))

    def _spawn(self, args):
        MemberProcess.__init__(self, args)

    def assigned(self, reported):
        return [tuple(x) if isinstance(x, list) else (None, x) for x in reported]

    def partitions(self, topic=None):
        return sorted(p for t, p in self.assignment if topic is None or t == topic)
