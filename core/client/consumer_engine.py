"""The consumer's engine: it runs on the event loop thread and holds assignment, positions and
offset reset (its fetching half is fetcher.Fetcher); group membership attaches to it through
GroupHooks."""
from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time

from pylog.core.client.cluster import NetworkClient
from pylog.core.client.errors import LogTruncationError, NoOffsetForPartitionError
from pylog.core.client.fetcher import REFRESH_ERRORS, Fetcher, list_offsets
from pylog.core.client.structs import EARLIEST, LATEST, TopicPartition
from pylog.core.errors import UsageError

log = logging.getLogger("pylog.core.client.consumer")  # the consumer's one logger


class GroupHooks:
    """What a group coordinator provides to the consumer (core/client/group.py implements it).

    All coroutines run on the consumer's event loop.
    """

    async def poll(self, consumer: "ConsumerEngine") -> None:
        """Called at the start of every poll: join/sync/heartbeat bookkeeping; may call
        consumer.set_assignment()."""

    async def fetch_committed(self, partitions) -> dict:
        """{TopicPartition: OffsetAndTimestamp-like (offset, leader_epoch, metadata) or None}."""
        return {}

    async def commit(self, offsets: dict) -> None:
        """Commit {TopicPartition: (offset, leader_epoch, metadata)}."""
        raise UsageError("committing offsets needs a consumer group (group.id)")

    async def close(self, consumer: "ConsumerEngine") -> None:
        """Leave the group (commit first when auto-commit is on)."""


