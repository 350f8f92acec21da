"""Consumer-group membership for pylog's consumer (Kafka's classic protocol).

    consumer = Consumer({"bootstrap.servers": ..., "group.id": "g"})
    attach_group(consumer, on_assign=..., on_revoke=...)
    consumer.subscribe(["orders", "^audit-.*"])   # a leading ^ makes a regex, as in librdkafka
    while True:
        records = consumer.poll(500)

`GroupMembership` implements the consumer's `GroupHooks`: every poll() first
finds the coordinator (FindCoordinator, on a connection of its own so a parked
JoinGroup never waits behind a fetch), joins and syncs when needed (the member
id handshake, the leader running the assignor the group chose), and runs
auto-commit. A background task on the client's loop heartbeats every
`heartbeat.interval.ms` and leaves the group when the application has not
polled for `max.poll.interval.ms`.

Error handling follows the consumer error tables: COORDINATOR_NOT_AVAILABLE,
NOT_COORDINATOR or a lost connection -> rediscover the coordinator;
REBALANCE_IN_PROGRESS -> rejoin; ILLEGAL_GENERATION / UNKNOWN_MEMBER_ID ->
the partitions are lost, rejoin (with a new member id for the latter);
COORDINATOR_LOAD_IN_PROGRESS -> retry; FENCED_INSTANCE_ID -> fatal.

Rebalance protocols: eager when any configured assignor is eager (everything
is revoked before JoinGroup, after committing consumed positions when
auto-commit is on), cooperative when all are cooperative-sticky (only the
partitions that move are revoked, then the member rejoins at once).

Listener callbacks run on the client's loop thread inside poll(); they may be
plain functions or coroutines; to commit from one, `await membership.commit(...)`.
"""
from __future__ import annotations

import asyncio
import inspect
import logging
import re
import time

from pylog.core.client.assignors import COOPERATIVE, MemberSubscription, assignors_for
from pylog.core.client.connection import BrokerConnection
from pylog.core.client.consumer import GroupHooks, TopicPartition
from pylog.core.client.subscription import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from pylog.core.client.errors import ConnectionFailedError, KafkaTimeoutError
from pylog.core.client.group_offsets import (  # noqa: F401 - CommitFailedError re-exported
    COORDINATOR_ERRORS, CommitFailedError, CoordinatorGone, GroupOffsets,
)
from pylog.core.errors import ErrorCode, UsageError, error_for_code, error_name

log = logging.getLogger(__name__)

JOIN_WAIT_S = 0.05  # how long one poll() waits for a join in progress before fetching on


def call_listener(fn, partitions):
    if fn is None:
        return None
    res = fn(list(partitions))
    return res if inspect.isawaitable(res) else None


