"""The narrow views of the node each family of handlers is given, instead of the whole node.

`NodeView` (context.py) declares everything a handler may read of the node; a family's handlers
are typed by the part of it they use: the produce and fetch path a partition-log view, the group
APIs the group facade, the transactional APIs the transaction facade, the share APIs the share
facade. The Broker satisfies them all (they are Protocols: nothing changes at run time);
tests/test_typed_seams.py fails when a handler module reads of the node what its view does not
declare.
"""
from __future__ import annotations

import asyncio
import uuid
from typing import TYPE_CHECKING, Any, Protocol

from pylog.broker.net.connection import Connection

if TYPE_CHECKING:  # the coordinators load after the listener is up
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


class PartitionLogView(Protocol):
    """The partitions' logs and what goes with reading and appending to them (Fetch)."""

    config: Any  # the broker's live config
    logs: LogManager
    loop: asyncio.AbstractEventLoop
    stats: Any  # ops.metrics.BrokerStats
    dir_health: Any  # ops.log_dirs.LogDirMonitor
    stopping: bool

    def topic_by_id(self, topic_id: uuid.UUID) -> Any: ...
    def leader_epoch(self, log_) -> int: ...
    def wake(self, topic: str, partition: int) -> None: ...
    def wait_for_append(self, *args, **kwargs) -> Any: ...


class ProduceView(PartitionLogView, Protocol):
    """Produce: the partition logs, and the transactions and producer ids its checks read."""

    txn_coordinator: TransactionCoordinator
    producer_ids: ProducerIdManager


class GroupView(Protocol):
    """The group APIs (classic, consumer, streams; FindCoordinator): the group facade."""

    node_id: int
    logs: LogManager
    group_coordinator: GroupCoordinator
    txn_coordinator: TransactionCoordinator  # FindCoordinator for a transactional id
    authorizer: Authorizer | None

    def advertised_for(self, conn: Connection) -> tuple[str, int]: ...


class TxnView(Protocol):
    """The transactional APIs: the transaction facade, and the group facade for their offsets."""

    logs: LogManager
    txn_coordinator: TransactionCoordinator
    group_coordinator: GroupCoordinator
    authorizer: Authorizer | None

    def leader_epoch(self, log_) -> int: ...
    def wake(self, topic: str, partition: int) -> None: ...


class ShareView(Protocol):
    """The share APIs (KIP-932): the share facade and the partition logs it reads."""

    node_id: int
    config: Any
    logs: LogManager
    loop: asyncio.AbstractEventLoop
    share_coordinator: ShareCoordinator
    stopping: bool

    def topic_by_id(self, topic_id: uuid.UUID) -> Any: ...
    def wait_for_append(self, *args, **kwargs) -> Any: ...


class MetadataView(Protocol):
    """Metadata, ApiVersions, DescribeCluster and the cluster-wide lists: what the node publishes."""

    node_id: int
    cluster_id: str
    config: Any
    settings: Any  # node.settings.BrokerSettings
    logs: LogManager
    features: FinalizedFeatures
    authorizer: Authorizer | None
    group_coordinator: GroupCoordinator  # the GROUP config resources

    def advertised_for(self, conn: Connection) -> tuple[str, int]: ...
    def api_version_ranges(self) -> list[dict]: ...
    def topic_by_id(self, topic_id: uuid.UUID) -> Any: ...
    def leader_epoch(self, log_) -> int: ...


class AdminView(Protocol):
    """Topics, partitions, configs and reassignments."""

    node_id: int
    cluster_id: str
    config: Any
    settings: Any
    logs: LogManager
    dynamic_configs: DynamicBrokerConfigs | None
    authorizer: Authorizer | None
    group_coordinator: GroupCoordinator  # the GROUP config resources

    def topic_by_id(self, topic_id: uuid.UUID) -> Any: ...
    def wake_topic(self, topic: str) -> None: ...


class SecurityView(Protocol):
    """ACLs, SCRAM credentials, delegation tokens and client quotas."""

    authorizer: Authorizer | None
    security: SecurityStore | None
    tokens: TokenStore | None
    quotas: QuotaManager | None


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
