"""The fault engine: rules by API key, consulted by the dispatcher (broker/dispatch.py).

The broker looks the request's API key up in `table` (an empty dict while no rule is set,
so a broker without rules pays one dictionary lookup per request). Only when rules exist for
that API does `run` build a view of the request, pick the first live rule that matches and
apply it in place of the plain handler call. Rules are added and cleared from any thread
(the Python API runs on the test's thread): the table is rebuilt under a lock and swapped
in whole.
"""
from __future__ import annotations

import asyncio
import inspect
import logging
import random
import threading
import time

from pylog.broker.ops.request_faults.rules import (
    FaultRule, FaultRuleError, rule_from_dict, rule_from_options,
)
from pylog.broker.ops.request_faults.shapes import (
    COORDINATOR_APIS, FIND_COORDINATOR, METADATA, OFFLINE_APIS, SHAPES, RequestView, carries,
    coordinator_keys, error_topics, merge, overwrite, split,
)
from pylog.core.errors import ERROR_DESCRIPTIONS, ErrorCode
from pylog.core.protocol import API_NAMES, API_KEYS

log = logging.getLogger("pylog.broker.faults")

_INIT_PRODUCER_ID = API_KEYS["InitProducerId"]
_ALL = True  # a rule matching the request as a whole


class FaultEngine:
    """The broker's rules. `enabled` (faults.enable) opens the admin HTTP endpoints; the Python
    API works on any broker in the same process."""

    def __init__(self, served=None, stats=None, enabled: bool = False):
        # the API keys the broker serves (a rule names only those; all declared APIs without a
        # broker) and the broker's counters, where fired rules are counted
        self.served = served
        self.stats = stats
        self.enabled = enabled
        self.topic_by_id = None  # the node's topic-id lookup (PartitionLogs.topic_by_id) once its logs are open
        self.table: dict[int, tuple[FaultRule, ...]] = {}
        self._rules: list[FaultRule] = []
        self._lock = threading.Lock()
        self._next_id = 1

    # ---- managing rules (any thread) -------------------------------------------------------
    def add(self, api=None, **options) -> FaultRule:
        """Add a rule; returns it (`.clear()`, `.hits`, a context manager that clears it).

        `api` is an API name (`"Produce"`) or key, or a FaultRule / its dict form. Options:
        error (a name like "NOT_LEADER_OR_FOLLOWER"), after_handling, delay_ms, no_answer,
        close, throttle_ms, offline, coordinator_unavailable; matching on topic, partition,
        group, transactional_id, client_id, principal, versions ("3-9"); limits count,
        fraction, for_ms, start_in_ms."""
        if isinstance(api, FaultRule):
            rule = api
        elif isinstance(api, dict):
            rule = rule_from_dict(api)
        else:
            rule = rule_from_options(api, **options)
        with self._lock:
            rule.id = rule.id or f"r{self._next_id}"
            self._next_id += 1
            if any(r.id == rule.id for r in self._rules):
                raise FaultRuleError(f"a rule with id {rule.id!r} exists already")
            rule.added_at = time.monotonic()
            rule.hits = 0
            rule.engine = self
            self._rules.append(rule)
            self._rebuild()
        log.info("fault rule %s added: %s", rule.id, rule.describe())
        return rule

    def offline(self, topic: str, partition: int | None = None, **options) -> FaultRule:
        """Take a partition (or every partition of `topic`) offline until the rule is cleared."""
        return self.add(offline=True, topic=topic, partition=partition, **options)

    def coordinator_unavailable(self, group: str | None = None, transactional_id: str | None = None,
                                **options) -> FaultRule:
        """Make the coordinator of `group` / `transactional_id` (default: every one) unavailable."""
        return self.add(coordinator_unavailable=True, group=group, transactional_id=transactional_id, **options)

    def remove(self, rule_id: str) -> bool:
        """Clear one rule by id; False when there is none."""
        with self._lock:
            n = len(self._rules)
            self._rules = [r for r in self._rules if r.id != rule_id]
            self._rebuild()
            gone = len(self._rules) != n
        if gone:
            log.info("fault rule %s cleared", rule_id)
        return gone

    def clear(self) -> int:
        """Clear every rule; returns how many there were."""
        with self._lock:
            n = len(self._rules)
            self._rules = []
            self._rebuild()
        if n:
            log.info("%d fault rule(s) cleared", n)
        return n

    def rules(self) -> list[FaultRule]:
        """Every rule, fired out or not, in the order added."""
        return list(self._rules)

    def get(self, rule_id: str) -> FaultRule | None:
        return next((r for r in self._rules if r.id == rule_id), None)

    def __iter__(self):
        return iter(self.rules())

    def __len__(self) -> int:
        return len(self._rules)

    def _rebuild(self) -> None:
        served = sorted(self.served) if self.served is not None else sorted(API_NAMES)
        table: dict[int, list] = {}
        for r in self._rules:
            if r.exhausted:
                continue
            if r.kind == "offline":
                keys = OFFLINE_APIS
            elif r.kind == "coordinator":
                keys = COORDINATOR_APIS
            else:
                keys = served
            if r.api is not None:
                keys = [k for k in keys if k == r.api]
            if r.kind != "coordinator":  # a filter the API's requests cannot carry never matches
                need = {k for k in ("topic", "group", "transactional_id") if getattr(r, k) is not None}
                keys = [k for k in keys if need <= _carries(k)]
            for k in keys:
                table.setdefault(k, []).append(r)
        self.table = {k: tuple(v) for k, v in table.items()}

    # ---- the request path (the broker's loop) ------------------------------------------------
    def run(self, rules, node, handler, ctx, body):
        """The request's answer with the first matching live rule applied (a dict, an awaitable
        or None, as a handler returns); `node` is what the handler is called with."""
        view = RequestView(self.topic_by_id, ctx, body)
        post = []
        for rule in rules:
            hit = _match(rule, view)
            if hit is None:
                continue
            if (rule.kind == "offline" and view.api_key == METADATA) or \
                    (rule.kind == "coordinator" and view.api_key == FIND_COORDINATOR):
                post.append(rule)  # changes the answer's entries; applied after the handler
                continue
            if not self._take(rule):
                continue
            return self._apply(rule, hit, view, node, handler, ctx, body)
        result = handler.handle(node, ctx, body)
        if post:
            result = _then(result, lambda res: self._post(post, view, ctx, res))
        return result

    def _take(self, rule: FaultRule) -> bool:
        """Whether the rule fires now (window, count, fraction); counts the hit."""
        if rule.exhausted:
            self._drop_exhausted()
            return False
        if rule.start_in_ms and time.monotonic() < rule.added_at + rule.start_in_ms / 1000:
            return False
        if rule.fraction is not None and rule.fraction < 1.0 and random.random() >= rule.fraction:
            return False
        rule.hits += 1
        if rule.exhausted:
            self._drop_exhausted()
        return True

    def _drop_exhausted(self) -> None:
        with self._lock:
            self._rebuild()

    def _fired(self, rule: FaultRule, ctx, what: str) -> None:
        api = API_NAMES.get(ctx.api_key, str(ctx.api_key))
        stats = self.stats
        if stats is not None:
            key = (rule.id, rule.kind, api)
            stats.faults_injected[key] = stats.faults_injected.get(key, 0) + 1
        of = f" ({rule.hits} of {rule.count})" if rule.count is not None else f" (hit {rule.hits})"
        log.info("fault injected by rule %s [%s]: %s v%d from %s (client %s): %s%s", rule.id, rule.describe(),
                 api, ctx.api_version, getattr(ctx.conn, "peer", "?"), ctx.client_id, what, of)

    def _apply(self, rule: FaultRule, hit, view: RequestView, node, handler, ctx, body):
        kind = rule.kind
        conn = ctx.conn
        if kind in ("error", "offline", "coordinator"):
            code = rule.error if rule.error is not None else (
                ErrorCode.NOT_LEADER_OR_FOLLOWER if kind == "offline" else ErrorCode.COORDINATOR_NOT_AVAILABLE)
            name = ErrorCode(code).name
            shape = SHAPES.get(ctx.api_key)
            if shape is not None:
                positions = hit if hit is not _ALL else {(ti, pi) for ti, pi, _, _ in view.partitions()}
                keep, failed = split(shape, body, positions)
                if rule.after_handling:
                    self._fired(rule, ctx, f"performed, then answered {name}")
                    return _then(handler.handle(node, ctx, body), lambda res: overwrite(shape, res, failed, code))
                self._fired(rule, ctx, f"answered {name} for {sum(len(p) for _, p in failed)} partition(s)")
                errors = error_topics(shape, failed, code)
                if not keep[shape.req_topics]:
                    return merge(shape, shape.empty(), errors)
                return _then(handler.handle(node, ctx, keep), lambda res: merge(shape, res, errors))
            msg = f"{ERROR_DESCRIPTIONS.get(int(code), '')} (injected fault)".strip()
            if rule.after_handling:
                self._fired(rule, ctx, f"performed, then answered {name}")
                return _then(handler.handle(node, ctx, body),
                             lambda res: handler.error(body, ctx.api_version, code, msg))
            self._fired(rule, ctx, f"answered {name}")
            return handler.error(body, ctx.api_version, code, msg)
        if kind == "delay":
            self._fired(rule, ctx, f"answer delayed {rule.ms} ms")
            return _delayed(handler.handle(node, ctx, body), rule.ms / 1000.0)
        if kind == "throttle":
            self._fired(rule, ctx, f"throttled {rule.ms} ms")
            conn.mute_for(rule.ms / 1000.0)

            def set_throttle(res):
                if isinstance(res, dict):
                    res["throttle_time_ms"] = max(res.get("throttle_time_ms") or 0, rule.ms)
                return res
            return _then(handler.handle(node, ctx, body), set_throttle)
        if kind == "no_answer":
            self._fired(rule, ctx, "performed, never answered" if rule.after_handling else "never answered")
            if rule.after_handling:
                return _never(handler.handle(node, ctx, body))
            return _never(None)
        # close
        if not rule.after_handling:
            self._fired(rule, ctx, "connection closed before handling")
            conn.close(None)
            return None
        self._fired(rule, ctx, "performed, then the connection closed")

        def close(res):
            conn.close(None)
            return None
        return _then(handler.handle(node, ctx, body), close)

    def _post(self, rules, view: RequestView, ctx, res):
        if not isinstance(res, dict):
            return res
        for rule in rules:
            if rule.exhausted:
                continue
            if rule.start_in_ms and time.monotonic() < rule.added_at + rule.start_in_ms / 1000:
                continue
            if rule.fraction is not None and rule.fraction < 1.0 and random.random() >= rule.fraction:
                continue
            changed = _offline_metadata(rule, res) if rule.kind == "offline" else \
                _coordinator_answer(rule, view, ctx, res)
            if changed:
                rule.hits += 1
                what = "partition(s) shown without a leader" if rule.kind == "offline" else \
                    "coordinator answered unavailable"
                self._fired(rule, ctx, f"{changed} {what}")
                if rule.exhausted:
                    self._drop_exhausted()
        return res


