"""Streams-group administration (KIP-1071): list, describe, offsets, reset, delete.

What `pylog streams-groups` (and Kafka's kafka-streams-groups.sh) needs beyond the
consumer-group calls of GroupAdmin: ListGroups filtered on the streams type,
StreamsGroupDescribe at the group's coordinator, OffsetDelete.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pylog.core.client.admin import raise_for as _check
from pylog.core.client.group_admin import GroupAdmin


@dataclass
class StreamsMember:
    """A member of a streams group as StreamsGroupDescribe shows it; tasks as {role: [(subtopology, p)]}."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    process_id: str
    member_epoch: int
    topology_epoch: int
    is_classic: bool
    assignment: dict = field(default_factory=dict)
    target: dict = field(default_factory=dict)


@dataclass
class StreamsGroup:
    """A streams group as StreamsGroupDescribe shows it."""

    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    topology_epoch: int
    assignor: str | None
    coordinator: tuple
    members: list
    subtopologies: list  # [{subtopology_id, source_topics, ...}]


def _tasks(a) -> dict:
    return {role: sorted((t["subtopology_id"], p) for t in (a or {}).get(f"{role}_tasks") or [] for p in t["partitions"])
            for role in ("active", "standby", "warmup")}


class StreamsAdmin(GroupAdmin):
    """Synchronous facade; one loop thread and one NetworkClient."""

    _thread_name = "pylog-streams-admin"

    def list_streams_groups(self) -> list[dict]:
        """[{group_id, state}] of the streams groups (ListGroups with the streams type filter)."""
        async def go():
            resp = await self.client.request_any("ListGroups", {"states_filter": [], "types_filter": ["streams"]})
            _check(resp.get("error_code", 0), "ListGroups")
            return sorted(({"group_id": g["group_id"], "state": g.get("group_state") or ""}
                           for g in resp.get("groups", [])), key=lambda g: g["group_id"])
        return self._run(go())

    def describe_streams_group(self, group: str) -> StreamsGroup:
        """StreamsGroupDescribe at the group's coordinator (raises GROUP_ID_NOT_FOUND's error)."""
        async def go():
            coord = await self._coordinator(group)
            resp = await self.client.request(coord[0], "StreamsGroupDescribe", {
                "group_ids": [group], "include_authorized_operations": False})
            g = resp["groups"][0]
            _check(g.get("error_code", 0), f"StreamsGroupDescribe {group}", g.get("error_message"))
            topo = g.get("topology") or {}
            members = [StreamsMember(m["member_id"], m.get("instance_id"), m.get("client_id", ""),
                                     m.get("client_host", ""), m.get("process_id", ""), m["member_epoch"],
                                     m.get("topology_epoch", 0), bool(m.get("is_classic")),
                                     _tasks(m.get("assignment")), _tasks(m.get("target_assignment")))
                       for m in g.get("members", [])]
            return StreamsGroup(group, g.get("group_state") or "", g["group_epoch"], g["assignment_epoch"],
                                topo.get("epoch", -1), g.get("assignor_name"), coord,
                                sorted(members, key=lambda m: m.member_id), list(topo.get("subtopologies") or []))
        return self._run(go())

    def delete_offsets(self, group: str, partitions: list) -> tuple[int, dict]:
        """OffsetDelete of [TopicPartition]: (group error code, {TopicPartition: error code})."""
        async def go():
            topics: dict = {}
            for tp in partitions:
                topics.setdefault(tp.topic, []).append({"partition_index": tp.partition})
            resp = await self._request_coordinator(group, "OffsetDelete", {
                "group_id": group, "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]})
            out = {}
            for t in resp.get("topics", []):
                for p in t.get("partitions", []):
                    out[(t["name"], p["partition_index"])] = p.get("error_code", 0)
            return resp.get("error_code", 0), out
        return self._run(go())
