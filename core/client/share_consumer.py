"""A share-group consumer (KIP-932, queues): Kafka's KafkaShareConsumer for Python.

Members of a share group read the same partitions together: each record is
acquired by one consumer for a time-limited lock and acknowledged ACCEPT,
RELEASE (delivered again), REJECT (archived) or RENEW (keep the lock). In
implicit mode (the default) the records of one poll are accepted by the next
poll or commit; in explicit mode each record gets `acknowledge(record, type)`
and the acknowledgements go out with the next poll, `commit_sync()` or
`commit_async()`.

Inside: a heartbeat task keeps the membership (ShareGroupHeartbeat at the group
coordinator) and the assignment; poll sends ShareFetch to each partition
leader with the acknowledgements due there, keeping a share session per leader
(epoch 0 opens it with the full partition list, later requests carry changes);
close sends the last acknowledgements with the final epoch and leaves the group.
"""
from __future__ import annotations

import asyncio
import logging
from typing import NamedTuple

from pylog.core.client.cluster import NetworkClient
from pylog.core.client.fetch_records import decode_batch, scan_records
from pylog.core.client.group_consumer import new_member_id
from pylog.core.client.loop import Closeable, LoopThread
from pylog.core.client.structs import TopicPartition
from pylog.core.config import CONSUMER_CONFIGS
from pylog.core.errors import ErrorCode, KafkaError, UsageError, error_for_code, error_name

log = logging.getLogger("pylog.client.share")

GAP, ACCEPT, RELEASE, REJECT, RENEW = 0, 1, 2, 3, 4
ACK_TYPES = {"accept": ACCEPT, "release": RELEASE, "reject": REJECT, "renew": RENEW}
FINAL_EPOCH = -1
_SESSION_LOST = (ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH)
_REJOIN = (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH)


