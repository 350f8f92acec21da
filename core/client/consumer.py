"""The consumer: positions, offset reset, the fetch pipeline, and the hooks the
consumer-group code plugs into.

`Consumer` is the synchronous facade; its engine runs on the event loop thread.
Without a group (`group.id` unset or no coordinator attached) `subscribe()`
assigns every partition of the topics. Group membership (issue 7) attaches a
`GroupHooks` object: it is driven from poll(), updates the assignment and
answers committed-offset lookups and commits.

Fetching: one Fetch in flight per leader, for the assigned partitions with a
position and no buffered data; responses are parsed into records (v2 batches,
v0/v1 message sets, decompressed, CRC-checked when `check.crcs`), records
below the position dropped, control batches hidden, aborted transactions
dropped for read_committed. poll() returns at most `max.poll.records`.
"""
from __future__ import annotations

import asyncio
import collections
import logging
import struct
import threading
import time
from typing import NamedTuple

from pylog.core.client.cluster import NetworkClient
from pylog.core.client.errors import (
    LogTruncationError,
    NoOffsetForPartitionError,
)
from pylog.core.client.loop import LoopThread
from pylog.core.config import CONSUMER_CONFIGS
from pylog.core.errors import (
    ERROR_NAMES,
    CorruptMessageError,
    OffsetOutOfRangeError,
    UsageError,
    error_for_code,
)
from pylog.core.records.batch import RecordBatch
from pylog.core.records.errors import RecordFormatError
from pylog.core.records.legacy import LegacyBatch

log = logging.getLogger(__name__)

EARLIEST = -2  # ListOffsets timestamps (Kafka's ListOffsetsRequest constants)
LATEST = -1
_PREFIX = struct.Struct(">qi")
_REFRESH_ERRORS = {3, 5, 6, 9, 56, 74, 75, 100}


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self):
        return f"{self.topic}-{self.partition}"


class OffsetAndTimestamp(NamedTuple):
    offset: int
    timestamp: int
    leader_epoch: int = -1