class ConsumerEngine(Fetcher):
    """State and protocol logic; every method runs on the event loop thread."""

    def __init__(self, config):
        self.config = config
        self.client = NetworkClient(config)
        self.client.allow_auto_create = config["allow.auto.create.topics"]
        self.group: GroupHooks | None = None
        self.assignment: list[TopicPartition] = []
        self.subscription: list[str] | None = None
        self.positions: dict[TopicPartition, list] = {}  # tp -> [offset, leader_epoch]
        self.reset_pending: dict[TopicPartition, int] = {}  # tp -> EARLIEST/LATEST/timestamp
        self.need_committed: set = set()
        self.need_validation: set = set()
        self.paused: set = set()
        self.high_watermarks: dict[TopicPartition, int] = {}
        self.log_start: dict[TopicPartition, int] = {}
        self._seen_epoch: dict[TopicPartition, int] = {}
        self._buffer: collections.deque = collections.deque()
        self._buffered: dict = {}  # tp -> completed fetches buffered
        self._next_fetch: dict = {}  # tp -> offset after the buffered data
        self._gen: dict = {}  # tp -> bumped on seek/reset: in-flight fetches become stale
        # guards _buffer/_buffered/_next_fetch/positions between the loop thread and
        # Consumer.poll's fast path, which drains buffered records on the caller's thread
        self.lock = threading.RLock()
        self._fetching: set = set()  # nodes with a fetch in flight
        self._event: asyncio.Event | None = None
        self._error: BaseException | None = None
        self._md_task = None
        self.reset_strategy = config["auto.offset.reset"]
        self.max_poll_records = config["max.poll.records"]
        self.check_crcs = config["check.crcs"]
        self.read_committed = config["isolation.level"] == "read_committed"

    # ---------------------------------------------------------------- assignment
    def set_assignment(self, tps):
        """Replace the assignment; positions of partitions that stay are kept."""
        tps = [TopicPartition(*tp) for tp in tps]
        keep = set(tps)
        for tp in list(self.positions):
            if tp not in keep:
                self.positions.pop(tp, None)
        for d in (self.reset_pending,):
            for tp in list(d):
                if tp not in keep:
                    d.pop(tp)
        self.need_committed &= keep
        self.need_validation &= keep
        self._buffer = collections.deque(c for c in self._buffer if c.tp in keep)
        for tp in list(self._buffered):
            if tp not in keep:
                self._drop_buffered(tp)
        for tp in tps:
            if tp not in self.positions and tp not in self.reset_pending:
                self.need_committed.add(tp)
        self.assignment = tps
        self.client.add_topics({tp.topic for tp in tps})

    async def subscribe_all_partitions(self, topics):
        """Without a group: assign every partition of `topics`."""
        timeout = self.config["default.api.timeout.ms"] / 1000.0
        tps = []
        for t in topics:
            info = await self.client.wait_for_topic(t, timeout)
            tps += [TopicPartition(t, p) for p in sorted(info.partitions)]
        self.set_assignment(tps)

    # ---------------------------------------------------------------- positions
    def seek(self, tp, offset, leader_epoch=-1):
        """Set the fetch position of `tp` and drop records buffered for it."""
        tp = TopicPartition(*tp)
        self.positions[tp] = [offset, leader_epoch]
        self.reset_pending.pop(tp, None)
        self.need_committed.discard(tp)
        self._drop_buffered(tp)

    def request_reset(self, tp, timestamp):
        """Resolve `tp`'s position by ListOffsets (EARLIEST, LATEST or a timestamp)."""
        tp = TopicPartition(*tp)
        self.positions.pop(tp, None)
        self.need_committed.discard(tp)
        self.reset_pending[tp] = timestamp
        self._drop_buffered(tp)

    def _drop_buffered(self, tp):
        with self.lock:
            self._drop_buffered_locked(tp)

    def _drop_buffered_locked(self, tp):
        self._gen[tp] = self._gen.get(tp, 0) + 1
        self._next_fetch.pop(tp, None)
        if tp in self._buffered:
            self._buffer = collections.deque(c for c in self._buffer if c.tp != tp)
            self._buffered.pop(tp, None)

    def _default_reset(self, tp):
        if self.reset_strategy == "earliest":
            self.reset_pending[tp] = EARLIEST
        elif self.reset_strategy == "latest":
            self.reset_pending[tp] = LATEST
        else:
            raise NoOffsetForPartitionError(f"Undefined offset with no reset policy for partitions: [{tp}]")

    async def update_positions(self):
        """Give every assigned partition a position: committed offset, reset, or auto.offset.reset."""
        if self.need_committed:
            tps = list(self.need_committed)
            committed = await self.group.fetch_committed(tps) if self.group is not None else {}
            for tp in tps:
                c = committed.get(tp)
                self.need_committed.discard(tp)
                if c is not None and c[0] >= 0:
                    self.positions[tp] = [c[0], c[1] if len(c) > 1 and c[1] is not None else -1]
                else:
                    self._default_reset(tp)
        if self.reset_pending:
            pending = dict(self.reset_pending)
            found = await self.list_offsets(pending)
            for tp, ts in pending.items():
                if self.reset_pending.get(tp) != ts:
                    continue
                r = found.get(tp)
                if r is None:
                    continue  # retried next poll
                self.reset_pending.pop(tp, None)
                offset = r.offset
                if offset < 0:  # timestamp beyond the last record: go to the end
                    end = await self.list_offsets({tp: LATEST})
                    offset = end[tp].offset if tp in end else 0
                self.positions[tp] = [offset, r.leader_epoch]
        if self.need_validation:
            await self._validate_positions()

    async def list_offsets(self, requests: dict, *, strict: bool = False) -> dict:
        """{tp: timestamp (EARLIEST, LATEST or ms)} -> {tp: OffsetAndTimestamp}; sent to each leader.

        strict: every partition is answered or an error raised; like the Java consumer's
        beginningOffsets/endOffsets, leader changes (NOT_LEADER, stale leader epochs, ...) are
        retried after a metadata refresh until default.api.timeout.ms."""
        if not strict:
            return await list_offsets(self.client, requests, read_committed=self.read_committed,
                                      on_stale_metadata=self._refresh_soon)
        deadline = time.monotonic() + self.config["default.api.timeout.ms"] / 1000.0
        out: dict = {}
        pending = dict(requests)
        while True:
            got = await list_offsets(self.client, pending, read_committed=self.read_committed,
                                     on_stale_metadata=self._refresh_soon)
            out.update(got)
            pending = {tp: ts for tp, ts in pending.items() if TopicPartition(*tp) not in got}
            if not pending:
                return out
            md = self.client.metadata
            unknown = any(md.topics.get(tp[0]) is None or md.topics[tp[0]].error_code for tp in pending)
            if unknown or time.monotonic() >= deadline:  # the strict pass names the error
                out.update(await list_offsets(self.client, pending, read_committed=self.read_committed,
                                              strict=True))
                return out
            await self.client.refresh_metadata({tp[0] for tp in pending})
            await asyncio.sleep(self.config["retry.backoff.ms"] / 1000.0)

    async def _validate_positions(self):
        """After a leader change: ask the leader where our epoch ends (OffsetForLeaderEpoch);
        a position past that end means the log was truncated under us."""
        md = self.client.metadata
        by_node: dict[int, list] = {}
        for tp in list(self.need_validation):
            pos = self.positions.get(tp)
            if pos is None or pos[1] < 0:
                self.need_validation.discard(tp)
                continue
            leader = md.leader_for(*tp)
            if leader < 0:
                continue
            by_node.setdefault(leader, []).append(tp)
        for node, tps in by_node.items():
            conn = await self.client.connection(node)
            if not conn.supports("OffsetForLeaderEpoch"):
                self.need_validation.difference_update(tps)
                continue
            topics: dict[str, list] = {}
            for tp in tps:
                pi = md.partition_info(*tp)
                topics.setdefault(tp.topic, []).append({
                    "partition": tp.partition,
                    "current_leader_epoch": pi.leader_epoch if pi else -1,
                    "leader_epoch": self.positions[tp][1],
                })
            body = {"replica_id": -1, "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]}
            try:
                resp = await conn.request("OffsetForLeaderEpoch", body)
            except Exception as e:
                log.debug("OffsetForLeaderEpoch failed: %s", e)
                self._refresh_soon()
                continue
            for t in resp.get("topics", []):
                for p in t.get("partitions", []):
                    tp = TopicPartition(t["topic"], p["partition"])
                    code = p.get("error_code", 0)
                    if code in REFRESH_ERRORS:
                        self._refresh_soon()  # validated again once the metadata is fresh
                        continue
                    self.need_validation.discard(tp)
                    if code:
                        continue
                    pos = self.positions.get(tp)
                    end = p.get("end_offset", -1)
                    if pos is None or end < 0:
                        continue
                    if end < pos[0]:
                        if self.reset_strategy == "none":
                            raise LogTruncationError(
                                f"Truncation detected for partition {tp} at offset {pos[0]}, "
                                f"first diverging offset {end}")
                        log.warning("log truncation on %s: position %d -> %d", tp, pos[0], end)
                        self.positions[tp] = [end, p.get("leader_epoch", -1)]
                        self._drop_buffered(tp)

    def note_metadata(self):
        """Leader epochs moved: positions with a known epoch must be validated."""
        md = self.client.metadata
        for tp in self.assignment:
            pi = md.partition_info(*tp)
            if pi is None:
                continue
            seen = self._seen_epoch.get(tp)
            if seen is not None and pi.leader_epoch > seen:
                pos = self.positions.get(tp)
                if pos is not None and pos[1] >= 0:
                    self.need_validation.add(tp)
            self._seen_epoch[tp] = pi.leader_epoch

    def _refresh_soon(self):
        if self._md_task is not None and not self._md_task.done():
            return

        async def refresh():
            try:
                await asyncio.sleep(self.config["retry.backoff.ms"] / 1000.0)
                await self.client.refresh_metadata()
                self.note_metadata()
            except Exception as e:
                log.debug("metadata refresh failed: %s", e)
            if self._event is not None:
                self._event.set()

        self._md_task = asyncio.get_running_loop().create_task(refresh())

    async def poll(self, timeout_s: float, fetched: bool = False) -> dict | list:
        """Buffered or newly fetched records (with `fetched`, drain_fetched()'s whole fetches),
        waiting up to `timeout` seconds for some."""
        if self._event is None:
            self._event = asyncio.Event()
        deadline = time.monotonic() + timeout_s
        while True:
            if self._error is not None:
                e, self._error = self._error, None
                raise e
            if self.client.metadata_age() * 1000 >= self.config["metadata.max.age.ms"]:
                self._refresh_soon()
            if self.group is not None:
                await self.group.poll(self)
            try:
                await self.update_positions()
            except (NoOffsetForPartitionError, LogTruncationError):
                raise
            except Exception as e:
                log.debug("position update failed: %s", e)
                self._refresh_soon()
            records = self.drain_fetched() if fetched else self.drain(self.max_poll_records)
            self._send_fetches()
            if records:
                return records
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return {}
            self._event.clear()
            try:
                await asyncio.wait_for(self._event.wait(), min(remaining, 0.5))
            except asyncio.TimeoutError:
                pass

    async def close(self):
        """Stop fetching and close the network client."""
        if self.group is not None:
            try:
                await self.group.close(self)
            except Exception as e:
                log.debug("group close failed: %s", e)
        await self.client.close()
