"""`__consumer_offsets` records: Kafka's key/value schemas, and which partition a group lives on.

Keys: OffsetCommitKey v1 (group, topic, partition) and GroupMetadataKey v2
(group). Values: OffsetCommitValue v3 (offset, leader epoch, metadata, commit
timestamp) and GroupMetadataValue v3 (what Kafka 2.3+ writes for classic
groups). A null value is a tombstone. Reading goes through
`pylog.core.records.offsets_records`, the decoders `dump-segment
--offsets-decoder` uses, so what the broker writes is exactly what the dump shows.
"""
from __future__ import annotations

import base64
import struct
from dataclasses import dataclass

from pylog.core.records.offsets_records import (
    GROUP_METADATA_KEY_VERSION,
    decode_group_metadata_value,
    decode_offset_commit_value,
    decode_offsets_key,
)

TOPIC = "__consumer_offsets"
OFFSET_KEY_VERSION = 1
OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


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


def _s(s: str | None) -> bytes:
    if s is None:
        return _I16.pack(-1)
    b = s.encode()
    return _I16.pack(len(b)) + b


def _b(b: bytes | None) -> bytes:
    if b is None:
        return _I32.pack(-1)
    return _I32.pack(len(b)) + bytes(b)


def offset_key(group: str, topic: str, partition: int) -> bytes:
    return _I16.pack(OFFSET_KEY_VERSION) + _s(group) + _s(topic) + _I32.pack(partition)


def offset_value(offset: int, leader_epoch: int, metadata: str, commit_ts: int) -> bytes:
    return (_I16.pack(OFFSET_VALUE_VERSION) + _I64.pack(offset) + _I32.pack(leader_epoch)
            + _s(metadata or "") + _I64.pack(commit_ts))


def group_key(group: str) -> bytes:
    return _I16.pack(GROUP_METADATA_KEY_VERSION) + _s(group)


@dataclass
class StoredMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass
class StoredGroup:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    state_timestamp: int
    members: list[StoredMember]


def group_value(g: StoredGroup) -> bytes:
    out = [_I16.pack(GROUP_VALUE_VERSION), _s(g.protocol_type), _I32.pack(g.generation), _s(g.protocol),
           _s(g.leader), _I64.pack(g.state_timestamp), _I32.pack(len(g.members))]
    for m in g.members:
        out += [_s(m.member_id), _s(m.group_instance_id), _s(m.client_id), _s(m.client_host),
                _I32.pack(m.rebalance_timeout_ms), _I32.pack(m.session_timeout_ms), _b(m.subscription),
                _b(m.assignment)]
    return b"".join(out)


# ---------------------------------------------------------------- reading back
@dataclass
class OffsetRecord:
    group: str
    topic: str
    partition: int
    value: tuple | None  # (offset, leader_epoch, metadata, commit_ts) or None (tombstone)


@dataclass
class GroupRecord:
    group: str
    value: StoredGroup | None


def parse_record(key, value):
    """OffsetRecord | GroupRecord for one `__consumer_offsets` record (raises CorruptRecordError)."""
    ktype, k = decode_offsets_key(key)
    if ktype == GROUP_METADATA_KEY_VERSION:
        if value is None:
            return GroupRecord(k["group"], None)
        _, v = decode_group_metadata_value(value)
        members = [StoredMember(m["memberId"], m.get("groupInstanceId"), m["clientId"], m["clientHost"],
                                m.get("rebalanceTimeout", m["sessionTimeout"]), m["sessionTimeout"],
                                base64.b64decode(m["subscription"]), base64.b64decode(m["assignment"]))
                   for m in v["members"]]
        return GroupRecord(k["group"], StoredGroup(v["protocolType"], v["generation"], v["protocol"], v["leader"],
                                                   v.get("currentStateTimestamp", -1), members))
    if value is None:
        return OffsetRecord(k["group"], k["topic"], k["partition"], None)
    _, v = decode_offset_commit_value(value)
    return OffsetRecord(k["group"], k["topic"], k["partition"],
                        (v["offset"], v.get("leaderEpoch", -1), v["metadata"], v["commitTimestamp"]))
