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
    from pylog.broker.node.producer_ids import ProducerIdManager
    from pylog.broker.security.authorizer import Authorizer
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


# handler module -> the view its functions are typed by
FAMILY_VIEWS = {
    "produce": ProduceView, "fetch": PartitionLogView,
    "groups": GroupView, "consumer_groups": GroupView, "streams_groups": GroupView,
    "txn": TxnView,
    "share": ShareView, "share_admin": ShareView, "share_state": ShareView,
}