class ShareRecord(NamedTuple):
    """One record a share consumer acquired, with the times it was delivered."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple
    delivery_count: int


class AcknowledgementError(KafkaError):
    """Acknowledgements the broker refused (per partition: INVALID_RECORD_STATE, ...)."""


def _next_epoch(e: int) -> int:
    return 1 if e >= 0x7FFFFFFF else e + 1


def ack_batches(acks: dict) -> list[dict]:
    """{offset: type} as acknowledgement batches: runs of consecutive offsets, one type per
    offset (a single type when the whole run has one)."""
    out: list[dict] = []
    for off in sorted(acks):
        t = acks[off]
        if out and out[-1]["last_offset"] == off - 1:
            out[-1]["last_offset"] = off
            out[-1]["acknowledge_types"].append(t)
        else:
            out.append({"first_offset": off, "last_offset": off, "acknowledge_types": [t]})
    for b in out:
        if len(set(b["acknowledge_types"])) == 1:
            b["acknowledge_types"] = b["acknowledge_types"][:1]
    return out


class ShareConsumer(Closeable):
    """poll() / acknowledge() / commit_sync() / close() against a share group.

    props: consumer configs (bootstrap.servers, group.id, client.id, max.poll.records, ...)
    plus share.acknowledgement.mode (implicit or explicit).
    """

    def __init__(self, props: dict | None = None, **overrides):
        props = {k: str(v) for k, v in dict(props or {}, **overrides).items()}
        mode = props.pop("share.acknowledgement.mode", "implicit").lower()
        if mode not in ("implicit", "explicit"):
            raise UsageError(f"share.acknowledgement.mode must be implicit or explicit, not {mode!r}")
        self.explicit = mode == "explicit"
        self.config = CONSUMER_CONFIGS.resolve(props)
        self.group_id = self.config["group.id"]
        if not self.group_id:
            raise UsageError("a share consumer needs group.id")
        self.max_records = self.config["max.poll.records"]
        self.member_id = new_member_id()
        self.member_epoch = 0
        self.subscription: list[str] = []
        self.assignment: set = set()  # (topic id, partition)
        self.names: dict = {}  # topic id -> name
        self._sessions: dict[int, int] = {}  # leader node -> next share session epoch
        self._session_parts: dict[int, set] = {}  # leader node -> partitions in the session
        self._acks: dict = {}  # (topic id, partition) -> {offset: type}
        self._in_flight: list[ShareRecord] = []  # the last poll's records (implicit mode)
        self._unacked: set = set()  # (topic id, partition, offset) of the last poll, explicit mode
        self._errors: dict = {}  # TopicPartition -> KafkaError from acknowledgement answers
        self._fatal: KafkaError | None = None
        self.lock_timeout_ms = None
        self._closed = False
        self._loop = LoopThread("pylog-share-consumer")
        self.client = NetworkClient(self.config)
        self.client.allow_auto_create = False
        self._hb_task = None
        self._hb_wake: asyncio.Event | None = None
        self._joined: asyncio.Event | None = None
        self._loop.start_with(self.client.refresh_metadata([]))

    # ---- membership ----------------------------------------------------------------
    def subscribe(self, topics: list[str]) -> None:
        """Join the share group for `topics` (replacing an earlier subscription)."""
        self.subscription = sorted(set(topics))
        self._loop.run(self._subscribe())

    async def _subscribe(self):
        await self.client.refresh_metadata(self.subscription)
        if self._hb_task is None:
            self._hb_wake, self._joined = asyncio.Event(), asyncio.Event()
            self._hb_task = asyncio.ensure_future(self._heartbeat_loop())
        else:
            self._hb_wake.set()

    async def _coordinator(self) -> int:
        resp = await self.client.request_any("FindCoordinator", {
            "key": self.group_id, "key_type": 0, "coordinator_keys": [self.group_id]})
        e = (resp.get("coordinators") or [resp])[0]
        if e.get("error_code"):
            raise error_for_code(e["error_code"], f"FindCoordinator {self.group_id}: {error_name(e['error_code'])}")
        if e["node_id"] not in self.client.metadata.brokers:
            await self.client.refresh_metadata(self.subscription)
        return e["node_id"]

    async def _heartbeat_loop(self):
        coord = None
        sent_subs = None
        while not self._closed:
            interval = 1.0
            try:
                if coord is None:
                    coord = await self._coordinator()
                body = {"group_id": self.group_id, "member_id": self.member_id, "member_epoch": self.member_epoch,
                        "subscribed_topic_names": self.subscription if self.subscription != sent_subs
                        or self.member_epoch == 0 else None}
                r = await self.client.request(coord, "ShareGroupHeartbeat", body)
                code = r["error_code"]
                if code in _REJOIN:
                    self.member_epoch, sent_subs = 0, None
                    continue
                if code in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE,
                            ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
                    coord = None
                elif code:
                    msg = r.get("error_message") or error_name(code)
                    self._fatal = error_for_code(code, f"ShareGroupHeartbeat: {msg}")
                else:
                    sent_subs = self.subscription
                    self.member_epoch = r["member_epoch"]
                    interval = r["heartbeat_interval_ms"] / 1000.0
                    if r["assignment"] is not None:
                        await self._assign(r["assignment"]["topic_partitions"])
                    self._joined.set()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - the broker went away: retry
                log.debug("share heartbeat failed: %s", e)
                coord = None
            self._hb_wake.clear()
            try:
                await asyncio.wait_for(self._hb_wake.wait(), interval)
            except asyncio.TimeoutError:
                pass

    async def _assign(self, tps):
        new = {(t["topic_id"], p) for t in tps for p in t["partitions"]}
        if any(tid not in self.names for tid, _ in new):
            await self.client.refresh_metadata(self.subscription)
        self.names.update({ti.topic_id: n for n, ti in self.client.metadata.topics.items()})
        self.assignment = new

    # ---- acknowledgements ----------------------------------------------------------------
    def acknowledge(self, record: ShareRecord, type: int | str = ACCEPT) -> None:
        """Record how `record` is acknowledged (sent with the next poll or commit); explicit mode."""
        if not self.explicit:
            raise UsageError("acknowledge() needs share.acknowledgement.mode=explicit")
        t = ACK_TYPES[type.lower()] if isinstance(type, str) else int(type)
        if t not in (ACCEPT, RELEASE, REJECT, RENEW):
            raise UsageError(f"unknown acknowledge type {type!r}")
        tid = self._topic_id(record.topic)
        key = (tid, record.partition, record.offset)
        if key not in self._unacked and t != RENEW:
            raise UsageError(f"{record.topic}-{record.partition}@{record.offset} is not in flight")
        self._acks.setdefault((tid, record.partition), {})[record.offset] = t
        if t != RENEW:
            self._unacked.discard(key)

    def _topic_id(self, name: str):
        for tid, n in self.names.items():
            if n == name:
                return tid
        raise UsageError(f"topic {name} is not assigned to this consumer")

    def _implicit_accepts(self) -> None:
        if not self.explicit:
            for r in self._in_flight:
                self._acks.setdefault((self._topic_id(r.topic), r.partition), {}).setdefault(r.offset, ACCEPT)
            self._in_flight = []

    def _take_acks(self, node: int) -> dict:
        out = {}
        for key in list(self._acks):
            if self._leader(key) == node:
                out[key] = self._acks.pop(key)
        return out

    def _leader(self, key) -> int:
        return self.client.metadata.leader_for(self.names.get(key[0], ""), key[1])

    def _note_ack_result(self, tid, p, code, msg) -> None:
        tp = TopicPartition(self.names.get(tid, str(tid)), p)
        if not code:
            self._errors[tp] = None
            return
        e = AcknowledgementError(f"{tp}: {error_name(code)}" + (f": {msg}" if msg else ""))
        e.code = code
        self._errors[tp] = e

    # ---- poll ------------------------------------------------------------------------------
    def poll(self, timeout: float = 1.0) -> list[ShareRecord]:
        """Records acquired for this consumer (waiting up to `timeout` s for some)."""
        if self._fatal is not None:
            raise self._fatal
        if not self.subscription:
            raise UsageError("subscribe() before poll()")
        if self.explicit and self._unacked:
            raise UsageError(f"{len(self._unacked)} records of the last poll are not acknowledged")
        self._implicit_accepts()
        records = self._loop.run(self._poll(timeout), timeout + 60)
        if self.explicit:
            self._unacked = {(self._topic_id(r.topic), r.partition, r.offset) for r in records}
        else:
            self._in_flight = list(records)
        return records

    async def _poll(self, timeout: float) -> list[ShareRecord]:
        if not self.assignment:
            try:
                await asyncio.wait_for(self._joined.wait(), timeout)
            except asyncio.TimeoutError:
                return []
        by_node: dict[int, list] = {}
        for key in sorted(self.assignment, key=lambda k: (str(k[0]), k[1])):
            by_node.setdefault(self._leader(key), []).append(key)
        for node in set(self._session_parts) - set(by_node):  # a leader we no longer read from
            by_node[node] = []
        results = await asyncio.gather(*(self._share_fetch(n, parts, timeout) for n, parts in by_node.items()),
                                       return_exceptions=True)
        out = []
        for r in results:
            if isinstance(r, BaseException):
                log.debug("share fetch failed: %s", r)
                continue
            out += r
        return out

    async def _share_fetch(self, node: int, parts: list, timeout: float) -> list[ShareRecord]:
        epoch = self._sessions.get(node, 0)
        if epoch and any(t == RENEW for k, a in self._acks.items() if self._leader(k) == node for t in a.values()):
            await self._acknowledge(node, final=False)  # renewals go alone: a fetch carrying them fetches nothing
            epoch = self._sessions.get(node, 0)
        acks = self._take_acks(node) if epoch else {}
        have = self._session_parts.get(node, set())
        wanted = set(parts)
        send = sorted(wanted if epoch == 0 else (wanted - have) | set(acks), key=lambda k: (str(k[0]), k[1]))
        forgotten = sorted(have - wanted, key=lambda k: (str(k[0]), k[1])) if epoch else []
        topics: dict = {}
        for tid, p in send:
            topics.setdefault(tid, []).append({"partition_index": p,
                                               "acknowledgement_batches": ack_batches(acks.get((tid, p), {}))})
        fg: dict = {}
        for tid, p in forgotten:
            fg.setdefault(tid, []).append(p)
        body = {"group_id": self.group_id, "member_id": self.member_id, "share_session_epoch": epoch,
                "max_wait_ms": int(timeout * 1000), "min_bytes": 1, "max_bytes": self.config["fetch.max.bytes"],
                "max_records": self.max_records, "batch_size": self.max_records,
                "topics": [{"topic_id": t, "partitions": ps} for t, ps in topics.items()],
                "forgotten_topics_data": [{"topic_id": t, "partitions": ps} for t, ps in fg.items()]}
        r = await self.client.request(node, "ShareFetch", body)
        if r["error_code"] in _SESSION_LOST:
            self._sessions.pop(node, None)
            self._session_parts.pop(node, None)
            for (tid, p) in acks:
                self._note_ack_result(tid, p, r["error_code"], None)
            return []
        if r["error_code"]:
            msg = r.get("error_message") or error_name(r["error_code"])
            raise error_for_code(r["error_code"], f"ShareFetch: {msg}")
        self._sessions[node] = _next_epoch(epoch)
        self._session_parts[node] = wanted
        self.lock_timeout_ms = r.get("acquisition_lock_timeout_ms")
        out = []
        for t in r["responses"]:
            name = self.names.get(t["topic_id"])
            for p in t["partitions"]:
                if (t["topic_id"], p["partition_index"]) in acks:
                    self._note_ack_result(t["topic_id"], p["partition_index"], p["acknowledge_error_code"],
                                          p.get("acknowledge_error_message"))
                if p["error_code"] or not p["acquired_records"] or name is None:
                    continue
                out += self._records(t["topic_id"], name, p)
        return out

    def _records(self, tid, name: str, p: dict) -> list[ShareRecord]:
        idx = p["partition_index"]
        ranges = [(a["first_offset"], a["last_offset"], a["delivery_count"]) for a in p["acquired_records"]]
        first = ranges[0][0]
        batches, _, _ = scan_records(TopicPartition(name, idx), p["records"], first, check_crcs=True)
        want = {}
        for f, la, c in ranges:
            for off in range(f, la + 1):
                want[off] = c
        out = []
        for part in batches:
            for rec in decode_batch(name, part, first):
                c = want.pop(rec.offset, None)
                if c is not None:
                    out.append(ShareRecord(name, idx, rec.offset, rec.timestamp, rec.key, rec.value, rec.headers, c))
        if want:  # acquired offsets without a record (control batches, compaction): acknowledged as gaps
            self._acks.setdefault((tid, idx), {}).update({off: GAP for off in want})
        return out

    # ---- commits and close -----------------------------------------------------------------------
    def commit_sync(self, timeout: float = 30.0) -> dict:
        """Send the acknowledgements due now and wait: {TopicPartition: None or AcknowledgementError}."""
        self._implicit_accepts()
        self._errors = {}
        self._loop.run(self._commit(final=False), timeout)
        return dict(self._errors)

    def commit_async(self) -> None:
        """Send the acknowledgements due now without waiting (their result: the next commit_sync)."""
        self._implicit_accepts()
        self._loop.submit(self._commit(final=False))

    async def _commit(self, final: bool) -> None:
        nodes = {self._leader(k) for k in self._acks} | (set(self._sessions) if final else set())
        await asyncio.gather(*(self._acknowledge(n, final) for n in nodes), return_exceptions=True)

    async def _acknowledge(self, node: int, final: bool) -> None:
        epoch = self._sessions.get(node, 0)
        acks = self._take_acks(node)
        if not epoch:
            for tid, p in acks:
                self._note_ack_result(tid, p, ErrorCode.SHARE_SESSION_NOT_FOUND, "no share session with the leader")
            return
        topics: dict = {}
        for (tid, p), a in acks.items():
            topics.setdefault(tid, []).append({"partition_index": p, "acknowledgement_batches": ack_batches(a)})
        # a request carrying RENEW says so (KIP-1222); a broker refuses one that does not
        renew_only = any(t == RENEW for a in acks.values() for t in a.values())
        try:
            r = await self.client.request(node, "ShareAcknowledge", {
                "group_id": self.group_id, "member_id": self.member_id,
                "share_session_epoch": FINAL_EPOCH if final else epoch, "is_renew_ack": renew_only,
                "topics": [{"topic_id": t, "partitions": ps} for t, ps in topics.items()]})
        except Exception as e:  # noqa: BLE001 - no answer: these acknowledgements are not known to count
            for tid, p in acks:
                self._note_ack_result(tid, p, ErrorCode.NETWORK_EXCEPTION, str(e) or type(e).__name__)
            raise
        if final:
            self._sessions.pop(node, None)
            self._session_parts.pop(node, None)
        elif r["error_code"] in _SESSION_LOST:
            self._sessions.pop(node, None)
            self._session_parts.pop(node, None)
        else:
            self._sessions[node] = _next_epoch(epoch)
        for t in r["responses"]:
            for p in t["partitions"]:
                self._note_ack_result(t["topic_id"], p["partition_index"], p["error_code"], p.get("error_message"))
        if r["error_code"]:
            for tid, p in acks:
                self._note_ack_result(tid, p, r["error_code"], r.get("error_message"))

    def close(self) -> None:
        """Send the last acknowledgements (closing the share sessions) and leave the group."""
        if self._closed:
            return
        self._implicit_accepts()
        self._closed = True
        self._loop.close_with(self._close(), 30)

    async def _close(self):
        try:
            await self._commit(final=True)
            if self._hb_task is not None:
                self._hb_task.cancel()
                if self.member_epoch > 0:
                    coord = await self._coordinator()
                    await self.client.request(coord, "ShareGroupHeartbeat", {
                        "group_id": self.group_id, "member_id": self.member_id, "member_epoch": FINAL_EPOCH})
        except Exception as e:  # noqa: BLE001 - leaving is best effort: the session times out
            log.debug("share consumer close: %s", e)
        await self.client.close()
