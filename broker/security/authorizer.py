"""Authorization before a handler runs, per Kafka's KafkaApis.

With `authorizer.class.name` set to Kafka's StandardAuthorizer, every request
passes `Authorizer.check` first. Per API (the table at the bottom) it either
refuses the whole request (a group, cluster or transactional-id check: the
handler's own error answer with the code), or splits the request: resources
the principal may not touch are taken out, the handler serves the rest, and
`merge` adds their entries back with TOPIC_AUTHORIZATION_FAILED (or the
resource's code). Metadata and the listing APIs filter what they show.
"""
from __future__ import annotations

import logging

from pylog.broker.common.produce_body import has_transactional_records
from pylog.broker.security.denials import CLUSTER_DENIED, GROUP_DENIED, MESSAGES, TOPIC_DENIED, TXN_DENIED
from pylog.broker.security.cluster_rules import CLUSTER_RULES, share_keys_or
from pylog.broker.security.share_rules import SHARE_RULES, STREAMS_RULES
from pylog.core.protocol import SCHEMAS
from pylog.core.protocol.facts import Acl
from pylog.core.security.acl import (
    CLUSTER_NAME,
    STANDARD_AUTHORIZER,
    AclAuthorizer,
    AclOperation as Op,
    ResourceType as Res,
)

log = logging.getLogger("pylog.broker")

ACCEPTED_CLASS_NAMES = (STANDARD_AUTHORIZER, "kafka.security.authorizer.AclAuthorizer")
# ConfigResource types in DescribeConfigs / AlterConfigs
_CONFIG_TOPIC, _CONFIG_BROKER, _CONFIG_BROKER_LOGGER, _CONFIG_GROUP = 2, 4, 8, 32


def make_authorizer(config, store):
    """The Authorizer named by `authorizer.class.name`, or None (no authorization)."""
    name = (config.get("authorizer.class.name") or "").strip()
    if not name:
        return None
    if name not in ACCEPTED_CLASS_NAMES:
        from pylog.core.errors import UsageError

        raise UsageError(f"authorizer.class.name: pylog provides {STANDARD_AUTHORIZER}, not {name}")
    supers = [s.strip() for s in (config.get("super.users") or "").split(";") if s.strip()]
    return Authorizer(store, supers, config.get("allow.everyone.if.no.acl.found", False))


class Authorizer:
    """StandardAuthorizer over the durable ACLs, plus the per-API table."""

    def __init__(self, store, super_users, allow_everyone_if_no_acl_found: bool):
        self.store = store
        # what the rules read of the node, given by attach(): topic ids, the topics, the config
        self.topic_by_id, self.topics, self.config = (lambda topic_id: None), (lambda: {}), {}
        self.acls = AclAuthorizer(store.acls, super_users, allow_everyone_if_no_acl_found)

    def attach(self, topic_by_id, topics, config) -> None:
        """The node's topic lookups (`topic_by_id(id)`, `topics()`: the topics by name) and its config."""
        self.topic_by_id, self.topics, self.config = topic_by_id, topics, config

    def reload(self) -> None:
        """After CreateAcls/DeleteAcls changed the store."""
        self.acls.replace(self.store.acls)

    def allowed(self, ctx, op: Op, rtype: Res, name: str) -> bool:
        conn = ctx.conn
        return self.acls.authorize(conn.principal, conn.host, op, rtype, name)

    # ---- the hook ----------------------------------------------------------
    def check(self, ctx, api, body: dict):
        """(body for the handler, denied part) or (None, the whole refusal response)."""
        if ctx.api_key in OPEN_APIS:
            return body, None
        rule = _RULES.get(ctx.api_key)
        if rule is None:  # an API without a rule is for the cluster's operators only
            rule = _whole(Op.CLUSTER_ACTION, Res.CLUSTER, CLUSTER_DENIED)
        out = rule(self, ctx, api, body)
        if out is None:
            return body, None
        return out

    def merge(self, ctx, result: dict, denied) -> dict:
        if callable(denied):
            return denied(result)
        for key, value in denied.items():
            if isinstance(value, list) and value:
                result[key] = list(result.get(key) or []) + value
        return result

    def refuse(self, api, ctx, body, code, msg=None):
        return None, api.error(body, ctx.api_version, code, msg or MESSAGES.get(code))


