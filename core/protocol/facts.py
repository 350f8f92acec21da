"""Facts about a request beside its schema, declared once per API (apis/*.py), as Kafka's
message specs carry `entityType` on their fields: where the request names topics and
partitions (by name, or by id from some version on) and where its answer puts a partition's
error; which fields are group ids and transactional ids; which ACL operation on which resource
the request needs. The broker derives from them its authorization rules, topic-id resolution,
the fault engine's answer shapes and the per-partition error answers.

No I/O and no broker here: names of operations and resources are Kafka's (AclOperation,
ResourceType), as strings.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class Partitions:
    """A request that names topics and their partitions, and its answer per partition.

    `ids_from`: the first version whose topics are named by `topic_id` only (None: always by
    name, or see TopicIds). Before authorization each id is given its topic's name, and an id no
    topic has is taken out and answered UNKNOWN_TOPIC_ID. `entry(index, code)` is the answer's
    partition entry for a partition that fails with `code`; `empty()` an answer with no topics.
    `within`: the list (of groups) the topics sit in, when they are not at the top."""

    req_topics: str
    req_name: str
    req_parts: str
    req_index: str
    resp_topics: str
    resp_name: str
    resp_parts: str
    resp_index: str
    entry: Callable[[int, int], dict]
    empty: Callable[[], dict]
    ids_from: int | None = None
    within: str | None = None

    def error_topic(self, topic: dict, code: int, name: str | None = None) -> dict:
        """The answer's entry for a request topic all of whose partitions fail with `code`."""
        parts = topic.get(self.req_parts) or ()
        out = {self.resp_name: topic.get(self.req_name) if name is None else name,
               self.resp_parts: [self.entry(p if isinstance(p, int) else p[self.req_index], code) for p in parts]}
        if "topic_id" in topic:
            out["topic_id"] = topic["topic_id"]
        return out


@dataclass(frozen=True)
class TopicIds:
    """A request whose topics (the list `topics`) may name a topic by `topic_id` instead of by the
    field `name`, from version `since`. Before authorization each such topic is given its name in
    place; one whose id no topic has keeps no name, for the handler to answer where it stands
    (Fetch in its partitions' entries, Metadata and DeleteTopics UNKNOWN_TOPIC_ID)."""

    topics: str
    name: str
    since: int


@dataclass(frozen=True)
class Acl:
    """The one ACL check an API needs: `operation` on `resource`. For a GROUP or TRANSACTIONAL_ID
    the resource's name is the request field `name_field`; for TOPIC the request's topics (its
    `Partitions`, or the list `topics_field` with names under `name_field`) are checked one by
    one, and the topics refused answer with TOPIC_AUTHORIZATION_FAILED; CLUSTER has no name."""

    operation: str
    resource: str
    name_field: str | None = None
    topics_field: str | None = None


@dataclass(frozen=True)
class Facts:
    """What the broker reads of one API's requests besides their fields' values.

    `acl` None with `open` False: the authorizer has a rule of its own for the API (named after
    it), or, without one, only the cluster's operators may send it (CLUSTER_ACTION).
    `open`: every connection may send it (authentication runs around it)."""

    acl: Acl | None = None
    open: bool = False
    partitions: Partitions | None = None
    topic_ids: TopicIds | None = None
    group_fields: tuple[str, ...] = field(default=())
    transactional_fields: tuple[str, ...] = field(default=())
    coordinator: bool = False  # answered by a coordinator (groups or transactions)
    partition_data: bool = False  # answered per partition's data: an offline partition fails it


NO_FACTS = Facts()
