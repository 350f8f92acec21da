"""The bodies a streams group answers with: heartbeat errors and tasks, the interactive-query
endpoint map, StreamsGroupDescribe's group and member entries."""
from __future__ import annotations

from pylog.broker.groups.streams.group import ROLES, StreamsGroup, StreamsMember, empty_tasks, tasks_to_wire
from pylog.core.errors import ErrorCode

ASSIGNOR_NAME = "sticky"


def heartbeat_error(code: int, msg: str | None) -> dict:
    """A StreamsGroupHeartbeat answer carrying only an error."""
    return {"throttle_time_ms": 0, "error_code": code, "error_message": msg, "member_id": "", "member_epoch": 0,
            "heartbeat_interval_ms": 0, "task_offset_interval_ms": 0, "status": None,
            "endpoint_information_epoch": 0}


def tasks_answer(m: StreamsMember) -> dict:
    """The member's tasks as the heartbeat answer carries them."""
    return {f"{r}_tasks": tasks_to_wire(m.assigned[r]) for r in ROLES}


def _partitions(sg: StreamsGroup, tasks) -> list:
    """[{topic, partitions}] read by `tasks` (source and repartition-source topics of their subtopologies)."""
    by_sub = {s["subtopology_id"]: list(s["source_topics"]) + [t["name"] for t in s["repartition_source_topics"]]
              for s in (sg.topology or {"subtopologies": []})["subtopologies"]}
    out: dict = {}
    for s, p in tasks:
        for t in by_sub.get(s, ()):
            out.setdefault(t, set()).add(p)
    return [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(out.items())]


def endpoint_map(sg: StreamsGroup) -> list:
    """PartitionsByUserEndpoint: the partitions each member's endpoint serves, for interactive queries."""
    out = []
    for m in sorted(sg.members.values(), key=lambda x: x.member_id):
        if m.user_endpoint is None:
            continue
        out.append({"user_endpoint": {"host": m.user_endpoint[0], "port": m.user_endpoint[1]},
                    "active_partitions": _partitions(sg, m.assigned["active"]),
                    "standby_partitions": _partitions(sg, m.assigned["standby"] | m.assigned["warmup"])})
    return out


def describe_error(group_id: str, code: int, msg: str | None) -> dict:
    """A StreamsGroupDescribe entry carrying only an error."""
    return {"error_code": code, "error_message": msg, "group_id": group_id, "group_state": "", "group_epoch": -1,
            "assignment_epoch": -1, "topology": None, "members": []}


def _assignment(tasks: dict) -> dict:
    return {f"{r}_tasks": tasks_to_wire(tasks[r]) for r in ROLES}


def _offsets(offsets: dict) -> list:
    return [{"subtopology_id": s, "partition": p, "offset": o} for (s, p), o in sorted(offsets.items())]


def _member(sg: StreamsGroup, m: StreamsMember) -> dict:
    return {
        "member_id": m.member_id, "member_epoch": m.epoch, "instance_id": m.instance_id, "rack_id": m.rack_id,
        "client_id": m.client_id, "client_host": m.client_host, "topology_epoch": m.topology_epoch,
        "process_id": m.process_id,
        "user_endpoint": None if m.user_endpoint is None else {"host": m.user_endpoint[0],
                                                               "port": m.user_endpoint[1]},
        "client_tags": [{"key": k, "value": v} for k, v in sorted(m.client_tags.items())],
        "task_offsets": _offsets(m.task_offsets), "task_end_offsets": _offsets(m.task_end_offsets),
        "assignment": _assignment(m.assigned),
        "target_assignment": _assignment(sg.target.get(m.member_id) or empty_tasks()),
        "is_classic": m.is_classic,
    }


def describe_group(sg: StreamsGroup, include_description: bool) -> dict:
    """One StreamsGroupDescribe entry."""
    topo = None
    if sg.topology is not None:
        topo = {"epoch": sg.topology["epoch"], "subtopologies": [
            {"subtopology_id": s["subtopology_id"], "source_topics": s["source_topics"],
             "repartition_sink_topics": s["repartition_sink_topics"],
             "state_changelog_topics": s["state_changelog_topics"],
             "repartition_source_topics": s["repartition_source_topics"]}
            for s in sg.topology["subtopologies"]]}
    return {"error_code": ErrorCode.NONE, "error_message": None, "group_id": sg.group_id, "group_state": sg.state,
            "group_epoch": sg.epoch, "assignment_epoch": sg.assignment_epoch, "topology": topo,
            "members": [_member(sg, m) for m in sg.members.values()],
            "topology_description": sg.description if include_description else None,
            "topology_description_status": 1 if sg.description is not None else 0,
            "assignor_name": ASSIGNOR_NAME}
