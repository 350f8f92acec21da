"""Client quotas: the durable quota configs, Kafka's entity resolution, rate sampling and throttle times.

Configs (AlterClientQuotas) live in `client-quotas.json` in the first log dir,
replaced atomically on every change, as the SCRAM credentials and ACLs are
(Kafka keeps them as ClientQuotaRecords in the metadata log).

Resolution follows Kafka's default quota callback: for each quota key, the
most specific configured entity wins, in this order
  user+client-id, user+<default client-id>, user,
  <default user>+client-id, <default user>+<default client-id>, <default user>,
  client-id, <default client-id>
and the bytes are counted per the actual user and/or client-id that level
names (a default user quota gives every user a bucket of its own).

Rates are Kafka's: quota.window.num (11) samples of quota.window.size.seconds
(1 s); the rate is the samples' total over the time they span (at least
num-1 windows). When it exceeds the quota, the throttle time is
(rate - quota) / quota * that span, the answer carries it in throttle_time_ms
and the connection is muted for as long (KIP-219). request_percentage counts
the time spent handling the client's requests, as a percentage of one thread.

controller_mutation_rate (KIP-599) counts partitions created, added or deleted
per second in a token bucket holding controller.quota.window.num windows of
controller.quota.window.size.seconds at the rate (full at first). New request
versions are strict: a topic asked for while the bucket is below zero is
refused with THROTTLING_QUOTA_EXCEEDED; a topic asked for while it is not is
done, even when that takes the bucket below zero. Older versions are
permissive: everything is done. Either way the answer carries the time the
bucket needs to get back to zero, and the connection is muted for as long.
"""
from __future__ import annotations

import logging
import math

from pylog.broker.common.json_state import JsonStateFile

log = logging.getLogger("pylog.broker")

FILE_NAME = "client-quotas.json"
FORMAT_VERSION = 1
USER, CLIENT_ID, IP = "user", "client-id", "ip"
PRODUCE, FETCH, REQUEST = "producer_byte_rate", "consumer_byte_rate", "request_percentage"
MUTATION = "controller_mutation_rate"
# every key Kafka accepts for user/client-id entities
KEYS = {PRODUCE: int, FETCH: int, REQUEST: float, MUTATION: float}
MAX_THROTTLE_MS = 30000  # no single answer asks a client to wait longer than this

# the resolution order above: (which names the entity has, user part, client part)
# where "name" is the actual name, None the default entity, "" absent
_LEVELS = (("name", "name"), ("name", None), ("name", ""), (None, "name"), (None, None), (None, ""),
           ("", "name"), ("", None))

Entity = tuple  # ((type, name-or-None), ...) sorted by type


def entity_key(components: list[tuple[str, str | None]]) -> Entity:
    """A canonical, hashable entity."""
    return tuple(sorted(components))


class QuotaError(ValueError):
    """An entity or quota op Kafka would refuse with INVALID_REQUEST."""


def check_entity(components: list[tuple[str, str | None]]) -> Entity:
    """Validate one entity's components (types user/client-id, each once)."""
    seen = set()
    for etype, name in components:
        if etype == IP:
            raise QuotaError("ip quotas (connection_creation_rate) are not supported by this broker")
        if etype not in (USER, CLIENT_ID):
            raise QuotaError(f"unknown entity type {etype!r}: expected user or client-id")
        if etype in seen:
            raise QuotaError(f"duplicate entity type {etype!r}")
        if name is not None and name == "":
            raise QuotaError(f"empty {etype} name (use the default entity instead)")
        seen.add(etype)
    if not seen:
        raise QuotaError("an entity needs at least one of user and client-id")
    return entity_key(components)


def check_value(key: str, value: float) -> float:
    """A quota value Kafka accepts for `key`."""
    kind = KEYS.get(key)
    if kind is None:
        raise QuotaError(f"unknown quota key {key!r}: expected one of {', '.join(sorted(KEYS))}")
    if not math.isfinite(value) or value <= 0:
        raise QuotaError(f"{key} must be a positive number, not {value}")
    if kind is int and value != int(value):
        raise QuotaError(f"{key} must be a whole number of bytes per second, not {value}")
    return value


class QuotaStore(JsonStateFile):
    """Quota configs per entity, persisted as JSON."""

    FILE_NAME = FILE_NAME
    WHAT = "client quotas"

    def __init__(self, log_dir: str):
        super().__init__(log_dir)
        self.configs: dict[Entity, dict[str, float]] = {}
        self.load()

    def _apply(self, doc: dict) -> None:
        configs = {}
        for e in doc.get("client_quotas", []):
            ent = entity_key([(c["entity_type"], c["entity_name"]) for c in e["entity"]])
            configs[ent] = {k: float(v) for k, v in e["values"].items()}
        self.configs = configs

    def _save(self, configs) -> None:
        doc = {"version": FORMAT_VERSION, "client_quotas": [
            {"entity": [{"entity_type": t, "entity_name": n} for t, n in ent], "values": vals}
            for ent, vals in sorted(configs.items(), key=lambda kv: repr(kv[0]))]}
        self._write(doc)

    def alter(self, changes: list[tuple[Entity, list[tuple[str, float, bool]]]]) -> None:
        """Apply [(entity, [(key, value, remove)])] in one durable step."""
        with self._lock:
            new = {k: dict(v) for k, v in self.configs.items()}
            for ent, ops in changes:
                vals = new.setdefault(ent, {})
                for key, value, remove in ops:
                    if remove:
                        vals.pop(key, None)
                    else:
                        vals[key] = value
                if not vals:
                    del new[ent]
            self._save(new)
            self.configs = new


