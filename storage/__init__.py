"""Kafka's log on disk: segments, indexes, checkpoints, producer state, recovery.

The broker codes against LogManager and Log (see STORAGE_API.md of the team).
"""
from pylog.storage.log import AppendInfo, FetchSlice, Log
from pylog.storage.log_manager import LogManager, RecoveryReport, TopicInfo

__all__ = ["LogManager", "Log", "FetchSlice", "AppendInfo", "RecoveryReport", "TopicInfo"]
