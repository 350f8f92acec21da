"""Requests that name topics by id, as their declared facts say: by id only from some version
(Partitions.ids_from: Produce v13, OffsetCommit v10, OffsetFetch v10, TxnOffsetCommit v6), or by
id or name (TopicIds: Fetch v13, Metadata v10, DeleteTopics v6).

Before authorization and the handler, each id is resolved to its topic's name, so the
rules and handlers keep working on names. For the first kind an id no topic has is taken out
of the request and answered UNKNOWN_TOPIC_ID per partition, as Kafka answers it (before
authorization: an unknown id names no resource), and after the handler every topic entry of
the response gets its topic's id back. For the second, each topic stays where it is, with no
name for an unknown id; the handler answers it and echoes the ids.
"""
from __future__ import annotations

import uuid
from typing import Any, Callable, Protocol

from pylog.core.errors import ErrorCode
from pylog.core.protocol import SCHEMAS, ZERO_UUID
from pylog.core.protocol.facts import Partitions, TopicIds


UNKNOWN = ErrorCode.UNKNOWN_TOPIC_ID


class TopicLookup(Protocol):
    """What resolution reads of the node: the topic of an id, and the topics by name
    (common.partition_logs.PartitionLogs is one)."""

    logs: Any  # storage.LogManager: .topics, name -> its TopicInfo

    def topic_by_id(self, topic_id: uuid.UUID) -> Any: ...

# api key -> its topics' shape, for the APIs whose requests name topics by id only from some version
# on (the request facts declared with each schema)
def by_id_of(schemas: dict) -> dict[int, Partitions]:
    return {k: api.facts.partitions for k, api in schemas.items()
            if api.facts.partitions is not None and api.facts.partitions.ids_from is not None}


BY_ID = by_id_of(SCHEMAS)
IN_PLACE = {k: api.facts.topic_ids for k, api in SCHEMAS.items() if api.facts.topic_ids is not None}
FIRST_ID_VERSION = {**{k: shape.ids_from for k, shape in BY_ID.items()},
                    **{k: ids.since for k, ids in IN_PLACE.items()}}


def _split(lookup: TopicLookup, topics: list) -> tuple[list, list]:
    """(known topics with their names filled in, topics whose id no topic has)."""
    known, unknown = [], []
    for t in topics or ():
        info = lookup.topic_by_id(t.get("topic_id") or ZERO_UUID)
        if info is None:
            unknown.append(t)
        else:
            known.append(dict(t, name=info.name))
    return known, unknown


def resolve(lookup: TopicLookup, api_key: int, version: int, body: dict) -> tuple[dict, Callable[[dict], dict] | None]:
    """(the body with names for ids, a function that completes the response) or (body, None)
    when this request does not name topics by id."""
    first = FIRST_ID_VERSION.get(api_key)
    if first is None or version < first:
        return body, None
    named = IN_PLACE.get(api_key)
    if named is not None:
        return _named_in_place(lookup, named, body), None
    shape = BY_ID[api_key]
    ids = _ids_by_name(lookup)
    if shape.within is not None:  # topics inside each group (OffsetFetch v8+)
        return _resolve_within(lookup, shape, body, ids)
    list_key, out_key = shape.req_topics, shape.resp_topics
    known, unknown = _split(lookup, body.get(list_key))
    body = dict(body, **{list_key: known})

    def complete(result: dict) -> dict:
        _set_ids(result.get(out_key), ids)
        if unknown:
            result[out_key] = list(result.get(out_key) or ()) + [_unknown(shape, t) for t in unknown]
        return result
    return body, complete


def _resolve_within(lookup: TopicLookup, shape: Partitions, body: dict, ids) -> tuple[dict, Callable[[dict], dict]]:
    outer, group_key = shape.within, "group_id"
    unknown_by_group = {}
    groups = []
    for g in body.get(outer) or ():
        if g.get(shape.req_topics) is None:
            groups.append(g)
            continue
        known, unknown = _split(lookup, g[shape.req_topics])
        unknown_by_group[g[group_key]] = unknown
        groups.append(dict(g, **{shape.req_topics: known}))
    body = dict(body, **{outer: groups})

    def complete(result: dict) -> dict:
        for g in result.get(outer) or ():
            _set_ids(g.get(shape.resp_topics), ids)
            if not g.get("error_code"):
                g[shape.resp_topics] = list(g.get(shape.resp_topics) or ()) + [
                    _unknown(shape, t) for t in unknown_by_group.get(g[group_key], ())]
        return result
    return body, complete


def _named_in_place(lookup: TopicLookup, named: TopicIds, body: dict) -> dict:
    """The body with a name for each topic named by id (None: no topic has that id)."""
    topics = body.get(named.topics)
    if not topics:
        return body
    out = []
    for t in topics:
        tid = t.get("topic_id")
        if not t.get(named.name) and tid is not None and tid != ZERO_UUID:
            info = lookup.topic_by_id(tid)
            t = dict(t, **{named.name: info.name if info is not None else None})
        out.append(t)
    return dict(body, **{named.topics: out})


def _unknown(shape: Partitions, t: dict) -> dict:
    """The answer's entry for a topic whose id no topic has: UNKNOWN_TOPIC_ID on each partition."""
    return shape.error_topic(t, UNKNOWN, name="")


def _ids_by_name(lookup: TopicLookup) -> Callable[[str], object]:
    def id_of(name):
        info = lookup.logs.topics.get(name) if name else None
        return info.topic_id if info is not None else ZERO_UUID
    return id_of


def _set_ids(entries, id_of) -> None:
    for e in entries or ():
        if e.get("topic_id") in (None, ZERO_UUID):
            e["topic_id"] = id_of(e.get("name"))
