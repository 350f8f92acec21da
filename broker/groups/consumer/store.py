"""A consumer group's records in `__consumer_offsets`: built on change, replayed at start-up.

Kafka's record types (layouts in pylog.core.protocol.consumer_group_records):
the group epoch (ConsumerGroupMetadata), each member's subscription
(ConsumerGroupMemberMetadata), the target assignment (TargetAssignmentMetadata
+ one TargetAssignmentMember per member) and each member's reconciliation
state (CurrentMemberAssignment). The latest record per key wins; a tombstone
removes.
"""
from __future__ import annotations

import logging

from pylog.broker.groups.consumer.group import ConsumerGroup, ConsumerMember, from_wire, to_wire
from pylog.broker.groups.state import Group
from pylog.core.protocol import consumer_group_records as cr

log = logging.getLogger("pylog.broker.groups")


def is_consumer_record(key) -> bool:
    """True when a `__consumer_offsets` key is one of the consumer-group record types."""
    return key is not None and len(key) >= 2 and int.from_bytes(bytes(key[:2]), "big", signed=True) in cr.RECORD_TYPES


def _gk(group_id: str) -> dict:
    return {"group_id": group_id}


def _mk(group_id: str, member_id: str) -> dict:
    return {"group_id": group_id, "member_id": member_id}


def group_epoch_record(cg: ConsumerGroup) -> tuple:
    """ConsumerGroupMetadata: the group epoch."""
    return (cr.encode_key(cr.GROUP_METADATA, _gk(cg.group_id)),
            cr.encode_value(cr.GROUP_METADATA, {"epoch": cg.epoch, "metadata_hash": cg.metadata_hash}))


def target_epoch_record(cg: ConsumerGroup) -> tuple:
    """ConsumerGroupTargetAssignmentMetadata: the assignment epoch."""
    return (cr.encode_key(cr.TARGET_METADATA, _gk(cg.group_id)),
            cr.encode_value(cr.TARGET_METADATA, {"assignment_epoch": cg.assignment_epoch}))


def target_member_record(group_id: str, member_id: str, tps) -> tuple:
    """ConsumerGroupTargetAssignmentMember: one member's target partitions."""
    return (cr.encode_key(cr.TARGET_MEMBER, _mk(group_id, member_id)),
            cr.encode_value(cr.TARGET_MEMBER, {"topic_partitions": to_wire(tps)}))


def member_description(m: ConsumerMember) -> tuple:
    """Everything ConsumerGroupMemberMetadata holds: a change rewrites the record."""
    return (m.instance_id, m.rack_id, m.client_id, m.client_host, tuple(m.subscribed_names), m.subscribed_regex,
            m.rebalance_timeout_ms, m.server_assignor, repr(m.classic))


def member_record(group_id: str, m: ConsumerMember) -> tuple:
    """ConsumerGroupMemberMetadata: who the member is and what it subscribes to."""
    return (cr.encode_key(cr.MEMBER_METADATA, _mk(group_id, m.member_id)), cr.encode_value(cr.MEMBER_METADATA, {
        "instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
        "client_host": m.client_host, "subscribed_topic_names": list(m.subscribed_names),
        "subscribed_topic_regex": m.subscribed_regex, "rebalance_timeout_ms": m.rebalance_timeout_ms,
        "server_assignor": m.server_assignor,
        "classic_member_metadata": None if m.classic is None else {
            "session_timeout_ms": m.classic["session_timeout_ms"],
            "supported_protocols": [{"name": n, "metadata": bytes(md)} for n, md in m.classic["protocols"]]}}))


def current_assignment_record(group_id: str, m: ConsumerMember) -> tuple:
    """ConsumerGroupCurrentMemberAssignment: epochs, state and owned/revoking partitions."""
    return (cr.encode_key(cr.CURRENT_ASSIGNMENT, _mk(group_id, m.member_id)), cr.encode_value(cr.CURRENT_ASSIGNMENT, {
        "member_epoch": m.epoch, "previous_member_epoch": m.previous_epoch, "state": m.state,
        "assigned_partitions": _with_epochs(m.assigned, m),
        "partitions_pending_revocation": _with_epochs(m.pending_revocation, m)}))