_CARRIES: dict[int, set] = {}


def _carries(api_key: int) -> set:
    c = _CARRIES.get(api_key)
    if c is None:
        c = _CARRIES[api_key] = carries(api_key)
    return c


def _match(rule: FaultRule, view: RequestView):
    """None, _ALL, or the (topic pos, partition pos) set of a partitioned request it names."""
    if rule.versions is not None and not rule.versions[0] <= view.version <= rule.versions[1]:
        return None
    if rule.client_id is not None and rule.client_id != view.client_id:
        return None
    if rule.principal is not None and rule.principal != view.principal:
        return None
    if rule.kind == "coordinator":
        if view.api_key == _INIT_PRODUCER_ID and not view.body.get("transactional_id"):
            return None  # an idempotent producer's id comes from any broker, not a coordinator
        if view.api_key == FIND_COORDINATOR:
            return _ALL  # per key, in _coordinator_answer
        if rule.group is None and rule.transactional_id is None:
            return _ALL
        if rule.group is not None and rule.group in view.groups():
            return _ALL
        if rule.transactional_id is not None and rule.transactional_id in view.transactional_ids():
            return _ALL
        return None
    if rule.group is not None and rule.group not in view.groups():
        return None
    if rule.transactional_id is not None and rule.transactional_id not in view.transactional_ids():
        return None
    if rule.topic is None:
        return _ALL
    if rule.kind == "offline" and view.api_key == METADATA:
        return _ALL  # per partition, in _offline_metadata
    if view.api_key in SHAPES:
        hit = {(ti, pi) for ti, pi, name, p in view.partitions()
               if name == rule.topic and (rule.partition is None or p == rule.partition)}
        return hit or None
    return _ALL if rule.topic in view.topics() else None


