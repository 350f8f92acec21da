"""The offsets half of a group member (OffsetCommit, OffsetFetch, async commits), mixed into
group.GroupMembership, and the errors both halves share.

A KIP-848 member (group_consumer) overrides _commit_member, _fetch_member and _commit_stale:
its commits carry the member epoch and are retried when it is stale."""
from __future__ import annotations

import asyncio
import logging
import time

from pylog.core.client.structs import TopicPartition
from pylog.core.errors import ErrorCode, PylogError, error_for_code, error_name

log = logging.getLogger("pylog.core.client.group")  # one logger for the group member

COORDINATOR_ERRORS = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR, ErrorCode.REQUEST_TIMED_OUT}
_REJOIN_ERRORS = {ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.REBALANCE_IN_PROGRESS}


class CommitFailedError(PylogError):
    """The group rebalanced and the partitions now belong to another member (Kafka's
    CommitFailedException): the commit cannot be retried."""


class CoordinatorGone(Exception):
    pass



class GroupOffsets:
    """Committed offsets of the group a GroupMembership belongs to (the attributes it reads
    are GroupMembership's: group_id, generation, member_id, api_timeout_s, backoff_s, ...)."""

    # ================================================================ offsets
    async def commit(self, offsets: dict) -> None:
        """Commit {TopicPartition: (offset, leader_epoch, metadata)}; retries retriable errors."""
        deadline = time.monotonic() + self.api_timeout_s
        topics: dict[str, list] = {}
        for tp, v in offsets.items():
            tp = TopicPartition(*tp)
            off, epoch, md = (tuple(v) + (-1, ""))[:3] if isinstance(v, (tuple, list)) else (v, -1, "")
            topics.setdefault(tp.topic, []).append({
                "partition_index": tp.partition, "committed_offset": off,
                "committed_leader_epoch": -1 if epoch is None else epoch, "committed_metadata": md or "",
                "commit_timestamp": -1})
        if not topics:
            return
        while True:
            gen, mid = self._commit_member()
            body = {"group_id": self.group_id, "generation_id_or_member_epoch": gen, "generation_id": gen,
                    "member_id": mid, "group_instance_id": self.instance_id,
                    "retention_time_ms": -1,
                    "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
            code = 0
            try:
                resp = await self._request("OffsetCommit", body)
                for t in resp.get("topics", []):
                    for p in t.get("partitions", []):
                        code = code or p.get("error_code", 0)
            except CoordinatorGone:
                code = ErrorCode.COORDINATOR_NOT_AVAILABLE
            if not code:
                return
            name = error_name(code)
            if self._commit_stale(code) and time.monotonic() < deadline:
                await asyncio.sleep(self.backoff_s)
                continue
            if code in _REJOIN_ERRORS:
                if code != ErrorCode.REBALANCE_IN_PROGRESS:
                    self.generation = -1
                    if code == ErrorCode.UNKNOWN_MEMBER_ID:
                        self.member_id = ""
                self.need_rejoin = True
                raise CommitFailedError(
                    f"commit failed for group {self.group_id} ({name}): the group has rebalanced and the "
                    "partitions may be assigned to another member; poll() more often or raise "
                    "max.poll.interval.ms")
            if code in COORDINATOR_ERRORS:
                self._coordinator_dead(name)
            elif code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                raise error_for_code(code, f"OffsetCommit for group {self.group_id}: {name}")
            if time.monotonic() >= deadline:
                raise error_for_code(code, f"OffsetCommit for group {self.group_id} kept failing: {name}")
            await asyncio.sleep(self.backoff_s)

    def _commit_member(self) -> tuple[int, str]:
        """(generation or member epoch, member id) a commit carries; -1 and "" outside the group."""
        gen = self.generation if self.generation >= 0 else -1
        return gen, (self.member_id if gen >= 0 else "")

    def _fetch_member(self) -> tuple[int, str | None]:
        """(member epoch, member id) an OffsetFetch v9+ carries: none for the classic protocol."""
        return -1, None

    def _commit_stale(self, code: int) -> bool:
        """True when a failed commit should be retried with the member's newer epoch (KIP-848)."""
        return False

    def commit_async(self, offsets: dict | None = None, callback=None) -> None:
        """Commit without waiting; `callback(offsets, error_or_None)` runs on the client's loop
        thread when the commit is done. Callable from the application thread too."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # the application thread: hop onto the consumer's loop
            self.consumer.loop.call_soon(self.commit_async, offsets, callback)
            return
        offsets = self.positions() if offsets is None else offsets
        if not offsets:
            return

        async def go():
            err = None
            try:
                await self.commit(offsets)
            except Exception as e:  # noqa: BLE001 - reported to the callback / log
                err = e
                log.warning("group %s: async commit failed: %s", self.group_id, e)
            if callback is not None:
                callback(offsets, err)

        self._commit_task = asyncio.get_running_loop().create_task(go())

    async def fetch_committed(self, partitions) -> dict:
        tps = [TopicPartition(*tp) for tp in partitions]
        if not tps:
            return {}
        topics: dict[str, list] = {}
        for tp in tps:
            topics.setdefault(tp.topic, []).append(tp.partition)
        tlist = [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]
        deadline = time.monotonic() + self.api_timeout_s
        while True:
            epoch, mid = self._fetch_member()
            body = {"group_id": self.group_id, "topics": tlist, "require_stable": True,
                    "groups": [{"group_id": self.group_id, "member_id": mid, "member_epoch": epoch,
                                "topics": tlist}]}
            try:
                resp = await self._request("OffsetFetch", body)
                g = (resp.get("groups") or [resp])[0]
                code = g.get("error_code", 0)
                out = {}
                for t in g.get("topics", []):
                    for p in t.get("partitions", []):
                        code = code or p.get("error_code", 0)
                        off = p.get("committed_offset", -1)
                        out[TopicPartition(t["name"], p["partition_index"])] = (
                            (off, p.get("committed_leader_epoch", -1), p.get("metadata") or "") if off >= 0 else None)
            except CoordinatorGone:
                code = ErrorCode.COORDINATOR_NOT_AVAILABLE
            if not code:
                return out
            name = error_name(code)
            if self._commit_stale(code) and time.monotonic() < deadline:
                await asyncio.sleep(self.backoff_s)
                continue
            if code in (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION):
                self.need_rejoin = True
                raise error_for_code(code, f"OffsetFetch for group {self.group_id}: {name}")
            if code in COORDINATOR_ERRORS:
                self._coordinator_dead(name)
            elif code not in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.UNSTABLE_OFFSET_COMMIT):  # retry
                raise error_for_code(code, f"OffsetFetch for group {self.group_id}: {name}")
            if time.monotonic() >= deadline:
                raise error_for_code(code, f"OffsetFetch for group {self.group_id} kept failing: {name}")
            await asyncio.sleep(self.backoff_s)
