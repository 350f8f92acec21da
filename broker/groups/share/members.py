"""A share group's membership in `__consumer_offsets`, as Kafka's group coordinator keeps it.

Records (layouts in pylog.core.protocol.share_group_records), written when they change, before
the heartbeat that changed them is answered: the group epoch (ShareGroupMetadata), each member's
subscription (ShareGroupMemberMetadata), the target assignment (TargetAssignmentMetadata and one
TargetAssignmentMember per member), each member's epoch and partitions
(CurrentMemberAssignment) and the share-partitions initialized for the group
(StatePartitionMetadata). A member leaving gets tombstones; a deleted group loses every record.
At start-up the group coordinator's replay hands the records over and the groups come back with
their epochs and members, whose session timeouts start again (as on Kafka).
"""
from __future__ import annotations

import hashlib
import logging
import time

from pylog.broker.groups.share.group import ShareGroup, ShareMember
from pylog.core.protocol import share_group_records as sr

log = logging.getLogger("pylog.broker.share")
STABLE_MEMBER = 0  # MemberState.STABLE


def _tps(a: dict) -> list:
    return [{"topic_id": t, "partitions": list(ps)} for t, ps in sorted(a.items(), key=str)]


def _from(tps) -> dict:
    return {t["topic_id"]: sorted(t["partitions"]) for t in tps}


def metadata_hash(topology: tuple) -> int:
    """A stable hash of the subscribed topics' (name, id, partitions): a change while the broker
    was down bumps the group epoch at the next heartbeat."""
    return int.from_bytes(hashlib.sha256(repr(topology).encode()).digest()[:8], "big") >> 1


def _gk(gid: str) -> dict:
    return {"group_id": gid}


def _mk(gid: str, mid: str) -> dict:
    return {"group_id": gid, "member_id": mid}