class GroupHooks:
    """What a group coordinator provides to the consumer (issue 7 implements it).

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


async def list_offsets(client, requests: dict, *, read_committed: bool = False, strict: bool = False,
                       on_stale_metadata=None) -> dict:
    """{tp: timestamp (EARLIEST, LATEST or ms)} -> {tp: OffsetAndTimestamp}, asking each leader.

    strict: errors raise; otherwise partitions that fail are left out (retried by the caller)
    and on_stale_metadata() is called when a metadata refresh may help."""
    def stale():
        if on_stale_metadata is not None:
            on_stale_metadata()

    md = client.metadata
    missing = {tp.topic for tp in requests if md.leader_for(*tp) < 0}
    if missing:
        await client.refresh_metadata(missing)
        md = client.metadata
    by_node: dict[int, dict] = {}
    out = {}
    for tp, ts in requests.items():
        tp = TopicPartition(*tp)
        leader = md.leader_for(*tp)
        if leader < 0:
            if strict:
                t = md.topics.get(tp.topic)
                code = t.error_code if t is not None and t.error_code else 3
                raise error_for_code(code, f"{ERROR_NAMES.get(code)}: {tp}")
            continue
        by_node.setdefault(leader, {})[tp] = ts
    iso = 1 if read_committed else 0
    for node, reqs in by_node.items():
        topics: dict[str, list] = {}
        for tp, ts in reqs.items():
            pi = md.partition_info(*tp)
            topics.setdefault(tp.topic, []).append({
                "partition_index": tp.partition,
                "current_leader_epoch": pi.leader_epoch if pi else -1,
                "timestamp": ts,
            })
        body = {"replica_id": -1, "isolation_level": iso,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}
        try:
            resp = await client.request(node, "ListOffsets", body)
        except Exception as e:
            if strict:
                raise
            log.debug("ListOffsets to %s failed: %s", node, e)
            stale()
            continue
        for t in resp.get("topics", []):
            for p in t.get("partitions", []):
                tp = TopicPartition(t["name"], p["partition_index"])
                code = p.get("error_code", 0)
                if code:
                    if strict or code not in _REFRESH_ERRORS:
                        raise error_for_code(code, f"ListOffsets {tp}: {ERROR_NAMES.get(code, code)}")
                    stale()
                    continue
                out[tp] = OffsetAndTimestamp(p.get("offset", -1), p.get("timestamp", -1),
                                             p.get("leader_epoch", -1))
    return out


class _Completed:
    """One partition's fetched data, decoded a batch at a time as poll() drains it.

    Decoding lazily keeps only about max.poll.records Records alive: records made
    and dropped between two polls die young, whereas a whole decoded fetch
    (~10,000 records per MB) lives through several garbage collections and
    makes every older-generation collection walk it.
    """
    __slots__ = ("tp", "parts", "part", "position", "records", "index", "next_offset", "epoch",
                 "high_watermark")

    def __init__(self, tp, parts, position, next_offset, epoch, hw):
        self.tp = tp
        self.parts = parts  # batches still to decode: (batch, drop records below position?)
        self.part = 0
        self.position = position
        self.records: list = []  # the decoded batch being drained
        self.index = 0
        self.next_offset = next_offset
        self.epoch = epoch
        self.high_watermark = hw


class ConsumerEngine:
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
        timeout = self.config["default.api.timeout.ms"] / 1000.0
        tps = []
        for t in topics:
            info = await self.client.wait_for_topic(t, timeout)
            tps += [TopicPartition(t, p) for p in sorted(info.partitions)]
        self.set_assignment(tps)

    # ---------------------------------------------------------------- positions
    def seek(self, tp, offset, leader_epoch=-1):
        tp = TopicPartition(*tp)
        self.positions[tp] = [offset, leader_epoch]
        self.reset_pending.pop(tp, None)
        self.need_committed.discard(tp)
        self._drop_buffered(tp)

    def request_reset(self, tp, timestamp):
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
        """{tp: timestamp (EARLIEST, LATEST or ms)} -> {tp: OffsetAndTimestamp}; sent to each leader."""
        return await list_offsets(self.client, requests, read_committed=self.read_committed, strict=strict,
                                  on_stale_metadata=self._refresh_soon)

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
                    if code:
                        if code in _REFRESH_ERRORS:
                            self._refresh_soon()
                            continue
                        self.need_validation.discard(tp)
                        continue
                    self.need_validation.discard(tp)
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

    def _note_metadata(self):
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
                self._note_metadata()
            except Exception as e:
                log.debug("metadata refresh failed: %s", e)
            if self._event is not None:
                self._event.set()

        self._md_task = asyncio.get_running_loop().create_task(refresh())

    # ---------------------------------------------------------------- fetching
    def send_fetches_soon(self):
        try:
            self._send_fetches()
        except Exception as e:  # surfaced by the next poll
            if self._error is None:
                self._error = e

    def _send_fetches(self):
        with self.lock:
            by_node = self._fetchable()
        loop = asyncio.get_running_loop()
        for node, parts in by_node.items():
            self._fetching.add(node)
            loop.create_task(self._fetch(node, parts))

    def _fetchable(self) -> dict:
        md = self.client.metadata
        by_node: dict[int, list] = {}
        held: set = set()  # leaders of partitions waiting only for the buffer to drain
        for tp in self.assignment:
            if tp in self.paused or tp in self.need_validation:
                continue
            # prefetch: completed fetches may wait in the buffer while the next is in flight
            if self._buffered.get(tp, 0) > 2:
                held.add(md.leader_for(*tp))
                continue
            pos = self.positions.get(tp)
            if pos is None:
                continue
            if tp in self._buffered:
                pos = [self._next_fetch.get(tp, pos[0]), pos[1]]
            leader = md.leader_for(*tp)
            if leader < 0:
                self._refresh_soon()
                continue
            if leader in self._fetching:
                continue
            by_node.setdefault(leader, []).append((tp, pos))
        if held:
            # A fetch for partitions already at their high watermark is parked by the broker
            # for fetch.max.wait.ms, and it holds the node's one fetch slot: partitions with
            # more data would wait that long once the buffer drains. Send it with them instead.
            hws = self.high_watermarks
            for node in held.intersection(by_node):
                if all(pos[0] >= hws.get(tp, -1) >= 0 for tp, pos in by_node[node]):
                    del by_node[node]
        return by_node

    async def _fetch(self, node, parts):
        cfg = self.config
        md = self.client.metadata
        topics: dict[str, list] = {}
        for tp, pos in parts:
            pi = md.partition_info(*tp)
            topics.setdefault(tp.topic, []).append({
                "partition": tp.partition,
                "current_leader_epoch": pi.leader_epoch if pi else -1,
                "fetch_offset": pos[0],
                "log_start_offset": -1,
                "partition_max_bytes": cfg["max.partition.fetch.bytes"],
            })
        body = {
            "replica_id": -1,
            "max_wait_ms": cfg["fetch.max.wait.ms"],
            "min_bytes": cfg["fetch.min.bytes"],
            "max_bytes": cfg["fetch.max.bytes"],
            "isolation_level": 1 if self.read_committed else 0,
            "session_id": 0,
            "session_epoch": -1,
            "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
            "forgotten_topics_data": [],
            "rack_id": cfg.get("client.rack") or "",
        }
        fetched = {tp: (pos[0], self._gen.get(tp, 0)) for tp, pos in parts}
        try:
            timeout = cfg["request.timeout.ms"] / 1000.0 + cfg["fetch.max.wait.ms"] / 1000.0
            resp = await self.client.request(node, "Fetch", body, timeout=timeout)
            code = resp.get("error_code", 0)
            if code:
                raise error_for_code(code, f"Fetch: {ERROR_NAMES.get(code, code)}")
            for t in resp.get("responses", []):
                for p in t.get("partitions", []):
                    tp = TopicPartition(t["topic"], p["partition_index"])
                    if tp not in fetched:
                        continue
                    try:
                        self._handle_partition(tp, fetched[tp][0], fetched[tp][1], p)
                    except Exception as e:
                        if self._error is None:
                            self._error = e
        except asyncio.CancelledError:
            raise
        except Exception as e:
            log.debug("fetch from node %s failed: %s", node, e)
            self._refresh_soon()
            await asyncio.sleep(min(self.client.backoff_remaining(node), 1.0) or
                                self.config["retry.backoff.ms"] / 1000.0)
        finally:
            self._fetching.discard(node)
            if self._event is not None:
                self._event.set()

    def _handle_partition(self, tp, fetch_offset, gen, p):
        pos = self.positions.get(tp)
        if pos is None or gen != self._gen.get(tp, 0) or tp not in self.assignment:
            return  # seeked or revoked while the fetch was in flight
        code = p.get("error_code", 0)
        if code:
            if code == 1:  # OFFSET_OUT_OF_RANGE
                if self.reset_strategy == "none":
                    raise OffsetOutOfRangeError(
                        f"Fetch position FetchPosition{{offset={fetch_offset}}} is out of range for partition {tp}")
                log.info("offset %d out of range for %s: resetting (%s)", fetch_offset, tp, self.reset_strategy)
                self._drop_buffered(tp)
                self.positions.pop(tp, None)
                self._default_reset(tp)
                return
            if code in _REFRESH_ERRORS:
                if code == 74:
                    self.need_validation.add(tp)
                self._refresh_soon()
                return
            raise error_for_code(code, f"fetch {tp}: {ERROR_NAMES.get(code, code)}")
        hw = p.get("high_watermark", -1)
        self.high_watermarks[tp] = hw
        if p.get("log_start_offset", -1) >= 0:
            self.log_start[tp] = p["log_start_offset"]
        data = p.get("records")
        if not data:
            return
        parts, next_offset, epoch = self._scan_records(tp, data, fetch_offset, p.get("aborted_transactions"))
        if next_offset == fetch_offset and not parts:
            if len(data) >= self.config["max.partition.fetch.bytes"]:
                raise error_for_code(10, f"a record batch at offset {fetch_offset} of {tp} is larger than "
                                         f"max.partition.fetch.bytes")
            return
        with self.lock:
            if gen != self._gen.get(tp, 0):
                return
            self._buffer.append(_Completed(tp, parts, fetch_offset, next_offset, epoch, hw))
            self._buffered[tp] = self._buffered.get(tp, 0) + 1
            self._next_fetch[tp] = next_offset

    def parse_records(self, tp, data, position, aborted=None):
        """Records at or above `position` from a fetched record set; the offset to fetch
        next; the leader epoch of the last batch."""
        parts, next_offset, epoch = self._scan_records(tp, data, position, aborted)
        out = []
        for part in parts:
            out.extend(self._decode_part(tp, part, position))
        return out, next_offset, epoch

    def _scan_records(self, tp, data, position, aborted=None):
        """Walk a fetched record set by batch headers: CRCs checked (check.crcs), batches
        below `position`, control batches and aborted transactions left out. Returns the
        batches to decode as (batch, has records below position), the offset to fetch
        next and the leader epoch of the last batch. No record is decoded here."""
        mv = memoryview(data)
        end = len(mv)
        pos = 0
        out = []
        next_offset = position
        epoch = -1
        check = self.check_crcs
        aborted_pids = None
        pending_aborts = None
        if self.read_committed and aborted:
            pending_aborts = sorted(((a["first_offset"], a["producer_id"]) for a in aborted), reverse=True)
            aborted_pids = set()
        while pos + 17 <= end:
            base, length = _PREFIX.unpack_from(mv, pos)
            size = 12 + length
            if length < 0 or pos + size > end:
                break  # the partial batch at the end of a fetch
            magic = mv[pos + 16]
            try:
                if magic == 2:
                    b = RecordBatch(mv, pos)
                    h = b.header
                    if check:
                        b.check_crc()
                    last = h.last_offset
                    if last < position:
                        pos += size
                        next_offset = max(next_offset, last + 1)
                        continue
                    epoch = h.partition_leader_epoch
                    if pending_aborts is not None:
                        while pending_aborts and pending_aborts[-1][0] <= last:
                            aborted_pids.add(pending_aborts.pop()[1])
                    if h.attributes & 0x20:  # control batch: hidden, but may end an aborted txn
                        if aborted_pids and h.producer_id in aborted_pids:
                            aborted_pids.discard(h.producer_id)
                    elif aborted_pids and h.attributes & 0x10 and h.producer_id in aborted_pids:
                        pass  # records of an aborted transaction
                    elif h.record_count:
                        out.append((b, h.base_offset < position))
                    next_offset = last + 1
                elif magic in (0, 1):
                    b = LegacyBatch(mv, pos)
                    if check:
                        b.check_crc()
                    out.append((b, True))
                    next_offset = max(next_offset, b.last_offset + 1)
                else:
                    raise CorruptMessageError(f"unknown magic {magic} at offset {base} of {tp}")
            except RecordFormatError as e:
                raise CorruptMessageError(f"corrupt record batch at offset {base} of {tp}: {e}") from None
            pos += size
        return out, next_offset, epoch

    @staticmethod
    def _decode_part(tp, part, position) -> list:
        b, below = part
        try:
            recs = b.records()
        except RecordFormatError as e:
            raise CorruptMessageError(f"corrupt record batch at offset {b.base_offset} of {tp}: {e}") from None
        if below:
            recs = [r for r in recs if r.offset >= position]
        return recs

    def drain(self, max_records):
        """Up to max_records buffered records as {tp: [Record]}; positions advance."""
        with self.lock:
            return self._drain_locked(max_records)

    def can_drain_directly(self) -> bool:
        return (bool(self._buffer) and self.group is None and self._error is None and not self.reset_pending
                and not self.need_committed and not self.need_validation)

    def _drain_locked(self, max_records):
        out: dict = {}
        n = 0
        buf = self._buffer
        try:
            while buf and n < max_records:
                c = buf[0]
                pos = self.positions.get(c.tp)
                if pos is None:
                    buf.popleft()
                    self._drop_buffered(c.tp)
                    continue
                recs = c.records
                if c.index >= len(recs) and c.part < len(c.parts):
                    # next batch; a decode error leaves the position before it, so it
                    # is raised again until the application seeks past it
                    c.records = recs = self._decode_part(c.tp, c.parts[c.part], c.position)
                    c.part += 1
                    c.index = 0
                i = c.index
                want = max_records - n
                if i == 0 and len(recs) <= want:
                    take = recs  # the whole batch: no slice copy
                else:
                    take = recs[i:i + want]
                if take:
                    c.index = i + len(take)
                    got = out.get(c.tp)
                    if got is None:
                        # may be the decoded batch's own list: it is never read again here
                        out[c.tp] = take
                    else:
                        got.extend(take)
                    n += len(take)
                if c.index >= len(recs) and c.part >= len(c.parts):
                    buf.popleft()
                    left = self._buffered.get(c.tp, 1) - 1
                    if left:
                        self._buffered[c.tp] = left
                    else:
                        self._buffered.pop(c.tp, None)
                        self._next_fetch.pop(c.tp, None)
                    pos[0] = c.next_offset
                    if c.epoch >= 0:
                        pos[1] = c.epoch
                elif take:
                    pos[0] = take[-1].offset + 1
        except CorruptMessageError as e:
            if not out:
                raise
            if self._error is None:  # records before the bad batch go out first
                self._error = e
        return out

    async def poll(self, timeout_s: float) -> dict:
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
        if self.group is not None:
            try:
                await self.group.close(self)
            except Exception as e:
                log.debug("group close failed: %s", e)
        await self.client.close()


def resolve_consumer_config(props: dict | None = None, **overrides):
    props = dict(props or {})
    props.update({k: str(v) for k, v in overrides.items()})
    return CONSUMER_CONFIGS.resolve(props)


class Consumer:
    """A Kafka consumer (synchronous facade over ConsumerEngine on a loop thread)."""

    def __init__(self, props: dict | None = None, *, loop: LoopThread | None = None, **overrides):
        self.config = resolve_consumer_config(props, **overrides)
        self._own_loop = loop is None
        self._loop = loop or LoopThread("pylog-consumer")
        self.engine = ConsumerEngine(self.config)
        self._closed = False
        self._api_timeout = self.config["default.api.timeout.ms"] / 1000.0
        try:
            self._loop.run(self._start())
        except BaseException:
            if self._own_loop:
                self._loop.stop()
            raise

    async def _start(self):
        await self.engine.client.refresh_metadata([])

    def _run(self, coro, timeout=None):
        return self._loop.run(coro, timeout)

    # assignment ---------------------------------------------------------------
    def assign(self, partitions):
        tps = [TopicPartition(*tp) for tp in partitions]

        async def go():
            self.engine.subscription = None
            self.engine.set_assignment(tps)
            await self.engine.client.refresh_metadata({tp.topic for tp in tps})
            self.engine._note_metadata()
        self._run(go())

    def subscribe(self, topics):
        """Without a group: every partition of the topics. With a group the GroupHooks decide."""
        topics = list(topics)

        async def go():
            self.engine.subscription = topics
            if self.engine.group is None:
                await self.engine.subscribe_all_partitions(topics)
                self.engine._note_metadata()
        self._run(go())

    def assignment(self) -> list:
        return list(self.engine.assignment)

    def partitions_for(self, topic: str) -> list[int]:
        async def go():
            info = await self.engine.client.wait_for_topic(topic, self._api_timeout)
            return sorted(info.partitions)
        return self._run(go())

    def list_topics(self) -> dict:
        async def go():
            md = await self.engine.client.refresh_metadata(all_topics=True)
            return md.topics
        return self._run(go())

    # positions -----------------------------------------------------------------
    def seek(self, tp, offset: int):
        self._loop.run(_call(self.engine.seek, TopicPartition(*tp), offset))

    def seek_to_beginning(self, partitions=None):
        for tp in partitions or self.assignment():
            self._loop.run(_call(self.engine.request_reset, tp, EARLIEST))

    def seek_to_end(self, partitions=None):
        for tp in partitions or self.assignment():
            self._loop.run(_call(self.engine.request_reset, tp, LATEST))

    def seek_to_timestamp(self, timestamp_ms: int, partitions=None):
        for tp in partitions or self.assignment():
            self._loop.run(_call(self.engine.request_reset, tp, timestamp_ms))

    def position(self, tp) -> int:
        tp = TopicPartition(*tp)

        async def go():
            if tp not in self.engine.positions:
                await self.engine.update_positions()
            pos = self.engine.positions.get(tp)
            return None if pos is None else pos[0]
        return self._run(go())

    def offsets_for_times(self, timestamps: dict) -> dict:
        res = self._run(self.engine.list_offsets({TopicPartition(*k): v for k, v in timestamps.items()},
                                                 strict=True))
        return {tp: (r if r.offset >= 0 else None) for tp, r in res.items()}

    def beginning_offsets(self, partitions) -> dict:
        res = self._run(self.engine.list_offsets({TopicPartition(*tp): EARLIEST for tp in partitions}, strict=True))
        return {tp: r.offset for tp, r in res.items()}

    def end_offsets(self, partitions) -> dict:
        res = self._run(self.engine.list_offsets({TopicPartition(*tp): LATEST for tp in partitions}, strict=True))
        return {tp: r.offset for tp, r in res.items()}

    def committed(self, partitions) -> dict:
        if self.engine.group is None:
            raise UsageError("committed offsets need a consumer group (group.id)")
        return self._run(self.engine.group.fetch_committed([TopicPartition(*tp) for tp in partitions]))

    def commit(self, offsets: dict | None = None):
        if self.engine.group is None:
            raise UsageError("committing offsets needs a consumer group (group.id)")
        if offsets is None:
            offsets = {tp: (pos[0], pos[1], "") for tp, pos in self.engine.positions.items()}
        self._run(self.engine.group.commit(offsets))

    def pause(self, partitions):
        self.engine.paused.update(TopicPartition(*tp) for tp in partitions)

    def resume(self, partitions):
        self.engine.paused.difference_update(TopicPartition(*tp) for tp in partitions)

    def high_watermark(self, tp) -> int:
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
            recs = eng.drain(eng.max_poll_records)
            if recs:
                self._loop.call_soon(eng.send_fetches_soon)
                return recs
        return self._run(eng.poll(timeout_ms / 1000.0))

    def close(self):
        if self._closed:
            return
        self._closed = True
        try:
            self._run(self.engine.close(), timeout=10)
        except Exception:
            pass
        if self._own_loop:
            self._loop.stop()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


async def _call(fn, *args):
    return fn(*args)