class GroupMembership(GroupOffsets, GroupHooks):
    def __init__(self, consumer, *, on_assign=None, on_revoke=None, on_lost=None):
        self.consumer = consumer
        self.engine = consumer.engine
        cfg = consumer.config
        self.config = cfg
        self.group_id = cfg["group.id"]
        if not self.group_id:
            raise UsageError("consumer groups need group.id")
        self.instance_id = cfg.get("group.instance.id")
        self.assignors = assignors_for(cfg["partition.assignment.strategy"])
        self.protocol_kind = COOPERATIVE if all(a.rebalance_protocol == COOPERATIVE for a in self.assignors) \
            else "eager"
        self.session_ms = cfg["session.timeout.ms"]
        self.heartbeat_s = cfg["heartbeat.interval.ms"] / 1000.0
        self.max_poll_s = cfg["max.poll.interval.ms"] / 1000.0
        self.auto_commit = cfg["enable.auto.commit"]
        self.auto_commit_s = cfg["auto.commit.interval.ms"] / 1000.0
        self.backoff_s = cfg["retry.backoff.ms"] / 1000.0
        self.api_timeout_s = cfg["default.api.timeout.ms"] / 1000.0
        self.on_assign, self.on_revoke, self.on_lost = on_assign, on_revoke, on_lost
        self.coordinator: BrokerConnection | None = None
        self.member_id = ""
        self.generation = -1
        self.protocol: str | None = None
        self.leader = ""
        self.stable = False
        self.need_rejoin = True
        self.lost = False
        self.owned: list[TopicPartition] = []
        self.joined_topics: list[str] = []
        self.last_poll = time.monotonic()
        self.next_auto_commit = time.monotonic() + self.auto_commit_s
        self.closed = False
        self.rebalances = 0
        self._hb_task = None
        self._join_task = None
        self._join_error: BaseException | None = None
        self._commit_task = None
        self._join_lock: asyncio.Lock | None = None
        self._pattern_checked = 0.0

    # ================================================================ subscription
    def _patterns(self):
        subs = self.engine.subscription or []
        pats = [s if isinstance(s, re.Pattern) else re.compile(s) for s in subs
                if isinstance(s, re.Pattern) or (isinstance(s, str) and s.startswith("^"))]
        names = [s for s in subs if isinstance(s, str) and not s.startswith("^")]
        return names, pats

    async def _subscribed_topics(self) -> list[str]:
        names, pats = self._patterns()
        topics = set(names)
        if pats:
            md = await self.engine.client.refresh_metadata(all_topics=True)
            skip_internal = self.config["exclude.internal.topics"]
            for t, info in md.topics.items():
                if skip_internal and (info.internal or t.startswith("__")):
                    continue
                if any(p.match(t) for p in pats):
                    topics.add(t)
            self._pattern_checked = time.monotonic()
        return sorted(topics)

    # ================================================================ coordinator
    async def _ensure_coordinator(self, timeout_s: float | None = None) -> BrokerConnection:
        if self.coordinator is not None and self.coordinator.connected:
            return self.coordinator
        deadline = time.monotonic() + (timeout_s if timeout_s is not None else self.api_timeout_s)
        last = None
        while True:
            try:
                resp = await self.engine.client.request_any("FindCoordinator", {
                    "key": self.group_id, "key_type": 0, "coordinator_keys": [self.group_id]})
                entry = (resp.get("coordinators") or [resp])[0]
                code = entry.get("error_code", 0)
                if code:
                    last = error_for_code(code, f"FindCoordinator: {error_name(code)}")
                    if code not in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
                        raise last
                else:
                    conn = BrokerConnection(entry["host"], entry["port"], client_id=self.engine.client.client_id,
                                            node_id=entry["node_id"],
                                            request_timeout_ms=self.config["request.timeout.ms"],
                                            security=self.engine.client.security)
                    await conn.connect()
                    self.coordinator = conn
                    log.debug("group %s: coordinator %s:%s", self.group_id, entry["host"], entry["port"])
                    return conn
            except (ConnectionFailedError, KafkaTimeoutError, OSError) as e:
                last = e
            if time.monotonic() >= deadline:
                raise KafkaTimeoutError(f"no coordinator for group {self.group_id}: {last}")
            await asyncio.sleep(self.backoff_s)

    def _coordinator_dead(self, why) -> None:
        if self.coordinator is not None:
            log.info("group %s: marking the coordinator dead (%s)", self.group_id, why)
            c, self.coordinator = self.coordinator, None
            asyncio.get_running_loop().create_task(c.close())

    async def _request(self, api: str, body: dict, timeout: float | None = None) -> dict:
        conn = await self._ensure_coordinator()
        try:
            return await conn.request(api, body, timeout=timeout)
        except (ConnectionFailedError, KafkaTimeoutError) as e:
            self._coordinator_dead(e)
            raise CoordinatorGone(str(e)) from None

    # ================================================================ GroupHooks
    async def poll(self, consumer) -> None:
        if not self._begin_poll():
            return
        if self._join_lock is None:
            self._join_lock = asyncio.Lock()
        if self.lost:
            await self._lose_partitions()
        names, pats = self._patterns()
        if pats and time.monotonic() - self._pattern_checked > self.config["metadata.max.age.ms"] / 1000.0:
            if await self._subscribed_topics() != self.joined_topics:
                self.need_rejoin = True
        elif not pats and sorted(names) != self.joined_topics:
            self.need_rejoin = True
        if self._join_error is not None:
            e, self._join_error = self._join_error, None
            raise e
        if self.need_rejoin or self.generation < 0:
            # the join runs as its own task, as Kafka's JoinGroup stays in flight across polls: a
            # poll() returns at its timeout even while the group waits for other members
            if self._join_task is None or self._join_task.done():
                self._join_task = asyncio.get_running_loop().create_task(self._join_in_background())
            await asyncio.wait({self._join_task}, timeout=JOIN_WAIT_S)
            if not self._join_task.done():
                return
        if self._hb_task is None or self._hb_task.done():
            self._hb_task = asyncio.get_running_loop().create_task(self._heartbeat_loop())
        if self.auto_commit and self.stable and time.monotonic() >= self.next_auto_commit:
            self.next_auto_commit = time.monotonic() + self.auto_commit_s
            self.commit_async()

    async def _lose_partitions(self) -> None:
        self.lost = False
        if self.owned:
            lost, self.owned = self.owned, []
            log.info("group %s: partitions lost: %s", self.group_id, ", ".join(map(str, lost)))
            aw = call_listener(self.on_lost or self.on_revoke, lost)
            if aw is not None:
                await aw
            self.engine.set_assignment([])

    async def _revoke(self, partitions) -> None:
        if not partitions:
            return
        if self.auto_commit:
            await self._commit_positions(partitions)
        aw = call_listener(self.on_revoke, partitions)
        if aw is not None:
            await aw

    async def _commit_positions(self, partitions) -> None:
        offsets = self.positions(partitions)
        if not offsets:
            return
        try:
            await self.commit(offsets)
        except Exception as e:  # noqa: BLE001 - as in Kafka: a failed commit before revocation is logged
            log.warning("group %s: commit before revocation failed: %s", self.group_id, e)

    def positions(self, partitions=None) -> dict:
        pos = self.engine.positions
        tps = partitions if partitions is not None else self.owned
        return {tp: (pos[tp][0], pos[tp][1], "") for tp in tps if tp in pos}

    # ================================================================ join / sync
    async def _join_in_background(self) -> None:
        try:
            await self._join()
        except asyncio.CancelledError:
            raise
        except (CoordinatorGone, KafkaTimeoutError, ConnectionFailedError) as e:
            log.info("group %s: join failed, retrying at the next poll: %s", self.group_id, e)
        except Exception as e:  # noqa: BLE001 - fatal (fenced, inconsistent protocol): raised by poll()
            self._join_error = e
        finally:
            ev = getattr(self.engine, "_event", None)
            if ev is not None:
                ev.set()  # a poll() waiting for records sees the new assignment now

    async def _join(self) -> None:
        async with self._join_lock:
            deadline = time.monotonic() + self.api_timeout_s
            while not self.closed:
                if self.lost:
                    await self._lose_partitions()
                if self.protocol_kind != COOPERATIVE and self.owned:
                    revoked, self.owned = self.owned, []
                    await self._revoke(revoked)
                    self.engine.set_assignment([])
                try:
                    if await self._join_once():
                        return
                except CoordinatorGone:
                    pass
                if time.monotonic() >= deadline:
                    raise KafkaTimeoutError(f"could not join group {self.group_id} in "
                                            f"{int(self.api_timeout_s * 1000)} ms")
                await asyncio.sleep(self.backoff_s)

    def _protocols(self, topics) -> list[dict]:
        owned = [(tp.topic, tp.partition) for tp in self.owned]
        rack = self.config.get("client.rack") or None
        return [{"name": a.name, "metadata": encode_subscription(Subscription(
            topics, a.subscription_user_data(self.generation), owned, self.generation, rack))}
            for a in self.assignors]

    async def _join_once(self) -> bool:
        """One JoinGroup + SyncGroup round; False when it must be retried."""
        topics = await self._subscribed_topics()
        self.stable = False
        self.need_rejoin = True
        body = {
            "group_id": self.group_id, "session_timeout_ms": self.session_ms,
            "rebalance_timeout_ms": int(self.max_poll_s * 1000), "member_id": self.member_id,
            "group_instance_id": self.instance_id, "protocol_type": "consumer",
            "protocols": self._protocols(topics), "reason": None,
        }
        resp = await self._request("JoinGroup", body, timeout=self.max_poll_s + 5.0)
        code = resp.get("error_code", 0)
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = resp.get("member_id") or ""
            body["member_id"] = self.member_id
            resp = await self._request("JoinGroup", body, timeout=self.max_poll_s + 5.0)
            code = resp.get("error_code", 0)
        if code:
            return self._join_failed("JoinGroup", code)
        self.member_id = resp["member_id"]
        self.generation = resp["generation_id"]
        self.protocol = resp.get("protocol_name")
        self.leader = resp.get("leader") or ""
        assignments = []
        if self.leader == self.member_id and not resp.get("skip_assignment"):
            assignments = await self._lead(resp.get("members") or [])
        resp = await self._request("SyncGroup", {
            "group_id": self.group_id, "generation_id": self.generation, "member_id": self.member_id,
            "group_instance_id": self.instance_id, "protocol_type": "consumer", "protocol_name": self.protocol,
            "assignments": assignments}, timeout=self.max_poll_s + 5.0)
        code = resp.get("error_code", 0)
        if code:
            return self._join_failed("SyncGroup", code)
        assignment = decode_assignment(resp.get("assignment") or b"")
        new = [TopicPartition(t, p) for t, p in assignment.partitions]
        self.joined_topics = topics
        self.rebalances += 1
        await self._install(new)
        return True

    def _join_failed(self, what: str, code: int) -> bool:
        name = error_name(code)
        log.info("group %s: %s failed: %s", self.group_id, what, name)
        if code == ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id = ""
            self.generation = -1
            self.lost = bool(self.owned)
        elif code == ErrorCode.ILLEGAL_GENERATION:
            self.generation = -1
            self.lost = bool(self.owned)
        elif code in COORDINATOR_ERRORS:
            self._coordinator_dead(name)
        elif code in (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
            pass
        else:
            raise error_for_code(code, f"{what} for group {self.group_id}: {name}")
        return False

    async def _lead(self, members: list) -> list:
        subs = {}
        for m in members:
            try:
                sub = decode_subscription(m.get("metadata") or b"")
            except Exception as e:  # noqa: BLE001 - a member we cannot read gets nothing
                log.warning("group %s: unreadable subscription of %s: %s", self.group_id, m.get("member_id"), e)
                sub = Subscription([])
            subs[m["member_id"]] = MemberSubscription(m["member_id"], sub, m.get("group_instance_id"))
        topics = sorted({t for s in subs.values() for t in s.topics})
        counts = {}
        if topics:
            md = await self.engine.client.refresh_metadata(topics)
            for t in topics:
                info = md.topics.get(t)
                if info is not None and info.error_code == ErrorCode.NONE and info.partitions:
                    counts[t] = len(info.partitions)
        assignor = next((a for a in self.assignors if a.name == self.protocol), None)
        if assignor is None:
            raise error_for_code(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"group {self.group_id} chose assignor {self.protocol!r}, "
                                     "which this consumer does not have")
        result = assignor.assign(subs, counts)
        log.debug("group %s: leader assigned %s", self.group_id, result)
        return [{"member_id": mid, "assignment": encode_assignment(Assignment(tps))} for mid, tps in result.items()]

    async def _install(self, new: list) -> None:
        old = set(self.owned)
        newset = set(new)
        if self.protocol_kind == COOPERATIVE:
            revoked = [tp for tp in self.owned if tp not in newset]
            if revoked:
                await self._revoke(revoked)
        added = [tp for tp in new if tp not in old]
        self.owned = list(new)
        self.engine.set_assignment(new)
        self.stable = True
        self.need_rejoin = False
        if self.protocol_kind == COOPERATIVE and any(tp not in newset for tp in old):
            self.need_rejoin = True  # KIP-429: rejoin so the revoked partitions find their new owner
        log.info("group %s: generation %d, member %s, assigned %s", self.group_id, self.generation, self.member_id,
                 ", ".join(map(str, new)) or "nothing")
        aw = call_listener(self.on_assign, added if self.protocol_kind == COOPERATIVE else new)
        if aw is not None:
            await aw

    # ================================================================ heartbeats
    async def _heartbeat_loop(self) -> None:
        try:
            while not self.closed:
                await asyncio.sleep(self.heartbeat_s)
                if self.closed:
                    return
                if time.monotonic() - self.last_poll > self.max_poll_s and self.generation >= 0:
                    log.warning("group %s: poll() not called for more than max.poll.interval.ms (%d ms); "
                                "leaving the group", self.group_id, int(self.max_poll_s * 1000))
                    # lost before the LeaveGroup is sent: a poll() while it is in flight must not
                    # hand out records of partitions the group has already given up
                    self.lost = bool(self.owned)
                    self.need_rejoin = True
                    await self._leave("consumer poll timeout has expired")
                    continue
                if not self.stable or self.generation < 0 or self._join_lock.locked():
                    continue
                try:
                    resp = await self._request("Heartbeat", {
                        "group_id": self.group_id, "generation_id": self.generation, "member_id": self.member_id,
                        "group_instance_id": self.instance_id})
                except CoordinatorGone:
                    self.need_rejoin = True
                    continue
                except Exception as e:  # noqa: BLE001
                    log.debug("heartbeat failed: %s", e)
                    continue
                code = resp.get("error_code", 0)
                if not code:
                    continue
                log.info("group %s: heartbeat: %s", self.group_id, error_name(code))
                if code == ErrorCode.REBALANCE_IN_PROGRESS:
                    self.need_rejoin = True
                elif code in (ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
                    if code == ErrorCode.UNKNOWN_MEMBER_ID:
                        self.member_id = ""
                    self.generation = -1
                    self.stable = False
                    self.lost = bool(self.owned)
                    self.need_rejoin = True
                elif code in COORDINATOR_ERRORS:
                    self._coordinator_dead(error_name(code))
                    self.need_rejoin = True
                ev = getattr(self.engine, "_event", None)
                if ev is not None:
                    ev.set()  # let a waiting poll() see the rebalance now
        except asyncio.CancelledError:
            pass

    async def _leave(self, reason: str) -> None:
        if self.generation < 0 and not self.member_id:
            return
        mid = self.member_id
        self.generation = -1
        self.stable = False
        if self.instance_id is not None:
            return  # static members leave by session timeout, keeping their assignment across restarts
        self.member_id = ""
        try:
            await self._request("LeaveGroup", {"group_id": self.group_id, "member_id": mid, "members": [
                {"member_id": mid, "group_instance_id": None, "reason": reason}]}, timeout=5.0)
        except Exception as e:  # noqa: BLE001
            log.debug("LeaveGroup failed: %s", e)

    async def close(self, consumer) -> None:
        if self.closed:
            return
        if self._join_task is not None and not self._join_task.done():
            self._join_task.cancel()
        try:
            if self.generation >= 0 and self.owned:
                await self._revoke(list(self.owned))  # commits consumed positions when auto-commit is on
            if self._commit_task is not None and not self._commit_task.done():
                await asyncio.wait([self._commit_task], timeout=5)
            await self._leave("the consumer is being closed")
        finally:
            await self._shut_down()

    def _begin_poll(self) -> bool:
        """Note the application's poll (max.poll.interval.ms); False when closed or not subscribed."""
        self.last_poll = time.monotonic()
        return not (self.closed or self.engine.subscription is None)

    async def _shut_down(self) -> None:
        """Mark closed, stop heartbeating and drop the coordinator connection (the end of every close)."""
        self.closed = True
        if self._hb_task is not None:
            self._hb_task.cancel()
        if self.coordinator is not None:
            await self.coordinator.close()
            self.coordinator = None