class ShareGroupRecords:
    """Builds, writes and replays the share-group records of `__consumer_offsets`."""

    def __init__(self, coordinator):
        self.sc = coordinator
        self.partitions = coordinator.partitions
        self.group_coordinator = coordinator.group_coordinator

    def write(self, gid: str, records: list) -> None:
        """Append [(key, value)] to the group's `__consumer_offsets` partition (logged on failure:
        the group stays as it is in memory)."""
        if not records:
            return
        code = self.group_coordinator.append_records(gid, records)
        if code:
            log.warning("share group %s: membership records not written (error %d)", gid, code)

    # ---- builders ------------------------------------------------------------------
    def member(self, gid: str, m: ShareMember) -> tuple:
        return (sr.encode_key(sr.MEMBER_METADATA, _mk(gid, m.member_id)), sr.encode_value(sr.MEMBER_METADATA, {
            "rack_id": m.rack_id, "client_id": m.client_id, "client_host": m.client_host,
            "subscribed_topic_names": list(m.subscribed)}))

    def epoch(self, g: ShareGroup) -> tuple:
        return (sr.encode_key(sr.GROUP_METADATA, _gk(g.group_id)),
                sr.encode_value(sr.GROUP_METADATA, {"epoch": g.epoch, "metadata_hash": metadata_hash(g.topology)}))

    def target(self, g: ShareGroup, changed) -> list:
        """The target assignment records of the members in `changed` (those whose part is new or
        differs from the last one, as Kafka's TargetAssignmentBuilder writes), then its metadata."""
        out = [(sr.encode_key(sr.TARGET_MEMBER, _mk(g.group_id, mid)),
                sr.encode_value(sr.TARGET_MEMBER, {"topic_partitions": _tps(g.target[mid])}))
               for mid in changed if mid in g.target]
        out.append((sr.encode_key(sr.TARGET_METADATA, _gk(g.group_id)), sr.encode_value(sr.TARGET_METADATA, {
            "assignment_epoch": g.assignment_epoch, "assignment_timestamp": g.assignment_ms or int(time.time() * 1000)})))
        return out

    def current(self, gid: str, m: ShareMember, previous: int) -> tuple:
        return (sr.encode_key(sr.CURRENT_ASSIGNMENT, _mk(gid, m.member_id)), sr.encode_value(sr.CURRENT_ASSIGNMENT, {
            "member_epoch": m.epoch, "previous_member_epoch": previous, "state": STABLE_MEMBER,
            "assigned_partitions": _tps(m.assignment)}))

    def initialized(self, g: ShareGroup) -> tuple:
        names = {info.topic_id: n for n, info in self.partitions.logs.topics.items()}
        by_topic: dict = {}
        for gid, tid, p in self.sc.parts:
            if gid == g.group_id and tid in names:
                by_topic.setdefault(tid, []).append(p)
        return (sr.encode_key(sr.STATE_PARTITION_METADATA, _gk(g.group_id)),
                sr.encode_value(sr.STATE_PARTITION_METADATA, {
                    "initializing_topics": [], "deleting_topics": [], "initialized_topics": [
                        {"topic_id": tid, "topic_name": names[tid], "partitions": sorted(ps)}
                        for tid, ps in sorted(by_topic.items(), key=str)]}))

    @staticmethod
    def member_gone(gid: str, mid: str) -> list:
        k = _mk(gid, mid)
        return [(sr.encode_key(sr.CURRENT_ASSIGNMENT, k), None), (sr.encode_key(sr.TARGET_MEMBER, k), None),
                (sr.encode_key(sr.MEMBER_METADATA, k), None)]

    def group_gone(self, g: ShareGroup) -> list:
        out = []
        for mid in set(g.members) | set(g.target):
            out += self.member_gone(g.group_id, mid)
        k = _gk(g.group_id)
        return out + [(sr.encode_key(sr.TARGET_METADATA, k), None),
                      (sr.encode_key(sr.STATE_PARTITION_METADATA, k), None), (sr.encode_key(sr.GROUP_METADATA, k), None)]

    # ---- start-up ---------------------------------------------------------------------
    def replay(self, records: list) -> dict[str, ShareGroup]:
        """Share groups from the records the group coordinator met at load (latest per key wins)."""
        groups: dict[str, ShareGroup] = {}
        for key, value in records:
            try:
                self._apply(groups, key, value)
            except Exception as e:  # noqa: BLE001 - one bad record must not stop the load
                log.warning("skipping unreadable share-group record: %s", e)
        now = time.monotonic()
        for g in groups.values():
            for m in g.members.values():
                m.last_seen = now
                m.sent_assignment = m.assignment
        return groups

    @staticmethod
    def _apply(groups: dict, key, value) -> None:
        rtype, k, v = sr.decode(key, value)
        gid = k["group_id"]
        g = groups.get(gid)
        if g is None:
            if v is None:
                return
            g = groups[gid] = ShareGroup(gid)
        if rtype == sr.GROUP_METADATA:
            if v is None:
                groups.pop(gid, None)
            else:
                g.epoch, g.metadata_hash = v["epoch"], v["metadata_hash"]
        elif rtype == sr.TARGET_METADATA:
            g.assignment_epoch = v["assignment_epoch"] if v is not None else 0
            g.assignment_ms = v["assignment_timestamp"] if v is not None else 0
        elif rtype == sr.TARGET_MEMBER:
            if v is None:
                g.target.pop(k["member_id"], None)
            else:
                g.target[k["member_id"]] = _from(v["topic_partitions"])
        elif rtype in (sr.MEMBER_METADATA, sr.CURRENT_ASSIGNMENT):
            mid = k["member_id"]
            if v is None:
                g.members.pop(mid, None)
                return
            m = g.members.get(mid) or ShareMember(mid, "", "", None, [])
            g.members[mid] = m
            if rtype == sr.MEMBER_METADATA:
                m.rack_id, m.client_id, m.client_host = v["rack_id"], v["client_id"], v["client_host"]
                m.subscribed = sorted(v["subscribed_topic_names"])
            else:
                m.epoch, m.assignment = v["member_epoch"], _from(v["assigned_partitions"])
