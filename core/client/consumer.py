"""The consumer: its synchronous facade (the engine behind it is in consumer_engine).

`Consumer` is the synchronous facade; `ConsumerEngine` runs on the event loop
thread and holds assignment, positions and offset reset; its fetching half is
`fetcher.Fetcher`, and the record parsing is `fetch_records`. Without a group
(`group.id` unset or no coordinator attached) `subscribe()` assigns every
partition of the topics. Group membership (`membership.attach_group`) attaches a
`GroupHooks` object: it is driven from poll(), updates the assignment and
answers committed-offset lookups and commits.
"""
from __future__ import annotations

from pylog.core.client.fetcher import list_offsets
from pylog.core.client.loop import Closeable, LoopThread
from pylog.core.client.structs import EARLIEST, LATEST, OffsetAndTimestamp, TopicPartition
from pylog.core.config import CONSUMER_CONFIGS
from pylog.core.errors import UsageError
from pylog.core.client.consumer_engine import ConsumerEngine, GroupHooks

__all__ = ["EARLIEST", "LATEST", "Consumer", "ConsumerEngine", "GroupHooks", "OffsetAndTimestamp",
           "TopicPartition", "list_offsets", "resolve_consumer_config"]


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
    `membership.attach_group` the group decides), `seek*()` and `auto.offset.reset`
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

    def poll_fetched(self, timeout_ms: int = 0) -> list:
        """poll() for a consumer without a group whose caller renders batches itself: every fetch
        buffered, whole and undecoded, as [(tp, records, batches, position)] (Fetcher.drain_fetched)."""
        if self._closed:
            raise UsageError("consumer is closed")
        eng = self.engine
        if eng.can_drain_directly():
            got = eng.drain_fetched()
            if got:
                self._loop.call_soon(eng.send_fetches_soon)  # room for the next fetches
                return got
        return self._run(eng.poll(timeout_ms / 1000.0, fetched=True))

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

