"""Authorization of the cluster self-description APIs, as Kafka's KafkaApis checks them.

DescribeQuorum: DESCRIBE on the cluster. UpdateFeatures: ALTER on the cluster.
ListConfigResources: DESCRIBE_CONFIGS on the cluster. DescribeTopicPartitions checks
DESCRIBE on each topic itself (unauthorized topics are left out of a listing of every
topic, answered TOPIC_AUTHORIZATION_FAILED when named). The share-group state APIs
(a share-partition leader asking the share coordinator) need CLUSTER_ACTION, the rule
of every API without one.
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


def _in_handler(az, ctx, api, body):
    return None


CLUSTER_RULES = {
    "DescribeQuorum": _cluster(Op.DESCRIBE),
    "UpdateFeatures": _cluster(Op.ALTER),
    "ListConfigResources": _cluster(Op.DESCRIBE_CONFIGS),
    "DescribeTopicPartitions": _in_handler,
}
