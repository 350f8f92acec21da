"""Share-group administration (KIP-932): what `pylog share-groups` and kafka-share-groups.sh need.

ListGroups filtered to type "share", ShareGroupDescribe and the share-group
offsets APIs (DescribeShareGroupOffsets, AlterShareGroupOffsets,
DeleteShareGroupOffsets) at the group's coordinator, DeleteGroups.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pylog.core.client.admin import raise_for as _check
from pylog.core.client.consumer import TopicPartition
from pylog.core.client.group_admin import GroupAdmin


@dataclass
class ShareMemberDescription:
    member_id: str
    client_id: str
    client_host: str
    member_epoch: int
    rack: str | None
    subscribed_topic_names: list
    assignment: list = field(default_factory=list)  # [TopicPartition]


@dataclass
class ShareGroupDescription:
    group_id: str
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: list = field(default_factory=list)
    coordinator: tuple | None = None


class ShareAdmin(GroupAdmin):
    """Synchronous facade over one NetworkClient (see GroupAdmin)."""

    _thread_name = "pylog-share-admin"

    def list_share_groups(self) -> list[dict]:
        """[{group_id, state}] of every share group."""
        async def go():
            resp = await self.client.request_any("ListGroups", {"states_filter": [], "types_filter": ["share"]})
            _check(resp.get("error_code", 0), "ListGroups")
            return sorted(({"group_id": g["group_id"], "state": g.get("group_state") or ""}
                           for g in resp.get("groups", []) if (g.get("group_type") or "share").lower() == "share"),
                          key=lambda g: g["group_id"])
        return self._run(go())

    def describe_share_group(self, group: str) -> ShareGroupDescription:
        """State, epochs and members of a share group (GroupIdNotFound if there is none)."""
        async def go():
            coord = await self._coordinator(group)
            resp = await self.client.request(coord[0], "ShareGroupDescribe",
                                             {"group_ids": [group], "include_authorized_operations": False})
            g = resp["groups"][0]
            _check(g["error_code"], f"ShareGroupDescribe {group}", g.get("error_message"))
            members = [ShareMemberDescription(
                m["member_id"], m["client_id"], m["client_host"], m["member_epoch"], m.get("rack_id"),
                list(m["subscribed_topic_names"]),
                [TopicPartition(t["topic_name"], p) for t in m["assignment"]["topic_partitions"]
                 for p in t["partitions"]]) for m in g["members"]]
            return ShareGroupDescription(group, g["group_state"], g["group_epoch"], g["assignment_epoch"],
                                         g["assignor_name"], members, coord)
        return self._run(go())

    def share_offsets(self, group: str) -> dict:
        """{TopicPartition: (start offset, lag)} of every share-partition the group has state for."""
        async def go():
            resp = await self._request_coordinator(group, "DescribeShareGroupOffsets",
                                                   {"groups": [{"group_id": group, "topics": None}]})
            g = resp["groups"][0]
            _check(g["error_code"], f"DescribeShareGroupOffsets {group}", g.get("error_message"))
            out = {}
            for t in g["topics"]:
                for p in t["partitions"]:
                    _check(p["error_code"], f"DescribeShareGroupOffsets {t['topic_name']}-{p['partition_index']}")
                    out[TopicPartition(t["topic_name"], p["partition_index"])] = (p["start_offset"], p.get("lag", -1))
            return out
        return self._run(go())

    def alter_share_offsets(self, group: str, offsets: dict) -> None:
        """Set start offsets {TopicPartition: offset} of an empty share group."""
        by_topic: dict = {}
        for tp, off in offsets.items():
            by_topic.setdefault(tp.topic, []).append({"partition_index": tp.partition, "start_offset": off})

        async def go():
            resp = await self._request_coordinator(group, "AlterShareGroupOffsets", {
                "group_id": group, "topics": [{"topic_name": t, "partitions": ps} for t, ps in by_topic.items()]})
            _check(resp["error_code"], f"AlterShareGroupOffsets {group}", resp.get("error_message"))
            for t in resp["responses"]:
                for p in t["partitions"]:
                    _check(p["error_code"], f"AlterShareGroupOffsets {t['topic_name']}-{p['partition_index']}",
                           p.get("error_message"))
        self._run(go())

    def delete_share_offsets(self, group: str, topics: list[str]) -> dict:
        """Forget an empty share group's state of whole topics: {topic: error code}."""
        async def go():
            resp = await self._request_coordinator(group, "DeleteShareGroupOffsets", {
                "group_id": group, "topics": [{"topic_name": t} for t in topics]})
            _check(resp["error_code"], f"DeleteShareGroupOffsets {group}", resp.get("error_message"))
            return {t["topic_name"]: t["error_code"] for t in resp["responses"]}
        return self._run(go())
