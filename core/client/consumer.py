"""The consumer: its synchronous facade and the engine behind it.

`Consumer` is the synchronous facade; `ConsumerEngine` runs on the event loop
thread and holds assignment, positions and offset reset; its fetching half is
`fetcher.Fetcher`, and the record parsing is `fetch_records`. Without a group
(`group.id` unset or no coordinator attached) `subscribe()` assigns every
partition of the topics. Group membership (`group.attach_group`) attaches a
`GroupHooks` object: it is driven from poll(), updates the assignment and
answers committed-offset lookups and commits.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import threading
import time

from pylog.core.client.cluster import NetworkClient
from pylog.core.client.errors import LogTruncationError, NoOffsetForPartitionError
from pylog.core.client.fetcher import REFRESH_ERRORS, Fetcher, list_offsets
from pylog.core.client.loop import Closeable, LoopThread
from pylog.core.client.structs import EARLIEST, LATEST, OffsetAndTimestamp, TopicPartition
from pylog.core.config import CONSUMER_CONFIGS
from pylog.core.errors import UsageError

log = logging.getLogger(__name__)

__all__ = ["EARLIEST", "LATEST", "Consumer", "ConsumerEngine", "GroupHooks", "OffsetAndTimestamp",
           "TopicPartition", "list_offsets", "resolve_consumer_config"]


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

    async def poll(self, timeout_s: float) -> dict:
        """Buffered or newly fetched records, waiting up to `timeout` seconds for some."""
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
            records = self.drain(self.max_poll_records)
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


def resolve_consumer_config(props: dict | None = None, **overrides):
    """Kafka's consumer properties, validated and with their defaults."""
    props = dict(props or {})
    props.update({k: str(v) for k, v in overrides.items()})
    return CONSUMER_CONFIGS.resolve(props)


