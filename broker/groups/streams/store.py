"""A streams group's records in `__consumer_offsets`: built on change, replayed at start-up.

Kafka's record types (layouts in pylog.core.protocol.streams_group_records): the group
epoch (StreamsGroupMetadata), the topology (StreamsGroupTopology), each member's metadata
(StreamsGroupMemberMetadata), the target assignment (TargetAssignmentMetadata + one
TargetAssignmentMember per member) and each member's reconciliation state
(CurrentMemberAssignment). The latest record per key wins; a tombstone removes.
"""
from __future__ import annotations

from pylog.broker.groups.state import Group
from pylog.broker.groups.streams.group import (
    ROLES, StreamsGroup, StreamsMember, empty_tasks, tasks_from_wire, tasks_to_wire,
)
from pylog.core.protocol import streams_group_records as sr

is_streams_record = sr.is_streams_record
_WIRE = {"active": "active_tasks", "standby": "standby_tasks", "warmup": "warmup_tasks"}


def _gk(group_id: str) -> dict:
    return {"group_id": group_id}


def _mk(group_id: str, member_id: str) -> dict:
    return {"group_id": group_id, "member_id": member_id}


def group_epoch_record(sg: StreamsGroup) -> tuple:
    """StreamsGroupMetadata: the group epoch, the topics' hash, the assignment configs."""
    return (sr.encode_key(sr.GROUP_METADATA, _gk(sg.group_id)), sr.encode_value(sr.GROUP_METADATA, {
        "epoch": sg.epoch, "metadata_hash": sg.metadata_hash,
        "validated_topology_epoch": sg.validated_topology_epoch,
        "last_assignment_configs": [{"key": k, "value": v} for k, v in sorted(sg.last_assignment_configs.items())],
        "stored_description_topology_epoch": sg.description_epoch}))


def topology_record(sg: StreamsGroup) -> tuple:
    """StreamsGroupTopology: the topology the group was initialized with."""
    return (sr.encode_key(sr.TOPOLOGY, _gk(sg.group_id)), sr.encode_value(sr.TOPOLOGY, sg.topology))


def target_epoch_record(sg: StreamsGroup, timestamp_ms: int) -> tuple:
    """StreamsGroupTargetAssignmentMetadata: the assignment epoch."""
    return (sr.encode_key(sr.TARGET_METADATA, _gk(sg.group_id)), sr.encode_value(sr.TARGET_METADATA, {
        "assignment_epoch": sg.assignment_epoch, "assignment_timestamp": timestamp_ms}))


def target_member_record(group_id: str, member_id: str, tasks: dict) -> tuple:
    """StreamsGroupTargetAssignmentMember: one member's target tasks."""
    return (sr.encode_key(sr.TARGET_MEMBER, _mk(group_id, member_id)), sr.encode_value(sr.TARGET_MEMBER, {
        _WIRE[r]: tasks_to_wire(tasks[r]) for r in ROLES}))


def member_record(group_id: str, m: StreamsMember) -> tuple:
    """StreamsGroupMemberMetadata: who the member is."""
    ep = None if m.user_endpoint is None else {"host": m.user_endpoint[0], "port": m.user_endpoint[1]}
    return (sr.encode_key(sr.MEMBER_METADATA, _mk(group_id, m.member_id)), sr.encode_value(sr.MEMBER_METADATA, {
        "instance_id": m.instance_id, "rack_id": m.rack_id, "client_id": m.client_id,
        "client_host": m.client_host, "rebalance_timeout_ms": m.rebalance_timeout_ms,
        "topology_epoch": m.topology_epoch, "process_id": m.process_id, "user_endpoint": ep,
        "client_tags": [{"key": k, "value": v} for k, v in sorted(m.client_tags.items())]}))


def _with_epochs(tasks, epoch: int) -> list:
    return [{**t, "assignment_epochs": [epoch] * len(t["partitions"])} for t in tasks_to_wire(tasks)]


def current_assignment_record(group_id: str, m: StreamsMember) -> tuple:
    """StreamsGroupCurrentMemberAssignment: epochs, state, owned and revoking tasks."""
    value = {"member_epoch": m.epoch, "previous_member_epoch": m.previous_epoch, "state": m.state}
    for r in ROLES:
        value[_WIRE[r]] = _with_epochs(m.assigned[r], m.epoch)
        value[_WIRE[r] + "_pending_revocation"] = _with_epochs(m.pending_revocation[r], m.epoch)
    return (sr.encode_key(sr.CURRENT_ASSIGNMENT, _mk(group_id, m.member_id)),
            sr.encode_value(sr.CURRENT_ASSIGNMENT, value))


