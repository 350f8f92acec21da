"""`partition.metadata`: the topic id of a partition folder.

    version: 0
    topic_id: <22-char base64url uuid>
"""
from __future__ import annotations

import os
import uuid
from pathlib import Path

from pylog.core.errors import DataError
from pylog.storage import faults
from pylog.storage.checkpoint import atomic_write
from pylog.storage.meta_properties import uuid_from_base64, uuid_to_base64

PARTITION_METADATA = "partition.metadata"


def format_partition_metadata(topic_id: uuid.UUID) -> str:
    """The text of a partition.metadata file (Kafka's version 0 format with the topic id)."""
    return f"version: 0\ntopic_id: {uuid_to_base64(topic_id)}\n"


def write_partition_metadata(partition_dir: str | os.PathLike, topic_id: uuid.UUID, *, fsync: bool = True,
                             new_dir: bool = False) -> None:
    """Write partition.metadata (atomically) with the topic id; without fsync for a new partition (a lost or
    torn file is written again from the topic registry when the log is next opened). In a dir made just
    now (`new_dir`, no fsync) there is no file to replace: it is written in place."""
    path = Path(partition_dir) / PARTITION_METADATA
    if not (new_dir and not fsync):
        atomic_write(path, format_partition_metadata(topic_id), fsync=fsync)
        return
    data = memoryview(format_partition_metadata(topic_id).encode("utf-8"))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        while data:
            data = data[faults.write(fd, data, str(path)):]
    finally:
        os.close(fd)


def read_partition_metadata(partition_dir: str | os.PathLike) -> uuid.UUID:
    """The topic id (FileNotFoundError when missing, DataError naming the line when bad)."""
    path = Path(partition_dir)
    if path.is_dir():
        path = path / PARTITION_METADATA
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    if len(lines) < 2:
        raise DataError(f"{path}: truncated partition metadata (expected version and topic_id lines)")
    key, _, value = lines[0].partition(":")
    if key.strip() != "version" or value.strip() != "0":
        raise DataError(f"{path} line 1: expected 'version: 0', found {lines[0]!r}")
    key, _, value = lines[1].partition(":")
    if key.strip() != "topic_id":
        raise DataError(f"{path} line 2: expected 'topic_id: <id>', found {lines[1]!r}")
    try:
        return uuid_from_base64(value.strip())
    except DataError as e:
        raise DataError(f"{path} line 2: {e}") from None
