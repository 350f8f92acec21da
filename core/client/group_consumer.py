"""Consumer-group membership with the KIP-848 protocol (`group.protocol=consumer`).

    consumer = Consumer({"bootstrap.servers": ..., "group.id": "g", "group.protocol": "consumer"})
    attach_group(consumer, on_assign=..., on_revoke=...)   # membership.attach_group picks this class
    consumer.subscribe(["orders", "^audit-.*"])

The broker computes the assignment; the member only heartbeats
(ConsumerGroupHeartbeat) and reconciles. A background task on the client's loop
sends a heartbeat every `heartbeat_interval_ms` the broker chose (at once after
joining, after a reconciliation and when leaving). Each answer carries the member
epoch and, when it changed, the member's target assignment (topic ids).

Reconciliation runs inside poll(), as the Java client runs its callbacks there:
partitions leaving the target are revoked first (their consumed positions are
committed when auto-commit is on, then `on_revoke` runs and they stop being
fetched), then the new ones are added and `on_assign` runs; the next heartbeat
reports what the member owns, and the broker gives revoked partitions to their
new owner only after that.

Errors follow the Java client's heartbeat manager: FENCED_MEMBER_EPOCH and
UNKNOWN_MEMBER_ID lose the partitions (`on_lost`, nothing committed) and rejoin
with epoch 0 under the same member id; coordinator errors rediscover the
coordinator; COORDINATOR_LOAD_IN_PROGRESS retries; UNRELEASED_INSTANCE_ID,
UNSUPPORTED_ASSIGNOR, INVALID_REQUEST, GROUP_MAX_SIZE_REACHED and authorization
errors are fatal and raised from poll(). Leaving sends member epoch -1 (a static
member, `group.instance.id`, sends -2 so it keeps its assignment while it restarts).
Commits carry the member id and epoch; STALE_MEMBER_EPOCH is retried with the
epoch of the next heartbeat.
"""
from __future__ import annotations

import asyncio
import logging
import time

from pylog.core import protocol
from pylog.core.client.consumer import TopicPartition
from pylog.core.client.group import GroupMembership, call_listener, CoordinatorGone
from pylog.core.client.errors import ConnectionFailedError, KafkaTimeoutError
from pylog.core.errors import ErrorCode, UnsupportedVersionError, UsageError, error_for_code, error_name
from pylog.core.records.kafka_types import random_uuid, uuid_text

log = logging.getLogger(__name__)

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
STATIC_LEAVE_EPOCH = -2

_COORDINATOR_ERRORS = {ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR, ErrorCode.REQUEST_TIMED_OUT}
_EPOCH_APIS = ("OffsetCommit", "OffsetFetch")
_NEWEST_BY_NAME = 9  # OffsetCommit/OffsetFetch v10 address topics by id
_FENCED = {ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID}

# Options of the classic protocol the broker owns under KIP-848: the Java client refuses them.
CLASSIC_ONLY = ("session.timeout.ms", "heartbeat.interval.ms", "partition.assignment.strategy")


def new_member_id() -> str:
    """A member id the client generates itself (KIP-1082), as Kafka's Uuid prints: 22 base64url chars."""
    return uuid_text(random_uuid())


def subscription_regex(patterns: list[str]) -> str | None:
    """librdkafka-style `^...` subscriptions as one SubscribedTopicRegex (the broker full-matches it)."""
    if not patterns:
        return None
    if len(patterns) == 1:
        return patterns[0]
    return "|".join(f"(?:{p})" for p in patterns)


