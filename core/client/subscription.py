"""The "consumer" embedded protocol: what JoinGroup/SyncGroup carry as opaque bytes.

Kafka's ConsumerProtocolSubscription (v0 topics + user_data; v1 adds owned
partitions; v2 the generation; v3 the rack) and ConsumerProtocolAssignment
(assigned partitions + user_data; v1-v3 share the v0 layout), as dataclasses for the
assignors and the group code; the bytes are the protocol codec's
(`pylog.core.protocol.consumer_protocol`). No I/O.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pylog.core.errors import InconsistentGroupProtocolError
from pylog.core.protocol import consumer_protocol as cp

SUBSCRIPTION_VERSION = 3
ASSIGNMENT_VERSION = 3


@dataclass
class Subscription:
    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: list[tuple[str, int]] = field(default_factory=list)
    generation_id: int = -1
    rack_id: str | None = None
    version: int = SUBSCRIPTION_VERSION


@dataclass
class Assignment:
    partitions: list[tuple[str, int]]
    user_data: bytes | None = None
    version: int = ASSIGNMENT_VERSION


def _grouped(tps) -> list[dict]:
    by_topic: dict[str, list[int]] = {}
    for t, p in tps:
        by_topic.setdefault(t, []).append(p)
    return [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(by_topic.items())]


def _flat(items) -> list[tuple[str, int]]:
    return [(it["topic"], p) for it in items or [] for p in it["partitions"]]


def encode_subscription(sub: Subscription) -> bytes:
    return cp.encode_subscription({
        "topics": list(sub.topics), "user_data": sub.user_data, "owned_partitions": _grouped(sub.owned_partitions),
        "generation_id": sub.generation_id, "rack_id": sub.rack_id}, min(sub.version, SUBSCRIPTION_VERSION))


def encode_assignment(a: Assignment) -> bytes:
    return cp.encode_assignment({"assigned_partitions": _grouped(a.partitions), "user_data": a.user_data},
                                min(a.version, ASSIGNMENT_VERSION))


def decode_subscription(data) -> Subscription:
    try:
        d = cp.decode_subscription(data)
    except cp.MalformedDataError as e:
        raise InconsistentGroupProtocolError(f"unreadable consumer subscription: {e}") from None
    return Subscription(list(d["topics"]), d.get("user_data"), _flat(d.get("owned_partitions")),
                        d.get("generation_id", -1), d.get("rack_id"), d["version"])


def decode_assignment(data) -> Assignment:
    try:
        d = cp.decode_assignment(bytes(data or b""))
    except cp.MalformedDataError as e:
        raise InconsistentGroupProtocolError(f"unreadable consumer assignment: {e}") from None
    return Assignment(_flat(d["assigned_partitions"]), d.get("user_data"), d["version"])
