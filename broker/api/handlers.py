"""The broker's one request-handler table: every API it serves, in one place.

Each entry pairs an API's protocol schema (key, name and the version range,
declared once in pylog.core.protocol.apis) with the module-level function that
answers it and the function that builds its whole-request error answer, both
named after the API in its family's module. The
broker advertises exactly these APIs at exactly the schema's versions.

The table comes in two parts: FIRST, what clients ask before anything else
(ApiVersions, Metadata, DescribeCluster, SASL), whose modules are light and are
served from the moment the listener is up; and the rest (`the_rest()`), whose
families bring the coordinators with them and load while the first requests are
answered. `SERVED` declares every API of both with its advertised range, so
ApiVersions answers in full before the rest is loaded.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

from pylog.broker.api import meta as apis_meta
from pylog.broker.net import sasl
from pylog.broker.api.context import ErrorBuilder, Response, partition_error_answer
from pylog.core.errors import ErrorCode
from pylog.core.protocol import Api
from pylog.core.protocol.apis import (
    cluster, configs, consumer_groups, fetch, groups, meta, produce, quotas, reassign, security, share_groups,
    share_state, streams_groups, tokens, topics, txn,
)


@dataclass(frozen=True)
class Handler:
    """One served API: its schema, `handle(node, ctx, body)` and `error(body, version, code, msg)`;
    `node` is the view of the node its family is given (api/views.py, HANDLER_VIEWS by `family`)."""

    schema: Api
    handle: Callable[..., Response]
    error: ErrorBuilder
    family: str = ""  # the handler module's name: produce, fetch, groups, ..., sasl
    # ApiVersions may list an older floor than is served: Kafka 4 lists Produce from v0 and
    # serves v3+ (KAFKA-18659; librdkafka before 2.10 compresses only when v0 is listed)
    advertised_min_version: int | None = None

    @property
    def advertised_min(self) -> int:
        """The min version ApiVersions lists."""
        v = self.advertised_min_version
        return self.schema.min_version if v is None else v

    @property
    def key(self) -> int:
        """The api key (from the schema)."""
        return self.schema.key


def served(module, *schemas: Api, feature: str | None = None, **options) -> tuple[Handler, ...]:
    """The handlers of one API family: each schema is answered by the function of `module` named
    after it (ApiVersions -> api_versions) and its error answer by `api_versions_error` (or, for an
    API whose request facts declare its partitions, the answer derived from them). With a
    `feature`, the APIs answer UNSUPPORTED_VERSION while that feature is finalized at level 0
    (share groups with share.version 0, as Kafka 4.4 answers)."""
    out = []
    for schema in schemas:
        name = re.sub(r"(?<!^)(?=[A-Z])", "_", schema.name).lower()
        handle, error = getattr(module, name), getattr(module, name + "_error", None)
        if error is None:
            error = partition_error_answer(schema.facts.partitions)
        if feature is not None:
            handle = _gated(handle, error, feature)
        out.append(Handler(schema, handle, error, getattr(module, "__name__", "").rpartition(".")[2], **options))
    return tuple(out)


def _gated(handle, error: ErrorBuilder, feature: str):
    def gated(node, ctx, body):
        if node.features.level(feature) == 0:
            return error(body, ctx.api_version, ErrorCode.UNSUPPORTED_VERSION, None)
        return handle(node, ctx, body)
    return gated


# what clients ask first (and authentication, before anything else on SASL listeners)
FIRST: tuple[Handler, ...] = (
    *served(apis_meta, meta.API_VERSIONS, meta.METADATA, meta.DESCRIBE_CLUSTER),
    *served(sasl, meta.SASL_HANDSHAKE, security.SASL_AUTHENTICATE),
)

# the rest, by family: (family, schemas, served() options)
_FAMILIES: tuple[tuple[str, tuple[Api, ...], dict], ...] = (
    # producing
    ("produce", (produce.PRODUCE,), {"advertised_min_version": 0}),
    ("produce", (produce.INIT_PRODUCER_ID,), {}),
    # fetching and offsets
    ("fetch", (fetch.FETCH, fetch.LIST_OFFSETS, fetch.OFFSET_FOR_LEADER_EPOCH), {}),
    # topic administration
    ("admin", (topics.CREATE_TOPICS, topics.DELETE_TOPICS, topics.CREATE_PARTITIONS, topics.DELETE_RECORDS,
               configs.DESCRIBE_LOG_DIRS), {}),
    # partition placement (one node: nothing to elect or move)
    ("reassign", (reassign.ELECT_LEADERS, reassign.ALTER_PARTITION_REASSIGNMENTS,
                  reassign.LIST_PARTITION_REASSIGNMENTS), {}),
    # configs
    ("configs", (configs.DESCRIBE_CONFIGS, configs.ALTER_CONFIGS, configs.INCREMENTAL_ALTER_CONFIGS), {}),
    # consumer groups (the group coordinator)
    ("groups", (groups.FIND_COORDINATOR, groups.JOIN_GROUP, groups.SYNC_GROUP, groups.HEARTBEAT,
                groups.LEAVE_GROUP, groups.OFFSET_COMMIT, groups.OFFSET_FETCH, groups.OFFSET_DELETE,
                groups.LIST_GROUPS, groups.DESCRIBE_GROUPS, groups.DELETE_GROUPS), {}),
    # KIP-848 consumer groups
    ("consumer_groups", (consumer_groups.CONSUMER_GROUP_HEARTBEAT, consumer_groups.CONSUMER_GROUP_DESCRIBE), {}),
    # streams groups (KIP-1071)
    ("streams_groups", (streams_groups.STREAMS_GROUP_HEARTBEAT, streams_groups.STREAMS_GROUP_DESCRIBE,
                        streams_groups.STREAMS_GROUP_TOPOLOGY_DESCRIPTION_UPDATE), {}),
    # share groups (KIP-932)
    ("share", (share_groups.SHARE_GROUP_HEARTBEAT, share_groups.SHARE_GROUP_DESCRIBE, share_groups.SHARE_FETCH,
               share_groups.SHARE_ACKNOWLEDGE), {"feature": "share.version"}),
    ("share_admin", (share_groups.DESCRIBE_SHARE_GROUP_OFFSETS, share_groups.ALTER_SHARE_GROUP_OFFSETS,
                     share_groups.DELETE_SHARE_GROUP_OFFSETS), {"feature": "share.version"}),
    # the share coordinator's state APIs (what a share-partition leader asks it)
    ("share_state", (share_state.INITIALIZE_SHARE_GROUP_STATE, share_state.READ_SHARE_GROUP_STATE,
                     share_state.WRITE_SHARE_GROUP_STATE, share_state.DELETE_SHARE_GROUP_STATE,
                     share_state.READ_SHARE_GROUP_STATE_SUMMARY), {}),
    # transactions (the transaction coordinator)
    ("txn", (txn.ADD_PARTITIONS_TO_TXN, txn.ADD_OFFSETS_TO_TXN, txn.END_TXN, txn.WRITE_TXN_MARKERS,
             txn.TXN_OFFSET_COMMIT, txn.DESCRIBE_PRODUCERS, txn.DESCRIBE_TRANSACTIONS, txn.LIST_TRANSACTIONS), {}),
    # ACLs and SCRAM credentials
    ("security", (security.DESCRIBE_ACLS, security.CREATE_ACLS, security.DELETE_ACLS,
                  security.DESCRIBE_USER_SCRAM_CREDENTIALS, security.ALTER_USER_SCRAM_CREDENTIALS), {}),
    # delegation tokens
    ("tokens", (tokens.CREATE_DELEGATION_TOKEN, tokens.RENEW_DELEGATION_TOKEN, tokens.EXPIRE_DELEGATION_TOKEN,
                tokens.DESCRIBE_DELEGATION_TOKEN), {}),
    # client quotas
    ("quotas", (quotas.DESCRIBE_CLIENT_QUOTAS, quotas.ALTER_CLIENT_QUOTAS), {}),
    # the cluster describing itself: its quorum, config resources and topics page by page
    ("cluster", (cluster.DESCRIBE_QUORUM, cluster.UPDATE_FEATURES, cluster.LIST_CONFIG_RESOURCES,
                 cluster.DESCRIBE_TOPIC_PARTITIONS), {}),
)

# every served API key -> the min version ApiVersions lists
SERVED: dict[int, int] = {
    **{h.key: h.advertised_min for h in FIRST},
    **{s.key: options.get("advertised_min_version", s.min_version) for _, schemas, options in _FAMILIES
       for s in schemas},
}


def _family_modules() -> dict:
    """The handler modules of the rest of the table (they import the coordinators)."""
    from pylog.broker.api import (
        admin, cluster as apis_cluster, configs as apis_configs, consumer_groups as apis_consumer_groups,
        fetch as apis_fetch, groups as apis_groups, produce as apis_produce, quotas as apis_quotas,
        reassign as apis_reassign, security as apis_security, share as apis_share, share_admin,
        share_state as apis_share_state, streams_groups as apis_streams_groups, tokens as apis_tokens,
        txn as apis_txn,
    )

    return {"produce": apis_produce, "fetch": apis_fetch, "admin": admin, "reassign": apis_reassign,
            "configs": apis_configs, "groups": apis_groups, "consumer_groups": apis_consumer_groups,
            "streams_groups": apis_streams_groups, "share": apis_share, "share_admin": share_admin,
            "share_state": apis_share_state, "txn": apis_txn, "security": apis_security, "tokens": apis_tokens,
            "quotas": apis_quotas, "cluster": apis_cluster}


_rest: list[tuple[Handler, ...]] = []


def the_rest() -> tuple[Handler, ...]:
    """The handlers after FIRST (their modules imported on the first call; any thread)."""
    if not _rest:
        modules = _family_modules()
        _rest.append(tuple(h for family, schemas, options in _FAMILIES
                           for h in served(modules[family], *schemas, **options)))
    return _rest[0]


def __getattr__(name: str):
    if name == "HANDLERS":  # the whole table, FIRST then the rest
        return FIRST + the_rest()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
