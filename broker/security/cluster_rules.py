"""Authorization of the cluster self-description APIs, as Kafka's KafkaApis checks them.

DescribeQuorum: DESCRIBE on the cluster. UpdateFeatures: ALTER on the cluster.
ListConfigResources: DESCRIBE_CONFIGS on the cluster. DescribeTopicPartitions checks
DESCRIBE on each topic itself (unauthorized topics are left out of a listing of every
topic, answered TOPIC_AUTHORIZATION_FAILED when named). The share-group state APIs
(a share-partition leader asking the share coordinator) need CLUSTER_ACTION, the rule
of every API without one, and so does FindCoordinator for a share-partition key.
"""
from __future__ import annotations

from pylog.broker.security import authorizer as A
from pylog.core.security.acl import CLUSTER_NAME, AclOperation as Op, ResourceType as Res


def _cluster(op: Op):
    def rule(az, ctx, api, body):
        if az.allowed(ctx, op, Res.CLUSTER, CLUSTER_NAME):
            return None
        return az.refuse(api, ctx, body, A.CLUSTER_DENIED)
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


CLUSTER_RULES = {
    55: _cluster(Op.DESCRIBE),
    57: _cluster(Op.ALTER),
    74: _cluster(Op.DESCRIBE_CONFIGS),
    75: _in_handler,
}
