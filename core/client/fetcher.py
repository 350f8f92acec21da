"""The consumer's fetcher: Fetch requests to partition leaders and the buffer poll() drains.

One Fetch in flight per leader, for the assigned partitions with a position and
at most two completed fetches buffered (prefetch while the application works);
answers are scanned by `fetch_records` and buffered as `CompletedFetch`es;
`drain` hands out at most `max.poll.records` records and advances positions.
`list_offsets` asks leaders for offsets by timestamp (Kafka's OffsetFetcher).

`Fetcher` is the fetching half of `ConsumerEngine` (consumer.py), which owns
the state both halves share (assignment, positions, the buffer and its lock).
"""
from __future__ import annotations

import asyncio
import logging

from pylog.core.client.fetch_records import CompletedFetch, decode_batch, scan_records
from pylog.core.client.structs import OffsetAndTimestamp, TopicPartition
from pylog.core.errors import (
    CorruptMessageError,
    ErrorCode,
    OffsetOutOfRangeError,
    error_for_code,
    error_name,
)

log = logging.getLogger(__name__)

# errors after which metadata may be stale: refresh it and try again
REFRESH_ERRORS = {ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE,
                  ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REPLICA_NOT_AVAILABLE,
                  ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.FENCED_LEADER_EPOCH,
                  ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.UNKNOWN_TOPIC_ID}


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
                code = t.error_code if t is not None and t.error_code else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                raise error_for_code(code, f"{error_name(code)}: {tp}")
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
                    if strict or code not in REFRESH_ERRORS:
                        raise error_for_code(code, f"ListOffsets {tp}: {error_name(code)}")
                    stale()
                    continue
                out[tp] = OffsetAndTimestamp(p.get("offset", -1), p.get("timestamp", -1),
                                             p.get("leader_epoch", -1))
    return out



class Fetcher:
    """The fetch pipeline of ConsumerEngine; every method runs on the event loop thread
    except `drain`/`can_drain_directly`, which poll() may call under the engine's lock."""

    def buffered(self) -> int:
        """How many fetched chunks wait to be drained."""
        return len(self._buffer)

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
                raise error_for_code(code, f"Fetch: {error_name(code)}")
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
            if not self.client.closed:
                # keep the pipeline full: the next fetch goes out now, not at the next poll()
                self.send_fetches_soon()

    def _handle_partition(self, tp, fetch_offset, gen, p):
        pos = self.positions.get(tp)
        if pos is None or gen != self._gen.get(tp, 0) or tp not in self.assignment:
            return  # seeked or revoked while the fetch was in flight
        code = p.get("error_code", 0)
        if code:
            if code == ErrorCode.OFFSET_OUT_OF_RANGE:
                if self.reset_strategy == "none":
                    raise OffsetOutOfRangeError(
                        f"Fetch position FetchPosition{{offset={fetch_offset}}} is out of range for partition {tp}")
                log.info("offset %d out of range for %s: resetting (%s)", fetch_offset, tp, self.reset_strategy)
                self._drop_buffered(tp)
                self.positions.pop(tp, None)
                self._default_reset(tp)
                return
            if code in REFRESH_ERRORS:
                if code == ErrorCode.FENCED_LEADER_EPOCH:
                    self.need_validation.add(tp)
                self._refresh_soon()
                return
            raise error_for_code(code, f"fetch {tp}: {error_name(code)}")
        hw = p.get("high_watermark", -1)
        self.high_watermarks[tp] = hw
        if p.get("log_start_offset", -1) >= 0:
            self.log_start[tp] = p["log_start_offset"]
        data = p.get("records")
        if not data:
            return
        parts, next_offset, epoch = self._scan(tp, data, fetch_offset, p.get("aborted_transactions"))
        if next_offset == fetch_offset and not parts:
            if len(data) >= self.config["max.partition.fetch.bytes"]:
                raise error_for_code(ErrorCode.MESSAGE_TOO_LARGE, f"a record batch at offset {fetch_offset} of {tp} is larger than "
                                         f"max.partition.fetch.bytes")
            return
        with self.lock:
            if gen != self._gen.get(tp, 0):
                return
            self._buffer.append(CompletedFetch(tp, parts, fetch_offset, next_offset, epoch, hw))
            self._buffered[tp] = self._buffered.get(tp, 0) + 1
            self._next_fetch[tp] = next_offset

    def parse_records(self, tp, data, position, aborted=None):
        """Records at or above `position` from a fetched record set; the offset to fetch
        next; the leader epoch of the last batch."""
        parts, next_offset, epoch = self._scan(tp, data, position, aborted)
        out = []
        for part in parts:
            out.extend(decode_batch(tp, part, position))
        return out, next_offset, epoch

    def _scan(self, tp, data, position, aborted):
        return scan_records(tp, data, position, check_crcs=self.check_crcs, read_committed=self.read_committed,
                            aborted=aborted)

    def drain(self, max_records):
        """Up to max_records buffered records as {tp: [Record]}; positions advance."""
        with self.lock:
            return self._drain_locked(max_records)

    def drain_fetched(self) -> list:
        """Every buffered fetch whole, its batches not decoded: [(tp, records, parts, position)] with
        the records a drain() left of a batch, the batches still to decode (scan_records' parts, for
        decode_batch with `position`); positions advance past them all. For a caller that makes its
        output from the batches themselves (the consume command's format rendering)."""
        out = []
        with self.lock:
            while self._buffer:
                c = self._buffer.popleft()
                pos = self.positions.get(c.tp)
                if pos is None:
                    self._drop_buffered(c.tp)
                    continue
                left = self._buffered.get(c.tp, 1) - 1
                if left:
                    self._buffered[c.tp] = left
                else:
                    self._buffered.pop(c.tp, None)
                    self._next_fetch.pop(c.tp, None)
                out.append((c.tp, c.records[c.index:], c.parts[c.part:], c.position))
                pos[0] = c.next_offset
                if c.epoch >= 0:
                    pos[1] = c.epoch
        return out

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
                    c.records = recs = decode_batch(c.tp, c.parts[c.part], c.position)
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