# ---- rule builders ---------------------------------------------------------
def _whole(op: Op, rtype: Res, code: int, name_of=None):
    """One check for the whole request (a group's, the cluster's)."""
    def rule(az: Authorizer, ctx, api, body):
        name = CLUSTER_NAME if rtype == Res.CLUSTER else name_of(body)
        if name is None or az.allowed(ctx, op, rtype, name):
            return None
        return az.refuse(api, ctx, body, code)
    return rule


def _split_topics(op: Op, list_key: str, name_key: str, code=TOPIC_DENIED, extra=None):
    """Take unauthorized topics out of body[list_key]; their error entries are merged back."""
    def rule(az: Authorizer, ctx, api, body):
        if extra is not None:
            refused = extra(az, ctx, api, body)
            if refused is not None:
                return refused
        items = body.get(list_key) or []
        keep, drop = [], []
        for t in items:
            name = t.get(name_key)
            if name is not None and az.allowed(ctx, op, Res.TOPIC, name):
                keep.append(t)
            else:
                drop.append(t)
        if not drop:
            return None
        new = dict(body)
        new[list_key] = keep
        denied_body = dict(body)
        denied_body[list_key] = drop
        return new, api.error(denied_body, ctx.api_version, code, MESSAGES.get(code))
    return rule


def _fetch(az: Authorizer, ctx, api, body):
    if body.get("replica_id", -1) >= 0:  # a follower: cluster action
        return _whole(Op.CLUSTER_ACTION, Res.CLUSTER, CLUSTER_DENIED)(az, ctx, api, body)
    keep, drop = [], []
    for t in body.get("topics") or []:
        name = t.get("topic")  # v13+: named by dispatch from its id (None: an unknown id)
        (keep if name is not None and az.allowed(ctx, Op.READ, Res.TOPIC, name) else drop).append(t)
    if not drop:
        return None
    new = dict(body)
    new["topics"] = keep
    denied = [{"topic": t.get("topic"), "topic_id": t.get("topic_id"), "partitions": [
        {"partition_index": p.get("partition", 0), "error_code": TOPIC_DENIED, "high_watermark": -1,
         "last_stable_offset": -1, "log_start_offset": -1, "aborted_transactions": [],
         "preferred_read_replica": -1, "records": b""} for p in t.get("partitions") or []]} for t in drop]
    return new, {"responses": denied}


def _produce_txn(az: Authorizer, ctx, api, body):
    tid = body.get("transactional_id")
    if not has_transactional_records(body):
        return None  # Kafka checks the transactional id only for transactional records
    if tid is None or not az.allowed(ctx, Op.WRITE, Res.TRANSACTIONAL_ID, tid):
        return az.refuse(api, ctx, body, TXN_DENIED)
    return None


def _init_producer_id(az: Authorizer, ctx, api, body):
    tid = body.get("transactional_id")
    if tid:
        if az.allowed(ctx, Op.WRITE, Res.TRANSACTIONAL_ID, tid):
            return None
        return az.refuse(api, ctx, body, TXN_DENIED)
    # idempotent producer: IDEMPOTENT_WRITE on the cluster, or WRITE on some topic (KIP-679)
    conn = ctx.conn
    if (az.allowed(ctx, Op.IDEMPOTENT_WRITE, Res.CLUSTER, CLUSTER_NAME)
            or az.acls.authorize_any(conn.principal, conn.host, Op.WRITE, Res.TOPIC)):
        return None
    return az.refuse(api, ctx, body, CLUSTER_DENIED)