def _with_epochs(tps, m: ConsumerMember) -> list:
    """[{topic_id, partitions, assignment_epochs}]: each partition's assignment epoch beside it."""
    return [{**t, "assignment_epochs": [m.epochs.get((t["topic_id"], p), m.epoch) for p in t["partitions"]]}
            for t in to_wire(tps)]


def _epochs(wire: list, default: int) -> dict:
    """{(topic_id, partition): assignment epoch} of a replayed record (the member epoch when absent)."""
    return {(t["topic_id"], p): (t["assignment_epochs"][i] if t.get("assignment_epochs") else default)
            for t in wire for i, p in enumerate(t["partitions"])}


def member_tombstones(group_id: str, member_id: str) -> list:
    """A member leaves: its current assignment, target and metadata go (Kafka's order)."""
    k = _mk(group_id, member_id)
    return [(cr.encode_key(cr.CURRENT_ASSIGNMENT, k), None), (cr.encode_key(cr.TARGET_MEMBER, k), None),
            (cr.encode_key(cr.MEMBER_METADATA, k), None)]


def group_tombstones(cg: ConsumerGroup) -> list:
    """The whole group goes: every member's records, then the group's own."""
    out = []
    for mid in list(cg.members) + [x for x in cg.target if x not in cg.members]:
        out.extend(member_tombstones(cg.group_id, mid))
    k = _gk(cg.group_id)
    out += [(cr.encode_key(cr.TARGET_METADATA, k), None), (cr.encode_key(cr.PARTITION_METADATA, k), None),
            (cr.encode_key(cr.GROUP_METADATA, k), None)]
    return out


# ---------------------------------------------------------------- start-up
def apply(groups: dict, key, value) -> None:
    """Replay one consumer-group record into `groups` (raises MalformedDataError)."""
    rtype, k, v = cr.decode(key, value)
    gid = k["group_id"]
    g = groups.get(gid)
    if v is None and (g is None or g.consumer is None):
        return
    if g is None:
        g = groups[gid] = Group(gid)
    if g.consumer is None:
        g.consumer = ConsumerGroup(gid)
    cg = g.consumer
    if rtype == cr.GROUP_METADATA:
        if v is None:
            g.consumer = None
            if not g.offsets and not g.members:
                groups.pop(gid, None)
            return
        cg.epoch, cg.metadata_hash = v["epoch"], v["metadata_hash"]
    elif rtype == cr.TARGET_METADATA:
        cg.assignment_epoch = v["assignment_epoch"] if v is not None else 0
    elif rtype == cr.TARGET_MEMBER:
        if v is None:
            cg.target.pop(k["member_id"], None)
        else:
            cg.target[k["member_id"]] = from_wire(v["topic_partitions"])
    elif rtype == cr.MEMBER_METADATA:
        mid = k["member_id"]
        if v is None:
            cg.members.pop(mid, None)
            return
        m = cg.members.get(mid) or ConsumerMember(mid)
        m.instance_id, m.rack_id, m.client_id, m.client_host = (
            v["instance_id"], v["rack_id"], v["client_id"], v["client_host"])
        m.subscribed_names = list(v["subscribed_topic_names"])
        m.subscribed_regex, m.rebalance_timeout_ms, m.server_assignor = (
            v["subscribed_topic_regex"], v["rebalance_timeout_ms"], v["server_assignor"])
        cm = v["classic_member_metadata"]
        m.classic = None if cm is None else {"session_timeout_ms": cm["session_timeout_ms"], "protocols": [
            (p["name"], bytes(p["metadata"])) for p in cm["supported_protocols"]]}
        cg.members[mid] = m
    elif rtype == cr.CURRENT_ASSIGNMENT:
        m = cg.members.get(k["member_id"])
        if m is None:
            if v is None:
                return
            m = cg.members[k["member_id"]] = ConsumerMember(k["member_id"])
        if v is None:
            m.epoch = m.previous_epoch = m.state = 0
            m.assigned, m.pending_revocation, m.epochs = set(), set(), {}
            return
        m.epoch, m.previous_epoch, m.state = v["member_epoch"], v["previous_member_epoch"], v["state"]
        m.assigned = from_wire(v["assigned_partitions"])
        m.pending_revocation = from_wire(v["partitions_pending_revocation"])
        m.epochs = {**_epochs(v["assigned_partitions"], m.epoch), **_epochs(v["partitions_pending_revocation"], m.epoch)}
    # PartitionMetadata (no longer written by Kafka) and RegularExpression: recomputed from the topics