class _Rate:
    """Kafka's sampled rate: `num` windows of `size` seconds."""

    __slots__ = ("starts", "values", "size", "num")

    def __init__(self, num: int, size: float):
        self.starts: list[float] = []
        self.values: list[float] = []
        self.size, self.num = size, num

    def record(self, value: float, now: float) -> None:
        if not self.starts or now - self.starts[-1] >= self.size:
            self.starts.append(now)
            self.values.append(0.0)
            if len(self.starts) > self.num:
                del self.starts[0], self.values[0]
        self.values[-1] += value

    def measure(self, now: float) -> tuple[float, float]:
        """(rate per second, span in seconds): the time since the oldest sample, plus the
        windows missing to num-1 full ones (Kafka's Rate.windowSize)."""
        while self.starts and now - self.starts[0] > self.num * self.size:
            del self.starts[0], self.values[0]  # samples too old to count
        span = now - self.starts[0] if self.starts else 0.0
        full = int(span // self.size)
        if full < self.num - 1:
            span += (self.num - 1 - full) * self.size
        return sum(self.values) / span, span


class _TokenBucket:
    """Kafka's TokenBucket stat: `burst` tokens at most, refilled at `rate` per second."""

    __slots__ = ("tokens", "last")

    def __init__(self, burst: float, now: float):
        self.tokens, self.last = burst, now

    def refill(self, rate: float, burst: float, now: float) -> float:
        self.tokens = min(burst, self.tokens + rate * (now - self.last))
        self.last = now
        return self.tokens


class MutationQuota:
    """One request's view of its client's controller_mutation_rate bucket (KIP-599)."""

    def __init__(self, bucket: _TokenBucket, rate: float, burst: float, strict: bool):
        self.bucket, self.rate, self.burst, self.strict = bucket, rate, burst, strict
        self.throttle_ms = 0

    def record(self, permits: int, now: float) -> bool:
        """Count `permits` partition mutations; False when a strict quota refuses them."""
        tokens = self.bucket.refill(self.rate, self.burst, now)
        if self.strict and tokens < 0:
            self._throttle(tokens)
            return False
        self.bucket.tokens = min(self.burst, tokens - permits)
        if self.bucket.tokens < 0 and not self.strict:
            self._throttle(self.bucket.tokens)
        return True

    def _throttle(self, tokens: float) -> None:
        # the time the bucket needs to climb back to zero
        self.throttle_ms = min(round(-tokens / self.rate * 1000), MAX_THROTTLE_MS)


class QuotaManager:
    """Resolves and enforces the quota kinds; `record` returns a throttle time in ms."""

    def __init__(self, store: QuotaStore, config):
        self.store = store
        self.window_num = config["quota.window.num"]
        self.window_s = config["quota.window.size.seconds"]
        self.mutation_burst_s = config["controller.quota.window.num"] * config["controller.quota.window.size.seconds"]
        self._rates: dict[tuple, _Rate] = {}
        self._buckets: dict[tuple, _TokenBucket] = {}
        self.throttled: dict[str, int] = {}  # quota key -> responses that carried a throttle time

    @property
    def active(self) -> bool:
        """Any quota configured at all (the request path skips everything otherwise)."""
        return bool(self.store.configs)

    def resolve(self, key: str, user: str, client_id: str) -> tuple[float, tuple] | None:
        """(quota, bucket) of the most specific entity configuring `key` for this client, or None."""
        configs = self.store.configs
        for u, c in _LEVELS:
            comps = []
            if u != "":
                comps.append((USER, user if u == "name" else None))
            if c != "":
                comps.append((CLIENT_ID, client_id if c == "name" else None))
            vals = configs.get(entity_key(comps))
            if vals is not None and key in vals:
                bucket = (key, user if u != "" else None, client_id if c != "" else None)
                return vals[key], bucket
        return None

    def record(self, key: str, user: str, client_id: str, value: float, now: float) -> int:
        """Count `value` against the client's `key` quota; the throttle time in ms (0: within quota)."""
        found = self.resolve(key, user, client_id)
        if found is None:
            return 0
        quota, bucket = found
        rate = self._rates.get(bucket)
        if rate is None:
            rate = self._rates[bucket] = _Rate(self.window_num, self.window_s)
        rate.record(value, now)
        observed, span = rate.measure(now)
        if observed <= quota:
            return 0
        self.throttled[key] = self.throttled.get(key, 0) + 1
        return min(int((observed - quota) / quota * span * 1000), MAX_THROTTLE_MS)

    def unrecord(self, key: str, user: str, client_id: str, value: float, now: float) -> None:
        """Take back `value` recorded for an answer that was not delivered (a throttled fetch
        goes out empty, so its bytes do not count: Kafka's unrecordQuotaSensor)."""
        found = self.resolve(key, user, client_id)
        rate = self._rates.get(found[1]) if found is not None else None
        if rate is not None:
            rate.record(-value, now)

    def max_in_window(self, key: str, user: str, client_id: str) -> int | None:
        """The most one answer may carry without being throttled for sure (the quota over
        num-1 windows), or None when no quota applies: fetches are capped to it, as Kafka's."""
        found = self.resolve(key, user, client_id)
        if found is None:
            return None
        return int(found[0] * (self.window_num - 1) * self.window_s)

    def mutation_quota(self, user: str, client_id: str, strict: bool, now: float) -> MutationQuota | None:
        """The client's controller_mutation_rate for one CreateTopics/CreatePartitions/DeleteTopics
        request, or None when no quota applies."""
        found = self.resolve(MUTATION, user, client_id)
        if found is None:
            return None
        rate, key = found
        burst = rate * self.mutation_burst_s
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _TokenBucket(burst, now)
        return MutationQuota(bucket, rate, burst, strict)

    def forget_unused(self) -> None:
        """After a config change: drop the buckets no quota maps to any more."""
        self._rates.clear()
        self._buckets.clear()
