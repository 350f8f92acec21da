"""Where requests name topics, partitions, groups and transactional ids, and how an answer
carries a per-partition error: what the fault engine needs to match a rule and to fail only
the partitions it names.
"""
from __future__ import annotations

from pylog.core.protocol import API_KEYS, SCHEMAS
from pylog.core.protocol.facts import Partitions

K = API_KEYS
METADATA, FIND_COORDINATOR = K["Metadata"], K["FindCoordinator"]

# a partitioned request and its answer (the request facts declared with each schema)
PartitionShape = Partitions


def shapes_of(schemas: dict) -> dict[int, PartitionShape]:
    """The partitioned APIs (their topics at the top of the request) by key."""
    return {k: api.facts.partitions for k, api in schemas.items()
            if api.facts.partitions is not None and api.facts.partitions.within is None}


SHAPES = shapes_of(SCHEMAS)
# the APIs an offline partition or an unavailable coordinator answers for
OFFLINE_APIS = tuple(k for k, api in SCHEMAS.items() if api.facts.partition_data)
COORDINATOR_APIS = tuple(k for k, api in SCHEMAS.items() if api.facts.coordinator)


def _field_names(fields) -> set:
    from pylog.core.protocol.types import Array, Struct

    out = set()
    for f in fields:
        out.add(f.name)
        t = f.type
        if isinstance(t, Array) and isinstance(t.elem, list):
            out |= _field_names(t.elem)
        elif isinstance(t, Struct):
            out |= _field_names(t.fields)
    return out


def carries(api_key: int) -> set:
    """What an API's requests can name: a subset of {"topic", "group", "transactional_id"}
    (a rule filtering on anything else is never listed for it)."""
    schema = SCHEMAS.get(api_key)
    names = _field_names(schema.request) if schema is not None else set()
    out = set()
    if names & {"topics", "topic_data", "v3_and_below_topics"}:
        out.add("topic")
    if names & {"group_id", "groups"} or api_key == FIND_COORDINATOR:
        out.add("group")
    if names & {"transactional_id", "v3_and_below_transactional_id"} or api_key == FIND_COORDINATOR:
        out.add("transactional_id")
    return out


class RequestView:
    """What a rule can match on in one request, extracted on first use."""

    __slots__ = ("api_key", "version", "client_id", "principal", "body", "topic_by_id", "_parts", "_groups",
                 "_txns", "_topics")

    def __init__(self, topic_by_id, ctx, body: dict):
        """`topic_by_id`: the node's topic-id lookup (None where ids are not resolved)."""
        self.api_key, self.version, self.client_id = ctx.api_key, ctx.api_version, ctx.client_id
        self.principal = getattr(ctx.conn, "principal", None)
        self.body, self.topic_by_id = body, topic_by_id
        self._parts = self._groups = self._txns = self._topics = None

    def topic_name(self, t: dict, name_key: str) -> str | None:
        name = t.get(name_key)
        if not name and t.get("topic_id") is not None and self.topic_by_id is not None:
            info = self.topic_by_id(t["topic_id"])
            name = info.name if info is not None else None
        return name

    def _cached(self, slot: str, compute):
        """The slot's value, computed on first use."""
        v = getattr(self, slot)
        if v is None:
            v = compute()
            setattr(self, slot, v)
        return v

    def _found_by_coordinator(self, key_type: int) -> list[str]:
        """FindCoordinator's keys when it looks for `key_type` (0 groups, 1 transactional ids)."""
        b = self.body
        return coordinator_keys(b) if self.api_key == FIND_COORDINATOR and b.get("key_type", 0) == key_type else []

    def partitions(self) -> list[tuple[int, int, str | None, int]]:
        """(topic position, partition position, topic name, partition) for a partitioned API."""
        return self._cached("_parts", self._find_partitions)

    def _find_partitions(self) -> list:
        shape = SHAPES.get(self.api_key)
        if shape is None:
            return []
        return [(ti, pi, self.topic_name(t, shape.req_name), p.get(shape.req_index))
                for ti, t in enumerate(self.body.get(shape.req_topics) or ())
                for pi, p in enumerate(t.get(shape.req_parts) or ())]

    def topics(self) -> set:
        """Topic names an unpartitioned request names (Metadata, CreateTopics, AddPartitionsToTxn, ...)."""
        return self._cached("_topics", self._find_topics)

    def _find_topics(self) -> set:
        b = self.body
        names = {self.topic_name(t, "name") for key in ("topics", "v3_and_below_topics") for t in b.get(key) or ()
                 if isinstance(t, dict)}
        names.discard(None)
        names.discard("")
        for tx in b.get("transactions") or ():
            names.update(t.get("name") for t in tx.get("topics") or ())
        return names

    def groups(self) -> set:
        """Group ids the request names (FindCoordinator's group keys included)."""
        return self._cached("_groups", self._find_groups)

    def _find_groups(self) -> set:
        b = self.body
        out = {g.get("group_id") if isinstance(g, dict) else g for g in b.get("groups") or ()}
        if b.get("group_id"):
            out.add(b["group_id"])
        return out | set(self._found_by_coordinator(0))

    def transactional_ids(self) -> set:
        """Transactional ids the request names (FindCoordinator's transaction keys included)."""
        return self._cached("_txns", self._find_txns)

    def _find_txns(self) -> set:
        b = self.body
        out = {b[k] for k in ("transactional_id", "v3_and_below_transactional_id") if b.get(k)}
        out.update(tx.get("transactional_id") for tx in b.get("transactions") or ())
        return out | set(self._found_by_coordinator(1))