class ConsumerGroupMember(GroupMembership):
    """`GroupHooks` for `group.protocol=consumer`: heartbeat, reconcile, commit with member epochs."""

    def __init__(self, consumer, *, on_assign=None, on_revoke=None, on_lost=None):
        overridden = getattr(consumer.config, "overridden", set()) or set()
        bad = [k for k in CLASSIC_ONLY if k in overridden]
        if bad:
            raise UsageError(f"{bad[0]} is not supported when group.protocol=consumer "
                             "(the broker decides it; see group.consumer.* broker settings)")
        super().__init__(consumer, on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
        self.member_id = new_member_id()
        self.member_epoch = JOIN_EPOCH
        self.generation = -1  # the classic name: commit() uses it as the member epoch (see _commit_member)
        self.remote_assignor = self.config.get("group.remote.assignor") or None
        self.rack = self.config.get("client.rack") or None
        self.heartbeat_s = 0.0  # the broker says; heartbeat at once until then
        self.target: dict | None = None  # {topic_id: [partitions]} of the latest assignment received
        self.target_epoch = -1
        self.pending_unknown: set = set()  # topic ids the metadata does not know yet
        self.fatal: BaseException | None = None
        self.fenced = False
        self.left = False  # left after max.poll.interval.ms: rejoin at the next poll
        self._wake: asyncio.Event | None = None
        self._hb_in_flight = False

    # ================================================================ GroupHooks
    async def poll(self, consumer) -> None:
        if not self._begin_poll():
            return
        if self._wake is None:
            self._wake = asyncio.Event()
        if self.fatal is not None:
            e, self.fatal = self.fatal, None
            raise e
        if self.fenced:
            await self._fence()
        if self.lost:
            await self._lose_partitions()
        if self.left:
            self.left = False
            self.member_epoch = JOIN_EPOCH
            self._wake.set()
        if self._hb_task is None or self._hb_task.done():
            self._hb_task = asyncio.get_running_loop().create_task(self._heartbeat_loop())
            await self._wait_first_answer()
        await self._reconcile()
        if self.auto_commit and self.stable and time.monotonic() >= self.next_auto_commit:
            self.next_auto_commit = time.monotonic() + self.auto_commit_s
            self.commit_async()

    async def _wait_first_answer(self) -> None:
        # the first poll waits briefly for the join answer, so a consumer's first
        # poll usually already has partitions (as the classic protocol's JOIN_WAIT_S)
        deadline = time.monotonic() + 0.5
        while self.member_epoch <= 0 and self.fatal is None and time.monotonic() < deadline:
            await asyncio.sleep(0.01)

    async def _fence(self) -> None:
        """Fenced: the partitions are already another member's; give them up uncommitted, rejoin."""
        self.fenced = False
        self.member_epoch = JOIN_EPOCH
        self.generation = -1
        self.stable = False
        self.target = None
        await self._lose_partitions()
        if self._wake is not None:
            self._wake.set()

    # ================================================================ reconciliation
    def _names_by_id(self) -> dict:
        return {t.topic_id: name for name, t in self.engine.client.metadata.topics.items()}

    async def _reconcile(self) -> None:
        if self.target is None or self.member_epoch <= 0:
            return
        target, epoch = self.target, self.target_epoch
        names = self._names_by_id()
        if any(tid not in names for tid in target):
            await self.engine.client.refresh_metadata(all_topics=True)
            names = self._names_by_id()
        unknown = {tid for tid in target if tid not in names}
        if unknown:
            # a topic created a moment ago: the metadata will know it soon; reconcile what we can
            log.debug("group %s: assignment names unknown topic ids %s", self.group_id, unknown)
        want = [TopicPartition(names[tid], p) for tid, ps in target.items() if tid in names for p in sorted(ps)]
        wantset = set(want)
        owned = set(self.owned)
        revoked = [tp for tp in self.owned if tp not in wantset]
        added = [tp for tp in want if tp not in owned]
        if not revoked and not added:
            if not unknown:
                self.target = None if self.target is target else self.target
                self.stable = True
            return
        if revoked:
            # revoke first: commit what was consumed, tell the application, stop fetching
            await self._revoke(revoked)
            self.owned = [tp for tp in self.owned if tp in wantset]
            self.engine.set_assignment(self.owned)
            log.info("group %s: member %s epoch %d, revoked %s", self.group_id, self.member_id, epoch, ", ".join(map(str, revoked)))
        if self.target is not target:
            return  # a newer target arrived while revoking: reconcile against it next poll
        if added:
            self.owned = self.owned + added
            self.engine.set_assignment(self.owned)
            log.info("group %s: member %s epoch %d, assigned %s", self.group_id, self.member_id, epoch, ", ".join(map(str, added)))
            aw = call_listener(self.on_assign, added)
            if aw is not None:
                await aw
        self.rebalances += 1
        self.stable = not unknown
        if self.target is target and not unknown:
            self.target = None
        self._wake.set()  # acknowledge at once: the broker waits for our owned partitions

    # ================================================================ heartbeats
    def _subscription_fields(self) -> dict:
        names, pats = self._patterns()
        return {"subscribed_topic_names": sorted(names),
                "subscribed_topic_regex": subscription_regex([p.pattern for p in pats])}

    def _heartbeat_body(self, epoch: int) -> dict:
        body = {"group_id": self.group_id, "member_id": self.member_id, "member_epoch": epoch,
                "instance_id": self.instance_id}
        if epoch < 0:
            return body
        by_id = {name: t.topic_id for name, t in self.engine.client.metadata.topics.items()}
        owned: dict = {}
        # a (re)joining member owns nothing as far as the broker is concerned
        for tp in (self.owned if epoch > 0 else ()):
            tid = by_id.get(tp.topic)
            if tid is not None:
                owned.setdefault(tid, []).append(tp.partition)
        # Every heartbeat carries the whole member state (the broker accepts unchanged values),
        # so a lost answer never leaves the broker with a stale view.
        body.update(self._subscription_fields())
        body.update({"rack_id": self.rack, "rebalance_timeout_ms": int(self.max_poll_s * 1000),
                     "server_assignor": self.remote_assignor,
                     "topic_partitions": [{"topic_id": t, "partitions": sorted(ps)} for t, ps in owned.items()]})
        return body

    async def _heartbeat_loop(self) -> None:
        try:
            while not self.closed:
                if self._wake.is_set() or self.heartbeat_s <= 0:
                    self._wake.clear()
                else:
                    try:
                        await asyncio.wait_for(self._wake.wait(), self.heartbeat_s)
                    except asyncio.TimeoutError:
                        pass
                    self._wake.clear()
                if self.closed:
                    return
                if self.member_epoch > 0 and time.monotonic() - self.last_poll > self.max_poll_s:
                    log.warning("group %s: poll() not called for more than max.poll.interval.ms (%d ms); "
                                "leaving the group", self.group_id, int(self.max_poll_s * 1000))
                    await self._send_leave()
                    self.lost = bool(self.owned)
                    self.left = True
                    continue
                if self.left or self.fenced or self.fatal is not None:
                    await asyncio.sleep(self.backoff_s)
                    continue
                await self._heartbeat_once()
        except asyncio.CancelledError:
            pass

    async def _heartbeat_once(self) -> None:
        epoch = self.member_epoch
        try:
            self._hb_in_flight = True
            resp = await self._request("ConsumerGroupHeartbeat", self._heartbeat_body(epoch))
        except CoordinatorGone:
            await asyncio.sleep(self.backoff_s)
            self._wake.set()
            return
        except (ConnectionFailedError, KafkaTimeoutError, OSError) as e:
            log.info("group %s: heartbeat failed: %s", self.group_id, e)
            await asyncio.sleep(self.backoff_s)
            self._wake.set()
            return
        except UnsupportedVersionError as e:
            self.fatal = UnsupportedVersionError(
                f"{e}: the broker does not serve the KIP-848 consumer group protocol; "
                "use group.protocol=classic")
            self._notify()
            return
        except Exception as e:  # noqa: BLE001 - fatal (e.g. an undecodable answer), raised by poll()
            self.fatal = e
            self._notify()
            return
        finally:
            self._hb_in_flight = False
        code = resp.get("error_code", 0)
        if code:
            self._heartbeat_failed(code, resp.get("error_message"))
            await asyncio.sleep(self.backoff_s)
            return
        if resp.get("member_id"):
            self.member_id = resp["member_id"]
        new_epoch = resp.get("member_epoch", -1)
        if new_epoch != self.member_epoch:
            log.debug("group %s: member epoch %d -> %d", self.group_id, self.member_epoch, new_epoch)
        self.member_epoch = new_epoch
        self.generation = new_epoch
        self.heartbeat_s = max(resp.get("heartbeat_interval_ms", 0), 0) / 1000.0 or self.backoff_s
        assignment = resp.get("assignment")
        if assignment is not None:
            target: dict = {}
            for t in assignment.get("topic_partitions") or []:
                target.setdefault(t["topic_id"], set()).update(t["partitions"])
            self.target = target
            self.target_epoch = new_epoch
            self.stable = False
            self._notify()

    def _notify(self) -> None:
        ev = getattr(self.engine, "_event", None)
        if ev is not None:
            ev.set()  # a poll() waiting for records reconciles now

    def _heartbeat_failed(self, code: int, message: str | None) -> None:
        name = error_name(code)
        log.info("group %s: heartbeat: %s%s", self.group_id, name, f" ({message})" if message else "")
        if code in _FENCED:
            self.fenced = True
            self._notify()
        elif code in _COORDINATOR_ERRORS:
            self._coordinator_dead(name)
            self._wake.set()
        elif code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
            self._wake.set()  # retried after the backoff
        else:
            what = f"ConsumerGroupHeartbeat for group {self.group_id}: {name}"
            if code == ErrorCode.UNRELEASED_INSTANCE_ID:
                what += (f" (group.instance.id {self.instance_id} is still held by a member that has not "
                         "left; it is released when that member's session times out)")
            self.fatal = error_for_code(code, what + (f": {message}" if message else ""))
            self._notify()

    async def _send_leave(self) -> None:
        epoch = STATIC_LEAVE_EPOCH if self.instance_id is not None else LEAVE_EPOCH
        if self.member_epoch <= 0 and not self.owned:
            self.member_epoch = JOIN_EPOCH
            return
        try:
            await self._request("ConsumerGroupHeartbeat", self._heartbeat_body(epoch), timeout=5.0)
        except Exception as e:  # noqa: BLE001 - the session timeout removes us anyway
            log.debug("group %s: leave heartbeat failed: %s", self.group_id, e)
        self.member_epoch = JOIN_EPOCH
        self.generation = -1
        self.stable = False
        self.target = None

    # ================================================================ offsets
    async def _request(self, api: str, body: dict, timeout: float | None = None) -> dict:
        if api not in _EPOCH_APIS:
            return await super()._request(api, body, timeout)
        # Offsets of a KIP-848 group go at v9+, where the member epoch replaces the generation
        # (the client caps these APIs at v8 for classic groups; Kafka answers UNSUPPORTED_VERSION below 9).
        conn = await self._ensure_coordinator()
        key = protocol.API_KEYS[api]
        lo, hi = conn.broker_ranges.get(key, (0, -1))
        # v10 names topics by id only; this client fills in names
        version = min(hi, protocol.SCHEMAS[key].max_version, _NEWEST_BY_NAME)
        if version < 9:
            raise error_for_code(ErrorCode.UNSUPPORTED_VERSION,
                                 f"the broker does not serve {api} v9, which group.protocol=consumer needs")
        try:
            return await conn.request(api, body, version=version, timeout=timeout)
        except (ConnectionFailedError, KafkaTimeoutError) as e:
            self._coordinator_dead(e)
            raise CoordinatorGone(str(e)) from None

    def _commit_member(self) -> tuple[int, str]:
        if self.member_epoch > 0:
            return self.member_epoch, self.member_id
        return -1, ""

    def _fetch_member(self) -> tuple[int, str | None]:
        # as the Java client: the coordinator checks the member is current before answering
        if self.member_epoch > 0:
            return self.member_epoch, self.member_id
        return -1, None

    def _commit_stale(self, code: int) -> bool:
        # STALE_MEMBER_EPOCH: our epoch moved on the broker; the next heartbeat brings the new one
        if code == ErrorCode.STALE_MEMBER_EPOCH and self.member_epoch > 0 and not self.fenced:
            self._wake.set()
            return True
        if code == ErrorCode.UNKNOWN_MEMBER_ID or code == ErrorCode.FENCED_MEMBER_EPOCH:
            self.fenced = True
        return False

    # ================================================================ leaving
    async def close(self, consumer) -> None:
        if self.closed:
            return
        try:
            if self.owned:
                await self._revoke(list(self.owned))  # commits consumed positions when auto-commit is on
            if self._commit_task is not None and not self._commit_task.done():
                await asyncio.wait([self._commit_task], timeout=5)
            self.closed = True
            if self._hb_task is not None:
                self._hb_task.cancel()
            await self._send_leave()
        finally:
            await self._shut_down()