def _metadata(az: Authorizer, ctx, api, body):
    topics = body.get("topics")
    if topics is None or (ctx.api_version == 0 and not topics):
        # all topics: show only those the principal may describe
        def filt(result):
            result["topics"] = [t for t in result.get("topics") or []
                                if az.allowed(ctx, Op.DESCRIBE, Res.TOPIC, t.get("name") or "")]
            return result
        return body, filt
    auto = body.get("allow_auto_topic_creation", True) and az.config.get("auto.create.topics.enable", True)
    keep, drop = [], []
    for t in topics:
        name = t.get("name")  # v10+ by id: named by dispatch (None: an unknown id)
        if name is None or not az.allowed(ctx, Op.DESCRIBE, Res.TOPIC, name):
            drop.append(t)
        elif (auto and name not in az.topics()
              and not az.allowed(ctx, Op.CREATE, Res.CLUSTER, CLUSTER_NAME)
              and not az.allowed(ctx, Op.CREATE, Res.TOPIC, name)):
            drop.append(t)  # Kafka: not allowed to auto-create it
        else:
            keep.append(t)
    if not drop:
        return None
    new = dict(body)
    new["topics"] = keep
    denied = api.error(dict(body, topics=drop), ctx.api_version, TOPIC_DENIED, MESSAGES[TOPIC_DENIED])
    return new, {"topics": denied["topics"]}


def _create_topics(az: Authorizer, ctx, api, body):
    if az.allowed(ctx, Op.CREATE, Res.CLUSTER, CLUSTER_NAME):
        return None
    return _split_topics(Op.CREATE, "topics", "name")(az, ctx, api, body)


def _may_delete(az: Authorizer, ctx, name) -> bool:
    """Kafka's DeleteTopics order: DESCRIBE, then existence (the handler answers a missing
    topic UNKNOWN_TOPIC_OR_PARTITION), then DELETE."""
    if name is not None and az.allowed(ctx, Op.DELETE, Res.CLUSTER, CLUSTER_NAME):
        return True  # KRaft's controller: DELETE on the cluster covers every topic
    if name is None or not az.allowed(ctx, Op.DESCRIBE, Res.TOPIC, name):
        return False
    return name not in az.topics() or az.allowed(ctx, Op.DELETE, Res.TOPIC, name)


def _delete_topics(az: Authorizer, ctx, api, body):
    names = body.get("topic_names")
    if names:
        keep = [n for n in names if _may_delete(az, ctx, n)]
        drop = [n for n in names if n not in keep]
        if not drop:
            return None
        new = dict(body)
        new["topic_names"] = keep
        return new, api.error(dict(body, topic_names=drop), ctx.api_version, TOPIC_DENIED,
                              MESSAGES[TOPIC_DENIED])
    keep, drop = [], []
    for t in body.get("topics") or []:
        name = t.get("name")  # by id: named by dispatch (None: an unknown id)
        (keep if _may_delete(az, ctx, name) else drop).append(t)
    if not drop:
        return None
    return dict(body, topics=keep), api.error(dict(body, topics=drop), ctx.api_version, TOPIC_DENIED,
                                              MESSAGES[TOPIC_DENIED])


def _configs(op: Op):
    def rule(az: Authorizer, ctx, api, body):
        keep, drop_topic, drop_cluster, drop_group = [], [], [], []
        for r in body.get("resources") or []:
            rtype = r.get("resource_type")
            if rtype == _CONFIG_TOPIC:
                (keep if az.allowed(ctx, op, Res.TOPIC, r.get("resource_name") or "") else drop_topic).append(r)
            elif rtype in (_CONFIG_BROKER, _CONFIG_BROKER_LOGGER):
                (keep if az.allowed(ctx, op, Res.CLUSTER, CLUSTER_NAME) else drop_cluster).append(r)
            elif rtype == _CONFIG_GROUP:  # group configs: the group's DESCRIBE_CONFIGS / ALTER_CONFIGS
                (keep if az.allowed(ctx, op, Res.GROUP, r.get("resource_name") or "") else drop_group).append(r)
            else:
                keep.append(r)
        if not drop_topic and not drop_cluster and not drop_group:
            return None
        new = dict(body)
        new["resources"] = keep
        denied: dict = {}
        for drop, code in ((drop_topic, TOPIC_DENIED), (drop_cluster, CLUSTER_DENIED), (drop_group, GROUP_DENIED)):
            if drop:
                part = api.error(dict(body, resources=drop), ctx.api_version, code, MESSAGES[code])
                for k, v in part.items():
                    if isinstance(v, list):
                        denied[k] = denied.get(k, []) + v
        return new, denied
    return rule