class Consumer(Closeable):
    """A Kafka consumer with the Java client's semantics and property names.

        with Consumer({"bootstrap.servers": "127.0.0.1:9092", "auto.offset.reset": "earliest"}) as c:
            c.assign([TopicPartition("orders", 0)])
            for tp, records in c.poll(500).items(): ...

    A synchronous facade over `ConsumerEngine` on a background loop thread:
    `assign()`/`subscribe()` choose partitions (with `group.id` and
    `group.attach_group` the group decides), `seek*()` and `auto.offset.reset`
    set positions, `poll()` returns up to `max.poll.records` records per call
    while the next fetches are already in flight.
    """

    def __init__(self, props: dict | None = None, *, loop: LoopThread | None = None, **overrides):
        self.config = resolve_consumer_config(props, **overrides)
        self._own_loop = loop is None
        self._loop = loop or LoopThread("pylog-consumer")
        self.engine = ConsumerEngine(self.config)
        self._closed = False
        self._api_timeout = self.config["default.api.timeout.ms"] / 1000.0
        self._loop.start_with(self._start(), stop=self._own_loop)

    async def _start(self):
        await self.engine.client.refresh_metadata([])

    @property
    def loop(self) -> LoopThread:
        """The loop thread the client's network work runs on (shared with others given `loop=`)."""
        return self._loop

    def _run(self, coro, timeout=None):
        return self._loop.run(coro, timeout)

    # assignment ---------------------------------------------------------------
    def assign(self, partitions):
        """Consume exactly these (topic, partition)s, replacing any subscription."""
        tps = [TopicPartition(*tp) for tp in partitions]

        async def go():
            self.engine.subscription = None
            self.engine.set_assignment(tps)
            await self.engine.client.refresh_metadata({tp.topic for tp in tps})
            self.engine.note_metadata()
        self._run(go())

    def subscribe(self, topics):
        """Without a group: every partition of the topics. With a group the GroupHooks decide."""
        topics = list(topics)

        async def go():
            self.engine.subscription = topics
            if self.engine.group is None:
                await self.engine.subscribe_all_partitions(topics)
                self.engine.note_metadata()
        self._run(go())

    def assignment(self) -> list:
        """The partitions this consumer reads now."""
        return list(self.engine.assignment)

    def partitions_for(self, topic: str) -> list[int]:
        """Partition numbers of `topic` (waits for its metadata up to default.api.timeout.ms)."""
        async def go():
            info = await self.engine.client.wait_for_topic(topic, self._api_timeout)
            return sorted(info.partitions)
        return self._run(go())

    def list_topics(self) -> dict:
        """Every topic the cluster reports, by name."""
        async def go():
            md = await self.engine.client.refresh_metadata(all_topics=True)
            return md.topics
        return self._run(go())

    # positions -----------------------------------------------------------------
    def seek(self, tp, offset: int):
        """Read `tp` from `offset` on the next poll."""
        self._loop.run(_call(self.engine.seek, TopicPartition(*tp), offset))

    def seek_to_beginning(self, partitions=None):
        """Read the given (or all assigned) partitions from their log start offset."""
        for tp in partitions or self.assignment():
            self._loop.run(_call(self.engine.request_reset, tp, EARLIEST))

    def seek_to_end(self, partitions=None):
        """Read the given (or all assigned) partitions from their end: only new records."""
        for tp in partitions or self.assignment():
            self._loop.run(_call(self.engine.request_reset, tp, LATEST))

    def seek_to_timestamp(self, timestamp_ms: int, partitions=None):
        """Read from the first record at or after `timestamp_ms` (ListOffsets by time)."""
        for tp in partitions or self.assignment():
            self._loop.run(_call(self.engine.request_reset, tp, timestamp_ms))

    def position(self, tp) -> int:
        """The offset of the next record poll() returns for `tp` (resolving a pending reset first)."""
        tp = TopicPartition(*tp)

        async def go():
            if tp not in self.engine.positions:
                await self.engine.update_positions()
            pos = self.engine.positions.get(tp)
            return None if pos is None else pos[0]
        return self._run(go())

    def offsets_for_times(self, timestamps: dict) -> dict:
        """{tp: OffsetAndTimestamp of the first record at or after the time, or None}."""
        res = self._run(self.engine.list_offsets({TopicPartition(*k): v for k, v in timestamps.items()},
                                                 strict=True))
        return {tp: (r if r.offset >= 0 else None) for tp, r in res.items()}

    def beginning_offsets(self, partitions) -> dict:
        """{tp: log start offset} for the given partitions."""
        res = self._run(self.engine.list_offsets({TopicPartition(*tp): EARLIEST for tp in partitions}, strict=True))
        return {tp: r.offset for tp, r in res.items()}

    def end_offsets(self, partitions) -> dict:
        """{tp: end offset (high watermark)} for the given partitions."""
        res = self._run(self.engine.list_offsets({TopicPartition(*tp): LATEST for tp in partitions}, strict=True))
        return {tp: r.offset for tp, r in res.items()}

    def committed(self, partitions) -> dict:
        """{tp: committed offset} of the consumer's group for the given partitions."""
        if self.engine.group is None:
            raise UsageError("committed offsets need a consumer group (group.id)")
        return self._run(self.engine.group.fetch_committed([TopicPartition(*tp) for tp in partitions]))

    def commit(self, offsets: dict | None = None):
        """Commit `offsets` ({tp: (offset, leader_epoch, metadata)}) or every current position."""
        if self.engine.group is None:
            raise UsageError("committing offsets needs a consumer group (group.id)")
        if offsets is None:
            offsets = {tp: (pos[0], pos[1], "") for tp, pos in self.engine.positions.items()}
        self._run(self.engine.group.commit(offsets))

    def pause(self, partitions):
        """Stop fetching these partitions until resume(); positions are kept."""
        self.engine.paused.update(TopicPartition(*tp) for tp in partitions)

    def resume(self, partitions):
        """Fetch paused partitions again."""
        self.engine.paused.difference_update(TopicPartition(*tp) for tp in partitions)

    def high_watermark(self, tp) -> int:
        """The high watermark last seen for `tp` in a fetch answer, or -1."""
        return self.engine.high_watermarks.get(TopicPartition(*tp), -1)

    # consuming -----------------------------------------------------------------
    def poll(self, timeout_ms: int = 0) -> dict:
        """{TopicPartition: [Record]} with at most max.poll.records records."""
        if self._closed:
            raise UsageError("consumer is closed")
        eng = self.engine
        if eng.can_drain_directly():
            # records already fetched: hand them over without a round trip to the loop
            # thread, and let it send the next fetches
            held = eng.buffered()
            recs = eng.drain(eng.max_poll_records)
            if recs:
                if eng.buffered() < held:
                    # a completed fetch was used up: room for the next one (the loop thread
                    # sends fetches itself as answers arrive; waking it costs the GIL)
                    self._loop.call_soon(eng.send_fetches_soon)
                return recs
        return self._run(eng.poll(timeout_ms / 1000.0))

    def group_metadata(self):
        """The group id, generation and member id to pass to a transactional producer's
        send_offsets_to_transaction (Kafka's ConsumerGroupMetadata, KIP-447)."""
        from pylog.core.client.transactions import ConsumerGroupMetadata

        g = self.engine.group
        group_id = self.config["group.id"]
        if not group_id:
            raise UsageError("group_metadata() needs group.id")
        return ConsumerGroupMetadata(group_id, getattr(g, "generation", -1), getattr(g, "member_id", "") or "",
                                     self.config["group.instance.id"])

    def close(self):
        """Leave the group (if any), stop fetching and release the I/O thread."""
        if self._closed:
            return
        self._closed = True
        self._loop.close_with(self.engine.close(), 10, stop=self._own_loop)


async def _call(fn, *args):
    return fn(*args)

