"""DescribeClientQuotas, AlterClientQuotas, and quota enforcement on every answer.

Enforcement (the dispatcher calls `throttle`): Produce counts the request's
bytes against producer_byte_rate, Fetch the record bytes of its answer
against consumer_byte_rate, and every request its handling time against
request_percentage. An answer over a quota carries throttle_time_ms and the
connection is muted for that long (KIP-219). A throttled fetch is answered
with no partitions and its bytes are taken back off the rate, as Kafka's
(ClientQuotaManager.unrecordQuotaSensor); a fetch never asks for more than
the quota allows in num-1 windows (`fetch_byte_cap`). CreateTopics, CreatePartitions and
DeleteTopics count partitions against controller_mutation_rate through
`mutation_quota` and `mutation_answer` (quotas.MutationQuota).
"""
from __future__ import annotations

import time

from pylog.broker.api.context import RequestContext
from pylog.broker.api.views import SecurityView
from pylog.broker.ops.quotas import (
    FETCH,
    PRODUCE,
    REQUEST,
    MutationQuota,
    QuotaError,
    check_entity,
    check_value,
)
from pylog.core.errors import ErrorCode
from pylog.core.protocol import API_KEYS


EXACT, DEFAULT, SPECIFIED = 0, 1, 2  # DescribeClientQuotas match types
_EXEMPT = {API_KEYS[n] for n in ("SaslHandshake", "ApiVersions", "SaslAuthenticate")}  # never throttled
_PRODUCE_KEY, _FETCH_KEY = API_KEYS["Produce"], API_KEYS["Fetch"]


# ---- DescribeClientQuotas --------------------------------------------------

def _matches(entity: tuple, components: list, strict: bool) -> bool:
    names = dict(entity)
    for c in components:
        etype, mt = c["entity_type"], c["match_type"]
        if etype not in names:
            return False
        if mt == EXACT and names[etype] != c["match"]:
            return False
        if mt == DEFAULT and names[etype] is not None:
            return False
    return not strict or set(names) == {c["entity_type"] for c in components}


def describe_client_quotas(broker: SecurityView, ctx: RequestContext, body: dict) -> dict:
    """Every stored entity matching all filter components, with its quota values."""
    comps = body["components"]
    types = set()
    for c in comps:
        if c["entity_type"] in types:
            return describe_client_quotas_error(body, ctx.api_version, ErrorCode.INVALID_REQUEST,
                                                f"duplicate filter component entity type {c['entity_type']!r}")
        types.add(c["entity_type"])
        if c["match_type"] not in (EXACT, DEFAULT, SPECIFIED):
            return describe_client_quotas_error(body, ctx.api_version, ErrorCode.INVALID_REQUEST,
                                                f"unknown match type {c['match_type']}")
        if c["match_type"] == EXACT and c["match"] is None:
            return describe_client_quotas_error(body, ctx.api_version, ErrorCode.INVALID_REQUEST,
                                                "an exact match needs a name")
    entries = []
    for ent, vals in broker.quotas.store.configs.items():
        if _matches(ent, comps, body["strict"]):
            entries.append({"entity": [{"entity_type": t, "entity_name": n} for t, n in ent],
                            "values": [{"key": k, "value": float(v)} for k, v in sorted(vals.items())]})
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "entries": entries}


def describe_client_quotas_error(body, version, code, msg):
    """No entries: `code`."""
    return {"throttle_time_ms": 0, "error_code": code, "error_message": msg, "entries": None}


# ---- AlterClientQuotas -----------------------------------------------------

def alter_client_quotas(broker: SecurityView, ctx: RequestContext, body: dict) -> dict:
    """Validate every entry, then apply the valid ones in one durable step (unless validate_only)."""
    results, changes = [], []
    for e in body["entries"]:
        wire = [(c["entity_type"], c["entity_name"]) for c in e["entity"]]
        res = {"error_code": ErrorCode.NONE, "error_message": None, "entity": e["entity"]}
        results.append(res)
        try:
            ent = check_entity(wire)
            ops, keys = [], set()
            for op in e["ops"]:
                if op["key"] in keys:
                    raise QuotaError(f"duplicate quota key {op['key']!r}")
                keys.add(op["key"])
                value = op["value"] if op["remove"] else check_value(op["key"], op["value"])
                if op["remove"]:
                    check_value(op["key"], 1.0)  # the key must still be one Kafka knows
                ops.append((op["key"], value, op["remove"]))
        except QuotaError as err:
            res["error_code"], res["error_message"] = ErrorCode.INVALID_REQUEST, str(err)
            continue
        changes.append((ent, ops))
    if changes and not body["validate_only"]:
        broker.quotas.store.alter(changes)
        broker.quotas.forget_unused()
    return {"throttle_time_ms": 0, "entries": results}


