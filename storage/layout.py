"""Names inside a log dir, as Kafka lays them out: the one owner of those patterns.

A partition lives in `<topic>-<partition>`. Kafka also leaves folders that
look like partitions but are not user data: the KRaft metadata log
(`__cluster_metadata-0`) and renamed partitions on their way out or in
(`<topic>-<partition>.<uuid>-delete`, `-stray`, `-future`). Readers and the
broker use `parse_partition_dir` so they all agree on what is a partition.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

PARTITION_DIR = re.compile(r"^(.+)-(\d+)$")
SEGMENT_FILE = re.compile(r"^(\d{20})\.log$")
# KRaft's metadata log: Kafka's controller writes it, it is never a user topic.
METADATA_TOPIC = "__cluster_metadata"
DELETE_DIR_SUFFIX = "-delete"
STRAY_DIR_SUFFIX = "-stray"
FUTURE_DIR_SUFFIX = "-future"
RENAMED_DIR_SUFFIXES = (DELETE_DIR_SUFFIX, STRAY_DIR_SUFFIX, FUTURE_DIR_SUFFIX)


class PartitionDir(NamedTuple):
    """A partition folder's topic and partition number."""
    topic: str
    partition: int


def parse_partition_dir(name: str) -> PartitionDir | None:
    """(topic, partition) of a folder named `<topic>-<partition>`, else None.

    Renamed folders (`-delete`, `-stray`, `-future`) do not match: their name
    ends in the suffix, not in a partition number."""
    m = PARTITION_DIR.match(name)
    if m is None:
        return None
    return PartitionDir(m.group(1), int(m.group(2)))


def is_renamed_dir(name: str) -> bool:
    """A partition folder Kafka renamed: being deleted, stray, or a future replica."""
    return name.endswith(RENAMED_DIR_SUFFIXES)


def user_partition_dir(name: str) -> PartitionDir | None:
    """Like parse_partition_dir, but None for the KRaft metadata log too: what a
    broker may load and write as a topic partition."""
    p = parse_partition_dir(name)
    if p is None or p.topic == METADATA_TOPIC:
        return None
    return p


def partition_dir_name(topic: str, partition: int) -> str:
    """The folder name of a partition: `<topic>-<partition>`."""
    return f"{topic}-{partition}"


def segment_base(name: str) -> int | None:
    """Base offset of a `<20 digits>.log` file name, else None."""
    m = SEGMENT_FILE.match(name)
    return int(m.group(1)) if m else None


def partition_dirs(d: Path) -> list[Path]:
    """The folders of a log dir, sorted (partitions, `-delete` and Kafka's own)."""
    return sorted(Path(e.path) for e in os.scandir(d) if e.is_dir())
