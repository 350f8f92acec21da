"""`__consumer_offsets` records: Kafka's key/value schemas, and which partition a group lives on.

Keys: OffsetCommitKey v1 (group, topic, partition) and GroupMetadataKey v2
(group). Values: OffsetCommitValue v3 (offset, leader epoch, metadata, commit
timestamp) and GroupMetadataValue v3 (what Kafka 2.3+ writes for classic
groups). A null value is a tombstone. The byte layouts are the protocol
codec's (`pylog.core.protocol.internal_records`); the tests check that
`dump-segment --offsets-decoder` reads what the broker writes.
"""
from __future__ import annotations

from dataclasses import dataclass

from pylog.broker.groups.state import MemberIdentity
from pylog.core.protocol import internal_records as ir

TOPIC = "__consumer_offsets"
OFFSET_KEY_VERSION = 1
OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3


def java_string_hash(s: str) -> int:
    """Java's String.hashCode (over UTF-16 code units, int32 arithmetic)."""
    h = 0
    data = s.encode("utf-16-be")
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def partition_for(group_id: str, num_partitions: int) -> int:
    """Kafka's `Utils.abs(groupId.hashCode()) % n` (Utils.abs maps MIN_VALUE to 0)."""
    h = java_string_hash(group_id)
    h = 0 if h == -(1 << 31) else abs(h)
    return h % num_partitions


def offset_key(group: str, topic: str, partition: int) -> bytes:
    """OffsetCommitKey v1 bytes."""
    return ir.encode_offset_commit_key(group, topic, partition, OFFSET_KEY_VERSION)


def offset_value(offset: int, leader_epoch: int, metadata: str, commit_ts: int) -> bytes:
    """OffsetCommitValue v3 bytes."""
    return ir.encode_offset_commit_value({"offset": offset, "leader_epoch": leader_epoch,
                                          "metadata": metadata or "", "commit_timestamp": commit_ts},
                                         OFFSET_VALUE_VERSION)


def group_key(group: str) -> bytes:
    """GroupMetadataKey v2 bytes."""
    return ir.encode_group_metadata_key(group)


@dataclass
class StoredMember(MemberIdentity):
    """A member as GroupMetadataValue stores it."""

    subscription: bytes
    assignment: bytes


@dataclass
class StoredGroup:
    """A group as GroupMetadataValue stores it."""

    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    state_timestamp: int
    members: list[StoredMember]


def group_value(g: StoredGroup) -> bytes:
    """GroupMetadataValue v3 bytes."""
    return ir.encode_group_metadata_value({
        "protocol_type": g.protocol_type, "generation": g.generation, "protocol": g.protocol,
        "leader": g.leader, "current_state_timestamp": g.state_timestamp,
        "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                     "client_id": m.client_id, "client_host": m.client_host,
                     "rebalance_timeout": m.rebalance_timeout_ms, "session_timeout": m.session_timeout_ms,
                     "subscription": m.subscription, "assignment": m.assignment} for m in g.members],
    }, GROUP_VALUE_VERSION)


# ---------------------------------------------------------------- reading back
@dataclass
class OffsetRecord:
    """A committed offset (or its tombstone) read back from the topic."""

    group: str
    topic: str
    partition: int
    value: tuple | None  # (offset, leader_epoch, metadata, commit_ts) or None (tombstone)


@dataclass
class GroupRecord:
    """A group's metadata (or its tombstone) read back from the topic."""

    group: str
    value: StoredGroup | None


def parse_record(key, value):
    """OffsetRecord | GroupRecord for one `__consumer_offsets` record (raises MalformedDataError)."""
    kind, _, k = ir.decode_key(key)
    decoded = ir.decode_value(kind, value)
    if kind == ir.GROUP_METADATA:
        if decoded is None:
            return GroupRecord(k["group"], None)
        v = decoded[1]
        members = [StoredMember(m["member_id"], m.get("group_instance_id"), m["client_id"], m["client_host"],
                                m.get("rebalance_timeout", m["session_timeout"]), m["session_timeout"],
                                bytes(m["subscription"]), bytes(m["assignment"])) for m in v["members"]]
        return GroupRecord(k["group"], StoredGroup(v["protocol_type"], v["generation"], v["protocol"], v["leader"],
                                                   v.get("current_state_timestamp", -1), members))
    if decoded is None:
        return OffsetRecord(k["group"], k["topic"], k["partition"], None)
    v = decoded[1]
    return OffsetRecord(k["group"], k["topic"], k["partition"],
                        (v["offset"], v.get("leader_epoch", -1), v["metadata"], v["commit_timestamp"]))