def alter_client_quotas_error(body, version, code, msg):
    """Every entry with `code`."""
    return {"throttle_time_ms": 0, "entries": [
        {"error_code": code, "error_message": msg, "entity": e["entity"]} for e in body["entries"] or []]}


# ---- enforcement -----------------------------------------------------------

def fetch_byte_cap(broker: SecurityView, ctx: RequestContext) -> int | None:
    """The bytes one fetch answer may carry under the client's consumer_byte_rate (None: no cap)."""
    qm = broker.quotas
    if qm is None or not qm.active:
        return None
    return qm.max_in_window(FETCH, _user(ctx.conn), ctx.client_id or "")


def _user(conn) -> str:
    p = conn.principal
    return p.split(":", 1)[1] if ":" in p else p


def _fetch_bytes(result: dict) -> int:
    n = 0
    for t in result.get("responses") or ():
        for p in t["partitions"]:
            rec = p["records"]
            ln = getattr(rec, "length", None)
            n += len(rec) if ln is None else ln
    return n


def _apply(broker: SecurityView, ctx: RequestContext, size: int, handled_s: float, result: dict) -> dict:
    qm = broker.quotas
    user, client = _user(ctx.conn), ctx.client_id or ""
    now = time.monotonic()
    # request_percentage: handling seconds * 100 per second of wall time is percent of one thread
    ms = qm.record(REQUEST, user, client, handled_s * 100.0, now)
    if ctx.api_key == _PRODUCE_KEY:
        ms = max(ms, qm.record(PRODUCE, user, client, size, now))
    elif ctx.api_key == _FETCH_KEY and "responses" in result:
        size = _fetch_bytes(result)
        fetch_ms = qm.record(FETCH, user, client, size, now)
        if fetch_ms or ms:
            # Kafka's throttled fetch: an empty answer, and its bytes taken back off the
            # consumer's rate (they were never delivered)
            qm.unrecord(FETCH, user, client, size, now)
            result["responses"] = []
            ms = max(ms, fetch_ms)
    if ms:
        if "throttle_time_ms" in result:
            result["throttle_time_ms"] = max(result.get("throttle_time_ms") or 0, ms)
        ctx.conn.mute_for(ms / 1000.0)
    return result


async def _apply_later(broker: SecurityView, ctx: RequestContext, size: int, handled_s: float, awaitable):
    res = await awaitable
    return res if res is None else _apply(broker, ctx, size, handled_s, res)


def throttle(broker: SecurityView, ctx: RequestContext, size: int, started: float, result):
    """The handler's result with quotas applied (a dict, an awaitable or None as it was)."""
    if ctx.api_key in _EXEMPT:
        return result
    if result is None:  # acks=0 produce: no answer to carry a throttle time, the mute alone slows it
        if ctx.api_key == _PRODUCE_KEY:
            qm = broker.quotas
            ms = qm.record(PRODUCE, _user(ctx.conn), ctx.client_id or "", size, time.monotonic())
            ctx.conn.mute_for(ms / 1000.0)
        return None
    handled_s = time.perf_counter() - started  # a long poll's waiting is not handling time
    if isinstance(result, dict):
        return _apply(broker, ctx, size, handled_s, result)
    return _apply_later(broker, ctx, size, handled_s, result)


def mutation_quota(broker: SecurityView, ctx: RequestContext, strict_since: int) -> MutationQuota | None:
    """The request's controller_mutation_rate quota (strict from `strict_since` on, as Kafka's
    controller), or None when none applies."""
    qm = broker.quotas
    if qm is None or not qm.active:
        return None
    return qm.mutation_quota(_user(ctx.conn), ctx.client_id or "", ctx.api_version >= strict_since,
                             time.monotonic())


def record_mutations(quota: MutationQuota | None, partitions: int) -> bool:
    """Count one topic's partition mutations; False when the strict quota refuses the topic."""
    return quota is None or quota.record(partitions, time.monotonic())


def mutation_answer(ctx: RequestContext, quota: MutationQuota | None, result: dict) -> dict:
    """The answer with the quota's throttle time; the connection muted for as long."""
    if quota is not None and quota.throttle_ms:
        result["throttle_time_ms"] = max(result.get("throttle_time_ms") or 0, quota.throttle_ms)
        ctx.conn.mute_for(quota.throttle_ms / 1000.0)
    return result
