"""The narrow views of the node each family of handlers is given, instead of the whole node.

The produce and fetch path gets a partition-log view, the group APIs the group facade, the
transactional APIs the transaction facade, the share APIs the share facade, and so on. Each view
is a plain object the Broker builds once the components it names exist, holding only those: the
components themselves, and the few node-wide functions as the components' own bound methods
(`wake` is the fetch waiters', `topic_by_id` the partition logs'), so that a handler reads plain
attributes and no view leads back to the Broker. What changes while the node runs (`stopping`)
is read through the node's shared run state (`state`, common/node_state.py).

tests/test_typed_seams.py fails when a handler module reads of its view what the view does not
declare, and when a handler or component can reach the Broker.
"""
from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Any, Awaitable, Callable

from pylog.broker.common.node_state import NodeState
from pylog.broker.net.connection import Connection

if TYPE_CHECKING:  # the coordinators load after the listener is up
    from pylog.broker.api.context import RequestContext
    from pylog.broker.groups.coordinator import GroupCoordinator
    from pylog.broker.groups.share.coordinator import ShareCoordinator
    from pylog.broker.node.features import FinalizedFeatures
    from pylog.broker.node.producer_ids import ProducerIdManager
    from pylog.broker.ops.dynamic_config import DynamicBrokerConfigs
    from pylog.broker.ops.quotas import QuotaManager
    from pylog.broker.security.authorizer import Authorizer
    from pylog.broker.security.store import SecurityStore
    from pylog.broker.security.tokens import TokenStore
    from pylog.broker.txn.coordinator import TransactionCoordinator
    from pylog.storage import LogManager


class View:
    """A view is built with every one of its attributes, by keyword, and holds nothing else."""

    __slots__ = ()

    def __init__(self, **parts):
        names = {n for cls in type(self).__mro__ for n in getattr(cls, "__slots__", ())}
        if set(parts) != names:
            raise TypeError(f"{type(self).__name__} takes {sorted(names)}, given {sorted(parts)}")
        for name, value in parts.items():
            setattr(self, name, value)


class PartitionLogView(View):
    """The partitions' logs and what goes with reading and appending to them (Fetch)."""

    __slots__ = ("config", "logs", "loop", "stats", "dir_health", "state", "quotas", "leader_epoch", "wake",
                 "wait_for_append")
    config: Any  # the broker's live config
    logs: LogManager
    loop: asyncio.AbstractEventLoop
    stats: Any  # ops.metrics.BrokerStats
    dir_health: Any  # ops.log_dirs.LogDirMonitor
    state: NodeState
    quotas: QuotaManager | None  # a fetch asks no more than its byte-rate quota allows
    leader_epoch: Callable[[Any], int]
    wake: Callable[[str, int], None]  # new data in a partition: parked fetches read again
    wait_for_append: Callable[[Any, float], Awaitable[None]]  # (keys, timeout s)


class ProduceView(PartitionLogView):
    """Produce: the partition logs, and the transactions and producer ids its checks read."""

    __slots__ = ("txn_coordinator", "producer_ids")
    txn_coordinator: TransactionCoordinator
    producer_ids: ProducerIdManager


class GroupView(View):
    """The group APIs (classic, consumer, streams; FindCoordinator): the group facade."""

    __slots__ = ("node_id", "logs", "group_coordinator", "txn_coordinator", "authorizer", "advertised_for")
    node_id: int
    logs: LogManager
    group_coordinator: GroupCoordinator
    txn_coordinator: TransactionCoordinator  # FindCoordinator for a transactional id
    authorizer: Authorizer | None
    advertised_for: Callable[[Connection], tuple[str, int]]


class TxnView(View):
    """The transactional APIs: the transaction facade, and the group facade for their offsets."""

    __slots__ = ("logs", "txn_coordinator", "group_coordinator", "authorizer", "leader_epoch", "wake")
    logs: LogManager
    txn_coordinator: TransactionCoordinator
    group_coordinator: GroupCoordinator
    authorizer: Authorizer | None
    leader_epoch: Callable[[Any], int]
    wake: Callable[[str, int], None]


class ShareView(View):
    """The share APIs (KIP-932): the share facade and the partition logs it reads."""

    __slots__ = ("node_id", "config", "logs", "loop", "share_coordinator", "features", "state", "topic_by_id",
                 "wait_for_append")
    node_id: int
    config: Any
    logs: LogManager
    loop: asyncio.AbstractEventLoop
    share_coordinator: ShareCoordinator
    features: FinalizedFeatures  # share.version 0 turns the share APIs off
    state: NodeState
    topic_by_id: Callable[[uuid.UUID], Any]
    wait_for_append: Callable[[Any, float], Awaitable[None]]


class MetadataView(View):
    """Metadata, ApiVersions, DescribeCluster and the cluster-wide lists: what the node publishes.
    Built before the coordinators (Metadata is answered from the start): `group_coordinator` is
    set once it exists."""

    __slots__ = ("node_id", "cluster_id", "config", "settings", "logs", "features", "authorizer",
                 "group_coordinator", "advertised_for", "api_version_ranges", "leader_epoch")
    node_id: int
    cluster_id: str
    config: Any
    settings: Any  # node.settings.BrokerSettings
    logs: LogManager
    features: FinalizedFeatures
    authorizer: Authorizer | None
    group_coordinator: GroupCoordinator | None  # the GROUP config resources
    advertised_for: Callable[[Connection], tuple[str, int]]
    api_version_ranges: Callable[[], list[dict]]
    leader_epoch: Callable[[Any], int]


class AdminView(View):
    """Topics, partitions, configs and reassignments."""

    __slots__ = ("node_id", "cluster_id", "config", "settings", "logs", "dynamic_configs", "authorizer",
                 "group_coordinator", "quotas", "wake_topic")
    node_id: int
    cluster_id: str
    config: Any
    settings: Any
    logs: LogManager
    dynamic_configs: DynamicBrokerConfigs | None
    authorizer: Authorizer | None
    group_coordinator: GroupCoordinator  # the GROUP config resources
    quotas: QuotaManager | None  # controller_mutation_rate
    wake_topic: Callable[[str], None]


class SecurityView(View):
    """ACLs, SCRAM credentials, delegation tokens and client quotas."""

    __slots__ = ("authorizer", "security", "tokens", "quotas")
    authorizer: Authorizer | None
    security: SecurityStore | None
    tokens: TokenStore | None
    quotas: QuotaManager | None


class SaslView(View):
    """SaslHandshake and SaslAuthenticate (net/sasl.py): a failed one is answered, then closed."""

    __slots__ = ("respond_and_close",)
    respond_and_close: Callable[[RequestContext, dict, str], None]


# handler module -> the view its functions are typed by
FAMILY_VIEWS = {
    "produce": ProduceView, "fetch": PartitionLogView,
    "groups": GroupView, "consumer_groups": GroupView, "streams_groups": GroupView,
    "txn": TxnView,
    "share": ShareView, "share_admin": ShareView, "share_state": ShareView,
    "meta": MetadataView, "cluster": MetadataView,
    "admin": AdminView, "configs": AdminView, "reassign": AdminView,
    "security": SecurityView, "tokens": SecurityView, "quotas": SecurityView,
}
# every family of the handler table (the SASL handlers live with the session, in net/sasl.py)
HANDLER_VIEWS = {**FAMILY_VIEWS, "sasl": SaslView}
