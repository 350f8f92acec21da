"""The node's partitions as the coordinators and services use them: the log manager, the config
every part reads, each log's leader epoch, topic ids, and the wake-up of fetches parked on a
partition. The Broker builds one once its logs are open and hands it to the components that
write internal topics or read user ones, instead of itself."""
from __future__ import annotations

import uuid
from typing import Callable

from pylog.core.config import Config
from pylog.storage import LogManager


class PartitionLogs:
    """The log manager (`logs`), the node's `config`, and what goes with appending to a log."""

    def __init__(self, logs: LogManager, config: Config, wake: Callable[[str, int], None]):
        self.logs = logs
        self.config = config
        self._wake = wake
        self._ids: dict[uuid.UUID, str] = {}

    def wake(self, topic: str, partition: int) -> None:
        """New data in a partition: parked fetches on it read again."""
        self._wake(topic, partition)

    @staticmethod
    def leader_epoch(log_) -> int:
        """Single node: the leader epoch never changes once the partition has data."""
        e = getattr(log_, "latest_epoch", None)
        return e if e is not None and e > 0 else 0

    def topic_by_id(self, topic_id: uuid.UUID):
        """Topic ids arrive in every Fetch v13+: a cached map, checked on use and rebuilt on a miss."""
        topics = self.logs.topics
        name = self._ids.get(topic_id)
        if name is not None:
            info = topics.get(name)
            if info is not None and info.topic_id == topic_id:
                return info
        self._ids = {info.topic_id: n for n, info in topics.items()}
        name = self._ids.get(topic_id)
        return topics.get(name) if name is not None else None