def _group_then_topics(group_op: Op, topic_op: Op):
    def rule(az: Authorizer, ctx, api, body):
        gid = body.get("group_id") or ""
        if not az.allowed(ctx, group_op, Res.GROUP, gid):
            return az.refuse(api, ctx, body, GROUP_DENIED)
        return _split_topics(topic_op, "topics", "name")(az, ctx, api, body)
    return rule


def _offset_fetch(az: Authorizer, ctx, api, body):
    groups = body.get("groups")
    if groups:
        keep = [g for g in groups if az.allowed(ctx, Op.DESCRIBE, Res.GROUP, g.get("group_id") or "")]
        drop = [g for g in groups if g not in keep]
        if not keep:
            return az.refuse(api, ctx, body, GROUP_DENIED)
        new = dict(body, groups=keep)
        denied = api.error(dict(body, groups=drop), ctx.api_version, GROUP_DENIED, MESSAGES[GROUP_DENIED])
    else:
        if not az.allowed(ctx, Op.DESCRIBE, Res.GROUP, body.get("group_id") or ""):
            return az.refuse(api, ctx, body, GROUP_DENIED)
        new, denied = body, {"groups": []}

    def may(name):
        return az.allowed(ctx, Op.DESCRIBE, Res.TOPIC, name or "")

    def refused(requested):
        # Kafka: a named topic the principal may not describe is answered TOPIC_AUTHORIZATION_FAILED
        return [{"name": t["name"], "partitions": [
            {"partition_index": p, "committed_offset": -1, "committed_leader_epoch": -1, "metadata": "",
             "error_code": TOPIC_DENIED} for p in t.get("partition_indexes") or ()]}
            for t in requested or () if not may(t.get("name"))]

    by_group = {g.get("group_id"): g.get("topics") for g in new.get("groups") or ()}

    def filt(result):
        # committed offsets of topics the principal may not describe are left out (all-topics
        # requests) or refused (named ones)
        def topics(ts, requested):
            return [t for t in ts or [] if may(t.get("name"))] + refused(requested)
        result["topics"] = topics(result.get("topics"), body.get("topics"))
        for g in result.get("groups") or []:
            if not g.get("error_code"):
                g["topics"] = topics(g.get("topics"), by_group.get(g.get("group_id")))
        result["groups"] = list(result.get("groups") or []) + list(denied.get("groups") or [])
        return result
    return new, filt


def _find_coordinator(az: Authorizer, ctx, api, body):
    key_type = body.get("key_type", 0)
    rtype, code = (Res.TRANSACTIONAL_ID, TXN_DENIED) if key_type == 1 else (Res.GROUP, GROUP_DENIED)
    keys = body.get("coordinator_keys")
    if ctx.api_version < 4 or keys is None:
        if az.allowed(ctx, Op.DESCRIBE, rtype, body.get("key") or ""):
            return None
        return az.refuse(api, ctx, body, code)
    keep = [k for k in keys if az.allowed(ctx, Op.DESCRIBE, rtype, k)]
    drop = [k for k in keys if k not in keep]
    if not drop:
        return None
    return dict(body, coordinator_keys=keep), api.error(dict(body, coordinator_keys=drop), ctx.api_version, code,
                                                        MESSAGES.get(code))


