"""Consumer-group administration: list, describe, committed offsets, reset, delete.

What `pylog groups` (and Kafka's kafka-consumer-groups) needs: ListGroups,
ConsumerGroupDescribe (KIP-848 groups) or DescribeGroups, and OffsetFetch at the group's coordinator, ListOffsets for log
start/end offsets and timestamps, OffsetCommit as a "simple" commit (no
member, generation -1, accepted only while the group is empty) to reset
positions, DeleteGroups.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from pylog.core.client.admin import AdminBase
from pylog.core.client.admin import raise_for as _check
from pylog.core.client.consumer import EARLIEST, LATEST, TopicPartition, list_offsets  # noqa: F401 - re-exported
from pylog.core.client.subscription import decode_assignment
from pylog.core.errors import ErrorCode


@dataclass
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: list = field(default_factory=list)  # [TopicPartition]
    # KIP-848 consumer groups only (ConsumerGroupDescribe)
    member_epoch: int | None = None
    target_assignment: list | None = None  # [TopicPartition]
    subscribed_topic_names: list | None = None
    subscribed_topic_regex: str | None = None
    rack: str | None = None


@dataclass
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: list = field(default_factory=list)
    coordinator: tuple | None = None  # (node_id, host, port)
    type: str = "classic"  # or "consumer" (KIP-848)
    group_epoch: int | None = None
    assignment_epoch: int | None = None  # the epoch of the target assignment


class GroupAdmin(AdminBase):
    """Synchronous facade; one loop thread and one NetworkClient."""

    _thread_name = "pylog-group-admin"

    # ---------------------------------------------------------------- coordinator
    async def _coordinator(self, group: str):
        resp = await self.client.request_any("FindCoordinator", {
            "key": group, "key_type": 0, "coordinator_keys": [group]})
        e = (resp.get("coordinators") or [resp])[0]
        _check(e.get("error_code", 0), f"FindCoordinator for group {group}")
        if e["node_id"] not in self.client.metadata.brokers:
            await self.client.refresh_metadata()
        return e["node_id"], e["host"], e["port"]

    async def _request_coordinator(self, group: str, api: str, body: dict) -> dict:
        node, _, _ = await self._coordinator(group)
        return await self.client.request(node, api, body)

    # ---------------------------------------------------------------- queries
    def list_groups(self) -> list[dict]:
        async def go():
            out = {}
            md = self.client.metadata
            nodes = list(md.brokers) or [None]
            for n in nodes:
                resp = await (self.client.request(n, "ListGroups", {}) if n is not None
                              else self.client.request_any("ListGroups", {}))
                _check(resp.get("error_code", 0), "ListGroups")
                for g in resp.get("groups", []):
                    out[g["group_id"]] = {"group_id": g["group_id"], "protocol_type": g.get("protocol_type") or "",
                                          "state": g.get("group_state") or "",
                                          "type": (g.get("group_type") or "").lower() or None}
            return sorted(out.values(), key=lambda g: g["group_id"])
        return self._run(go())

    def describe_group(self, group: str) -> GroupDescription:
        """A group as its coordinator describes it: ConsumerGroupDescribe for a KIP-848 group,
        DescribeGroups otherwise (Kafka's admin client asks in the same order)."""
        async def go():
            coord = await self._coordinator(group)
            conn = await self.client.connection(coord[0])
            if conn.supports("ConsumerGroupDescribe"):
                desc = await self._describe_consumer_group(group, coord)
                if desc is not None:
                    return desc
            resp = await self.client.request(coord[0], "DescribeGroups", {
                "groups": [group], "include_authorized_operations": False})
            g = resp["groups"][0]
            code = g.get("error_code", 0)
            if code == ErrorCode.GROUP_ID_NOT_FOUND:  # (v6+) same as Kafka's Dead answer
                return GroupDescription(group, "Dead", "", "", [], coord)
            _check(code, f"DescribeGroups {group}")
            members = []
            for m in g.get("members", []):
                tps = []
                if g.get("protocol_type") == "consumer" and m.get("member_assignment"):
                    try:
                        tps = [TopicPartition(t, p) for t, p in decode_assignment(m["member_assignment"]).partitions]
                    except Exception:  # noqa: BLE001 - not the consumer protocol after all
                        tps = []
                members.append(MemberDescription(m["member_id"], m.get("group_instance_id"), m.get("client_id", ""),
                                                 m.get("client_host", ""), sorted(tps)))
            return GroupDescription(group, g.get("group_state") or "", g.get("protocol_type") or "",
                                    g.get("protocol_data") or "", members, coord)
        return self._run(go())

    async def _describe_consumer_group(self, group: str, coord) -> GroupDescription | None:
        resp = await self.client.request(coord[0], "ConsumerGroupDescribe", {
            "group_ids": [group], "include_authorized_operations": False})
        g = resp["groups"][0]
        code = g.get("error_code", 0)
        if code == ErrorCode.GROUP_ID_NOT_FOUND:
            return None  # no group, or a classic one: DescribeGroups answers for both
        _check(code, f"ConsumerGroupDescribe {group}", g.get("error_message"))

        def tps(a):
            return sorted(TopicPartition(t["topic_name"], p) for t in (a or {}).get("topic_partitions") or []
                          for p in t["partitions"])
        members = [MemberDescription(
            m["member_id"], m.get("instance_id"), m.get("client_id", ""), m.get("client_host", ""),
            tps(m.get("assignment")), m.get("member_epoch"), tps(m.get("target_assignment")),
            list(m.get("subscribed_topic_names") or []), m.get("subscribed_topic_regex") or None, m.get("rack_id"))
            for m in g.get("members", [])]
        return GroupDescription(group, g.get("group_state") or "", "consumer", g.get("assignor_name") or "",
                                members, coord, "consumer", g.get("group_epoch"), g.get("assignment_epoch"))

    def committed(self, group: str) -> dict:
        """{TopicPartition: (offset, metadata)} of every partition the group committed."""
        async def go():
            body = {"group_id": group, "topics": None, "require_stable": False,
                    "groups": [{"group_id": group, "member_id": None, "member_epoch": -1, "topics": None}]}
            resp = await self._request_coordinator(group, "OffsetFetch", body)
            g = (resp.get("groups") or [resp])[0]
            _check(g.get("error_code", 0), f"OffsetFetch {group}")
            out = {}
            for t in g.get("topics", []):
                for p in t.get("partitions", []):
                    _check(p.get("error_code", 0), f"OffsetFetch {group} {t['name']}-{p['partition_index']}")
                    if p.get("committed_offset", -1) >= 0:
                        out[TopicPartition(t["name"], p["partition_index"])] = (p["committed_offset"],
                                                                                p.get("metadata") or "")
            return out
        return self._run(go())

    def list_offsets(self, requests: dict) -> dict:
        """{TopicPartition: timestamp (EARLIEST, LATEST or ms)} -> {TopicPartition: offset (-1: none)}."""
        async def go():
            await self.client.refresh_metadata({tp.topic for tp in requests})  # current leaders
            found = await list_offsets(self.client, requests, strict=True)
            return {tp: r.offset for tp, r in found.items()}
        return self._run(go())

    def partitions(self, topic: str) -> list[int]:
        async def go():
            md = await self.client.refresh_metadata([topic])
            t = md.topics.get(topic)
            if t is None or t.error_code:
                _check(t.error_code if t is not None else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {topic}")
            return sorted(t.partitions)
        return self._run(go())

    # ---------------------------------------------------------------- changes
    def alter_offsets(self, group: str, offsets: dict) -> None:
        """Simple commit of {TopicPartition: offset}; the group must have no members."""
        async def go():
            topics: dict = {}
            for tp, off in offsets.items():
                topics.setdefault(tp.topic, []).append({
                    "partition_index": tp.partition, "committed_offset": off, "committed_leader_epoch": -1,
                    "committed_metadata": "", "commit_timestamp": -1})
            body = {"group_id": group, "generation_id_or_member_epoch": -1, "generation_id": -1, "member_id": "",
                    "group_instance_id": None, "retention_time_ms": -1,
                    "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
            resp = await self._request_coordinator(group, "OffsetCommit", body)
            for t in resp.get("topics", []):
                for p in t.get("partitions", []):
                    _check(p.get("error_code", 0), f"OffsetCommit {group} {t['name']}-{p['partition_index']}")
        return self._run(go())

    def delete_groups(self, groups: list[str]) -> dict:
        """{group: error code} (0 = deleted)."""
        async def go():
            out = {}
            for g in groups:
                resp = await self._request_coordinator(g, "DeleteGroups", {"groups_names": [g]})
                for r in resp.get("results", []):
                    out[r["group_id"]] = r.get("error_code", 0)
            return out
        return self._run(go())
