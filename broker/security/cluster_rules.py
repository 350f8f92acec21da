"""Authorization of the cluster self-description APIs Kafka's KafkaApis checks in the handler.

DescribeQuorum (DESCRIBE on the cluster), UpdateFeatures (ALTER) and ListConfigResources
(DESCRIBE_CONFIGS) need one ACL each: their request facts declare it (core/protocol/apis/cluster.py).
DescribeTopicPartitions checks DESCRIBE on each topic itself (unauthorized topics are left out
of a listing of every topic, answered TOPIC_AUTHORIZATION_FAILED when named). The share-group
state APIs (a share-partition leader asking the share coordinator) need CLUSTER_ACTION, the rule
of every API without one, and so does FindCoordinator for a share-partition key.
"""
from __future__ import annotations

from pylog.broker.security import denials
from pylog.core.security.acl import CLUSTER_NAME, AclOperation as Op, ResourceType as Res


def _cluster(op: Op):
    def rule(az, ctx, api, body):
        if az.allowed(ctx, op, Res.CLUSTER, CLUSTER_NAME):
            return None
        return az.refuse(api, ctx, body, denials.CLUSTER_DENIED)
    return rule


def share_keys_or(rule):
    """FindCoordinator: a share-partition key (type 2) needs CLUSTER_ACTION, as the share coordinator's
    clients are brokers; the other key types follow `rule`."""
    cluster_action = _cluster(Op.CLUSTER_ACTION)

    def either(az, ctx, api, body):
        return (cluster_action if body["key_type"] == 2 else rule)(az, ctx, api, body)
    return either


def _in_handler(az, ctx, api, body):
    return None


CLUSTER_RULES = {"DescribeTopicPartitions": _in_handler}