def _group_list(list_key: str, op: Op, rtype: Res = Res.GROUP, code: int = GROUP_DENIED):
    """DescribeGroups / DeleteGroups (DescribeTransactions): a list of ids, each checked."""
    def rule(az: Authorizer, ctx, api, body):
        groups = body.get(list_key) or []
        keep = [g for g in groups if az.allowed(ctx, op, rtype, g)]
        drop = [g for g in groups if g not in keep]
        if not drop:
            return None
        return dict(body, **{list_key: keep}), api.error(dict(body, **{list_key: drop}), ctx.api_version,
                                                         code, MESSAGES[code])
    return rule


def _describe_transactions(az: Authorizer, ctx, api, body):
    """DescribeTransactions: DESCRIBE on each id; an answer lists only the topics the principal
    may describe (Kafka leaves the others out)."""
    split = _group_list("transactional_ids", Op.DESCRIBE, Res.TRANSACTIONAL_ID, TXN_DENIED)(az, ctx, api, body)
    new, denied = split if split is not None else (body, None)

    def filt(result):
        for s in result.get("transaction_states") or ():
            s["topics"] = [t for t in s.get("topics") or () if az.allowed(ctx, Op.DESCRIBE, Res.TOPIC, t["topic"])]
        return result if denied is None else az.merge(ctx, result, denied)
    return new, filt


def _list_transactions(az: Authorizer, ctx, api, body):
    """ListTransactions: only the transactional ids the principal may describe."""
    def filt(result):
        result["transaction_states"] = [t for t in result.get("transaction_states") or []
                                        if az.allowed(ctx, Op.DESCRIBE, Res.TRANSACTIONAL_ID, t["transactional_id"])]
        return result
    return body, filt


def _list_groups(az: Authorizer, ctx, api, body):
    if az.allowed(ctx, Op.DESCRIBE, Res.CLUSTER, CLUSTER_NAME):
        return None

    def filt(result):
        result["groups"] = [g for g in result.get("groups") or []
                            if az.allowed(ctx, Op.DESCRIBE, Res.GROUP, g.get("group_id") or "")]
        return result
    return body, filt


def _txn(extra_group=False):
    def rule(az: Authorizer, ctx, api, body):
        tid = body.get("transactional_id") or body.get("v3_and_below_transactional_id") or ""
        if not az.allowed(ctx, Op.WRITE, Res.TRANSACTIONAL_ID, tid):
            return az.refuse(api, ctx, body, TXN_DENIED)
        if extra_group and not az.allowed(ctx, Op.READ, Res.GROUP, body.get("group_id") or ""):
            return az.refuse(api, ctx, body, GROUP_DENIED)
        return None
    return rule


def _cluster_or(op: Op, rule):
    """Everything allowed with `op` on the cluster, else `rule` (OffsetForLeaderEpoch: a replica's
    CLUSTER_ACTION; WriteTxnMarkers: kafka-transactions' abort with ALTER, KIP-664)."""
    def either(az: Authorizer, ctx, api, body):
        if az.allowed(ctx, op, Res.CLUSTER, CLUSTER_NAME):
            return None
        return rule(az, ctx, api, body)
    return either


def _consumer_group_heartbeat(az: Authorizer, ctx, api, body):
    """KIP-848: READ on the group, DESCRIBE on every subscribed topic (Kafka answers the whole
    heartbeat TOPIC_AUTHORIZATION_FAILED when one is missing, with no message)."""
    if not az.allowed(ctx, Op.READ, Res.GROUP, body.get("group_id") or ""):
        return az.refuse(api, ctx, body, GROUP_DENIED)
    names = body.get("subscribed_topic_names") or []
    if any(not az.allowed(ctx, Op.DESCRIBE, Res.TOPIC, n) for n in set(names)):
        return None, api.error(body, ctx.api_version, TOPIC_DENIED, None)
    return None


def _txn_offset_commit(az: Authorizer, ctx, api, body):
    """WRITE on the transactional id, READ on the group (whole request), READ per topic."""
    refused = _txn(extra_group=True)(az, ctx, api, body)
    if refused is not None:
        return refused
    return _split_topics(Op.READ, "topics", "name")(az, ctx, api, body)


