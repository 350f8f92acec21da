"""Requests that name topics by id only (Produce v13, OffsetCommit v10, OffsetFetch v10,
TxnOffsetCommit v6).

Before authorization and the handler, each id is resolved to its topic's name, so the
rules and handlers keep working on names; an id no topic has is taken out of the request
and answered UNKNOWN_TOPIC_ID per partition, as Kafka answers it (before authorization:
an unknown id names no resource). After the handler, every topic entry of the response
gets its topic's id back.
"""
from __future__ import annotations

from typing import Callable

from pylog.core.errors import ErrorCode
from pylog.core.protocol import ZERO_UUID
from pylog.broker.api.context import NodeView


UNKNOWN = ErrorCode.UNKNOWN_TOPIC_ID

# api key -> first version that carries topic ids instead of names
FIRST_ID_VERSION = {0: 13, 8: 10, 9: 10, 28: 6}


def _split(broker: NodeView, topics: list) -> tuple[list, list]:
    """(known topics with their names filled in, topics whose id no topic has)."""
    known, unknown = [], []
    for t in topics or ():
        info = broker.topic_by_id(t.get("topic_id") or ZERO_UUID)
        if info is None:
            unknown.append(t)
        else:
            known.append(dict(t, name=info.name))
    return known, unknown


def _produce_unknown(t):
    return {"name": "", "topic_id": t["topic_id"], "partition_responses": [
        {"index": p.get("index", 0), "error_code": UNKNOWN, "base_offset": -1, "log_append_time_ms": -1,
         "log_start_offset": -1, "record_errors": [], "error_message": None}
        for p in t.get("partition_data") or ()]}


def _commit_unknown(t):
    return {"name": "", "topic_id": t["topic_id"], "partitions": [
        {"partition_index": p["partition_index"], "error_code": UNKNOWN} for p in t.get("partitions") or ()]}


def _fetch_unknown(t):
    return {"name": "", "topic_id": t["topic_id"], "partitions": [
        {"partition_index": p, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
         "error_code": UNKNOWN} for p in t.get("partition_indexes") or ()]}


def resolve(broker: NodeView, api_key: int, version: int, body: dict) -> tuple[dict, Callable[[dict], dict] | None]:
    """(the body with names for ids, a function that completes the response) or (body, None)
    when this request does not name topics by id."""
    first = FIRST_ID_VERSION.get(api_key)
    if first is None or version < first:
        return body, None
    ids = _ids_by_name(broker)
    if api_key == 9:
        unknown_by_group = {}
        groups = []
        for g in body.get("groups") or ():
            if g.get("topics") is None:
                groups.append(g)
                continue
            known, unknown = _split(broker, g["topics"])
            unknown_by_group[g["group_id"]] = unknown
            groups.append(dict(g, topics=known))
        body = dict(body, groups=groups)

        def complete_fetch(result: dict) -> dict:
            for g in result.get("groups") or ():
                _set_ids(g.get("topics"), ids)
                if not g.get("error_code"):
                    g["topics"] = list(g.get("topics") or ()) + [
                        _fetch_unknown(t) for t in unknown_by_group.get(g["group_id"], ())]
            return result
        return body, complete_fetch
    list_key, out_key, build = (("topic_data", "responses", _produce_unknown) if api_key == 0
                                else ("topics", "topics", _commit_unknown))
    known, unknown = _split(broker, body.get(list_key))
    body = dict(body, **{list_key: known})

    def complete(result: dict) -> dict:
        _set_ids(result.get(out_key), ids)
        if unknown:
            result[out_key] = list(result.get(out_key) or ()) + [build(t) for t in unknown]
        return result
    return body, complete


def _ids_by_name(broker: NodeView) -> Callable[[str], object]:
    def id_of(name):
        info = broker.logs.topics.get(name) if name else None
        return info.topic_id if info is not None else ZERO_UUID
    return id_of


def _set_ids(entries, id_of) -> None:
    for e in entries or ():
        if e.get("topic_id") in (None, ZERO_UUID):
            e["topic_id"] = id_of(e.get("name"))