def _offline_metadata(rule: FaultRule, res: dict) -> int:
    code = rule.error if rule.error is not None else ErrorCode.LEADER_NOT_AVAILABLE
    n = 0
    for t in res.get("topics") or ():
        if t.get("name") != rule.topic:
            continue
        for p in t.get("partitions") or ():
            if rule.partition is None or p.get("partition_index") == rule.partition:
                p["error_code"] = code
                p["leader_id"] = -1
                p["isr_nodes"] = []
                n += 1
    return n


def _coordinator_answer(rule: FaultRule, view: RequestView, ctx, res: dict) -> int:
    body = view.body
    key_type = body.get("key_type", 0)
    if rule.group is not None or rule.transactional_id is not None:
        want = rule.group if key_type == 0 else rule.transactional_id
        if want is None:
            return 0
        keys = [k for k in coordinator_keys(body) if k == want]
    else:
        keys = coordinator_keys(body)
    if not keys:
        return 0
    code = rule.error if rule.error is not None else ErrorCode.COORDINATOR_NOT_AVAILABLE
    msg = "The coordinator is not available (injected fault)."
    unavailable = {"node_id": -1, "host": "", "port": -1, "error_code": code, "error_message": msg}
    entries = res.get("coordinators")
    if entries:
        for e in entries:
            if e.get("key") in keys:
                e.update(unavailable)
    else:
        res.update(unavailable)
    return len(keys)


def _then(result, fn):
    """fn(answer) now for a dict or None, or once an awaitable answer is ready."""
    if result is None or isinstance(result, dict):
        return fn(result)

    async def later():
        return fn(await result)
    return later()


async def _delayed(result, seconds: float):
    if inspect.isawaitable(result):
        result = await result
    await asyncio.sleep(seconds)
    return result


async def _never(result):
    if inspect.isawaitable(result):
        await result
    await asyncio.get_running_loop().create_future()  # cancelled when the connection closes