def coordinator_keys(body: dict) -> list[str]:
    """FindCoordinator's keys: `key` (v0-3) or `coordinator_keys` (v4+)."""
    keys = body.get("coordinator_keys")
    return list(keys) if keys else ([body["key"]] if body.get("key") is not None else [])


def split(shape: PartitionShape, body: dict, hit: set) -> tuple[dict, list]:
    """(the body without the `hit` (topic pos, partition pos) entries, error topics to merge back
    as (request topic entry, [partition ids]))."""
    keep_topics, failed = [], []
    for ti, t in enumerate(body.get(shape.req_topics) or ()):
        keep, lost = [], []
        for pi, p in enumerate(t.get(shape.req_parts) or ()):
            (lost if (ti, pi) in hit else keep).append(p)
        if keep:
            nt = dict(t)
            nt[shape.req_parts] = keep
            keep_topics.append(nt)
        if lost:
            failed.append((t, [p.get(shape.req_index) for p in lost]))
    new = dict(body)
    new[shape.req_topics] = keep_topics
    return new, failed


def error_topics(shape: PartitionShape, failed: list, code: int) -> list[dict]:
    """The answer's topic entries for partitions failed with `code`."""
    out = []
    for t, parts in failed:
        entry = {shape.resp_name: t.get(shape.req_name), shape.resp_parts: [shape.entry(i, code) for i in parts]}
        if "topic_id" in t:
            entry["topic_id"] = t["topic_id"]
        out.append(entry)
    return out


def merge(shape: PartitionShape, result: dict, extra: list[dict]) -> dict:
    """Add error topic entries to an answer, into the same topic's entry when it has one."""
    topics = result.setdefault(shape.resp_topics, [])
    by_key = {_tkey(t, shape.resp_name): t for t in topics}
    for e in extra:
        t = by_key.get(_tkey(e, shape.resp_name))
        if t is None:
            topics.append(e)
        else:
            t[shape.resp_parts] = list(t.get(shape.resp_parts) or ()) + e[shape.resp_parts]
    return result


def overwrite(shape: PartitionShape, result: dict, failed: list, code: int) -> dict:
    """An answer already computed, with the failed partitions' entries replaced by error entries."""
    want = {}
    for t, parts in failed:
        for i in parts:
            want[(_tkey(t, shape.req_name), i)] = True
    for t in result.get(shape.resp_topics) or ():
        key = _tkey(t, shape.resp_name)
        parts = t.get(shape.resp_parts) or []
        for n, p in enumerate(parts):
            if (key, p.get(shape.resp_index)) in want:
                parts[n] = shape.entry(p.get(shape.resp_index), code)
    return result


def _tkey(t: dict, name_key: str):
    """A topic entry's identity: its name, or its id when it carries no name (Fetch v13+)."""
    return t.get(name_key) or t.get("topic_id")