def topic_filter(az: Authorizer | None, ctx, op: Op = Op.DESCRIBE):
    """A predicate on topic names: may this request's principal do `op` on the topic
    (always true without an authorizer)."""
    if az is None:
        return lambda name: True
    return lambda name: az.allowed(ctx, op, Res.TOPIC, name)


# the APIs whose checks are more than one ACL on one resource, by name (Kafka's KafkaApis)
CUSTOM_RULES = {
    "Produce": _split_topics(Op.WRITE, "topic_data", "name", extra=_produce_txn),
    "Fetch": _fetch,
    "Metadata": _metadata,
    "OffsetCommit": _group_then_topics(Op.READ, Op.READ),
    "OffsetFetch": _offset_fetch,
    "FindCoordinator": share_keys_or(_find_coordinator),
    "DescribeGroups": _group_list("groups", Op.DESCRIBE),
    "ListGroups": _list_groups,
    "CreateTopics": _create_topics,
    "DeleteTopics": _delete_topics,
    "InitProducerId": _init_producer_id,
    "OffsetForLeaderEpoch": _cluster_or(Op.CLUSTER_ACTION, _split_topics(Op.DESCRIBE, "topics", "topic")),
    "AddPartitionsToTxn": _txn(),
    "AddOffsetsToTxn": _txn(extra_group=True),
    "EndTxn": _txn(),
    "TxnOffsetCommit": _txn_offset_commit,
    "WriteTxnMarkers": _cluster_or(Op.ALTER, _whole(Op.CLUSTER_ACTION, Res.CLUSTER, CLUSTER_DENIED)),
    "DescribeConfigs": _configs(Op.DESCRIBE_CONFIGS),
    "AlterConfigs": _configs(Op.ALTER_CONFIGS),
    "IncrementalAlterConfigs": _configs(Op.ALTER_CONFIGS),
    "DeleteGroups": _group_list("groups_names", Op.DELETE),
    "OffsetDelete": _group_then_topics(Op.DELETE, Op.READ),
    "DescribeTransactions": _describe_transactions,
    "ListTransactions": _list_transactions,
    "ConsumerGroupHeartbeat": _consumer_group_heartbeat,
    "ConsumerGroupDescribe": _group_list("group_ids", Op.DESCRIBE),
    **SHARE_RULES, **STREAMS_RULES, **CLUSTER_RULES,  # the share, streams and cluster APIs' own modules
}


def rule_from_facts(acl: Acl):
    """The rule of an API that needs one ACL (its request facts): on the cluster, on the group or
    transactional id a field names, or on each topic it names (the refused ones answer
    TOPIC_AUTHORIZATION_FAILED)."""
    op, rtype = Op[acl.operation], Res[acl.resource]
    if rtype == Res.CLUSTER:
        return _whole(op, rtype, CLUSTER_DENIED)
    if rtype == Res.TOPIC:
        return _split_topics(op, acl.topics_field, acl.name_field)
    code = GROUP_DENIED if rtype == Res.GROUP else TXN_DENIED
    return _whole(op, rtype, code, lambda body: body.get(acl.name_field) or "")


def rules_of(schemas: dict) -> dict:
    """Each API's rule by key: its own (CUSTOM_RULES), or the one its request facts declare."""
    rules = {}
    for key, api in schemas.items():
        acl = api.facts.acl
        if api.name in CUSTOM_RULES:
            rules[key] = CUSTOM_RULES[api.name]
        elif acl is not None:
            if acl.resource == "TOPIC" and acl.topics_field is None:
                shape = api.facts.partitions
                acl = Acl(acl.operation, acl.resource, shape.req_name, shape.req_topics)
            rules[key] = rule_from_facts(acl)
    return rules


# requests every connection may send (authentication runs before them)
OPEN_APIS = frozenset(key for key, api in SCHEMAS.items() if api.facts.open)
_RULES = rules_of(SCHEMAS)
