"""Authorization of the cluster self-description APIs Kafka's KafkaApis checks in the handler.

DescribeQuorum (DESCRIBE on the cluster), UpdateFeatures (ALTER) and ListConfigResources
(DESCRIBE_CONFIGS) need one ACL each: their request facts declare it (core/protocol/apis/cluster.py).
DescribeTopicPartitions checks DESCRIBE on each topic itself (unauthorized topics are left out
of a listing of every topic, answered TOPIC_AUTHORIZATION_FAILED when named). The share-group
state APIs (a share-partition leader asking the share coordinator) need CLUSTER_ACTION, the rule
of every API without one.
"""
from __future__ import annotations


def _in_handler(az, ctx, api, body):
    return None


CLUSTER_RULES = {"DescribeTopicPartitions": _in_handler}