def member_tombstones(group_id: str, member_id: str) -> list:
    """A member leaves: its current assignment, target and metadata go (Kafka's order)."""
    k = _mk(group_id, member_id)
    return [(sr.encode_key(sr.CURRENT_ASSIGNMENT, k), None), (sr.encode_key(sr.TARGET_MEMBER, k), None),
            (sr.encode_key(sr.MEMBER_METADATA, k), None)]


def group_tombstones(sg: StreamsGroup) -> list:
    """The whole group goes: every member's records, then the group's own."""
    out = []
    for mid in list(sg.members) + [x for x in sg.target if x not in sg.members]:
        out.extend(member_tombstones(sg.group_id, mid))
    k = _gk(sg.group_id)
    out += [(sr.encode_key(sr.TARGET_METADATA, k), None), (sr.encode_key(sr.TOPOLOGY, k), None),
            (sr.encode_key(sr.GROUP_METADATA, k), None)]
    return out


# ---------------------------------------------------------------- start-up
def _member_value(m: StreamsMember, v: dict) -> None:
    m.instance_id, m.rack_id, m.client_id, m.client_host = v["instance_id"], v["rack_id"], v["client_id"], \
        v["client_host"]
    m.rebalance_timeout_ms, m.topology_epoch, m.process_id = v["rebalance_timeout_ms"], v["topology_epoch"], \
        v["process_id"]
    ep = v["user_endpoint"]
    m.user_endpoint = None if ep is None else (ep["host"], ep["port"])
    m.client_tags = {kv["key"]: kv["value"] for kv in v["client_tags"]}


def _assignment_value(m: StreamsMember, v: dict | None) -> None:
    if v is None:
        m.epoch = m.previous_epoch = m.state = 0
        m.assigned, m.pending_revocation = empty_tasks(), empty_tasks()
        return
    m.epoch, m.previous_epoch, m.state = v["member_epoch"], v["previous_member_epoch"], v["state"]
    m.assigned = {r: tasks_from_wire(v[_WIRE[r]]) for r in ROLES}
    m.pending_revocation = {r: tasks_from_wire(v[_WIRE[r] + "_pending_revocation"]) for r in ROLES}


def apply(groups: dict, key, value) -> None:
    """Replay one streams-group record into `groups` (raises MalformedDataError)."""
    rtype, k, v = sr.decode(key, value)
    gid = k["group_id"]
    g = groups.get(gid)
    sg = getattr(g, "streams", None)
    if v is None and sg is None:
        return
    if g is None:
        g = groups[gid] = Group(gid)
    if sg is None:
        sg = g.streams = StreamsGroup(gid)
    if rtype == sr.GROUP_METADATA:
        if v is None:
            g.streams = None
            if not g.offsets and not g.members:
                groups.pop(gid, None)
            return
        sg.epoch, sg.metadata_hash = v["epoch"], v["metadata_hash"]
        sg.validated_topology_epoch = v["validated_topology_epoch"]
        sg.last_assignment_configs = {kv["key"]: kv["value"] for kv in v["last_assignment_configs"] or ()}
        sg.description_epoch = v["stored_description_topology_epoch"]
    elif rtype == sr.TOPOLOGY:
        sg.topology = v
    elif rtype == sr.TARGET_METADATA:
        sg.assignment_epoch = v["assignment_epoch"] if v is not None else 0
    elif rtype == sr.TARGET_MEMBER:
        if v is None:
            sg.target.pop(k["member_id"], None)
        else:
            sg.target[k["member_id"]] = {r: tasks_from_wire(v[_WIRE[r]]) for r in ROLES}
    elif rtype == sr.MEMBER_METADATA:
        if v is None:
            sg.members.pop(k["member_id"], None)
            return
        m = sg.members.get(k["member_id"]) or StreamsMember(k["member_id"])
        _member_value(m, v)
        sg.members[m.member_id] = m
    elif rtype == sr.CURRENT_ASSIGNMENT:
        m = sg.members.get(k["member_id"])
        if m is None:
            if v is None:
                return
            m = sg.members[k["member_id"]] = StreamsMember(k["member_id"])
        _assignment_value(m, v)
