"""Kafka's offset checkpoint files and the atomic write every checkpoint uses.

Format (`recovery-point-offset-checkpoint`, `log-start-offset-checkpoint`,
`replication-offset-checkpoint`, `cleaner-offset-checkpoint`):

    0                 <- version
    2                 <- number of entries
    topic 0 1234      <- topic, partition, offset (space separated)
    topic 1 99

Writes go to `<file>.tmp`, are flushed and fsynced, then renamed over the real
file and the directory is fsynced: a crash leaves the old file or the new one,
never half of one (a half-written `.tmp` is simply ignored and overwritten).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

from pylog.core.errors import DataError
from pylog.storage import faults

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
OFFSET_CHECKPOINT_FILES = (
    RECOVERY_POINT_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CLEANER_OFFSET_CHECKPOINT,
)

CHECKPOINT_VERSION = 0
TMP_SUFFIX = ".tmp"


def fsync_dir(path: str | os.PathLike) -> None:
    """Make a rename durable. Some filesystems refuse O_RDONLY fsync on dirs; ignore those."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def atomic_write(path: str | os.PathLike, data: bytes | str, *, fsync: bool = True) -> None:
    """Replace `path` with `data` atomically: temp file, flush+fsync, rename, fsync dir."""
    path = Path(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    tmp = path.with_name(path.name + TMP_SUFFIX)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            n = faults.write(fd, view, str(tmp))
            view = view[n:]
        if fsync:
            faults.fsync(fd, str(tmp))
    finally:
        os.close(fd)
    os.replace(tmp, path)
    if fsync:
        fsync_dir(path.parent)


def format_offset_checkpoint(entries: Mapping[tuple[str, int], int]) -> str:
    """The text of an offset checkpoint file (Kafka's version 0 format: topic partition offset lines)."""
    lines = [str(CHECKPOINT_VERSION), str(len(entries))]
    for (topic, partition), offset in sorted(entries.items()):
        if " " in topic or not topic:
            raise ValueError(f"illegal topic name for a checkpoint: {topic!r}")
        lines.append(f"{topic} {int(partition)} {int(offset)}")
    return "\n".join(lines) + "\n"


def write_offset_checkpoint(path: str | os.PathLike, entries: Mapping[tuple[str, int], int], *, fsync: bool = True) -> None:
    """Write an offset checkpoint file atomically."""
    atomic_write(path, format_offset_checkpoint(entries), fsync=fsync)


def _read_text(path: Path) -> str:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not a text checkpoint file (invalid UTF-8 at byte {e.start})") from None


def parse_versioned_lines(path: str | os.PathLike, text: str, fields: int, expected_version: int = 0) -> list[tuple[int, list[str]]]:
    """Split a `version / count / entries` file; returns [(line_no, fields)].

    Shared by the offset checkpoints and the leader-epoch checkpoint. Errors name
    the file and the 1-based line.
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not text:
        return []  # Kafka reads an empty checkpoint file (it leaves one behind) as no entries
    if not lines:
        raise DataError(f"{path}: empty checkpoint file (expected a version line)")

    def as_int(value: str, line_no: int, what: str) -> int:
        """The checkpoint field as an integer, or a DataError naming the line."""
        try:
            return int(value.strip())
        except ValueError:
            raise DataError(f"{path} line {line_no}: {what} {value.strip()!r} is not an integer") from None

    version = as_int(lines[0], 1, "version")
    if version != expected_version:
        raise DataError(f"{path} line 1: unsupported checkpoint version {version} (expected {expected_version})")
    if len(lines) < 2:
        raise DataError(f"{path}: truncated checkpoint file (missing the entry count line)")
    count = as_int(lines[1], 2, "entry count")
    if count < 0:
        raise DataError(f"{path} line 2: negative entry count {count}")
    body = lines[2:]
    if len(body) != count:
        raise DataError(f"{path}: expected {count} entries but found {len(body)} (truncated or corrupt file)")
    out = []
    for i, line in enumerate(body, start=3):
        parts = line.split()
        if len(parts) != fields:
            raise DataError(f"{path} line {i}: expected {fields} space-separated fields, found {len(parts)}: {line!r}")
        out.append((i, parts))
    return out


def read_offset_checkpoint(path: str | os.PathLike) -> dict[tuple[str, int], int]:
    """Read an offset checkpoint. Missing file -> FileNotFoundError; bad content -> DataError."""
    path = Path(path)
    text = _read_text(path)
    entries: dict[tuple[str, int], int] = {}
    for line_no, (topic, partition, offset) in parse_versioned_lines(path, text, 3):
        try:
            p = int(partition)
            o = int(offset)
        except ValueError:
            raise DataError(f"{path} line {line_no}: partition and offset must be integers: {topic} {partition} {offset}") from None
        if p < 0:
            raise DataError(f"{path} line {line_no}: negative partition {p}")
        entries[(topic, p)] = o
    return entries


def read_offset_checkpoint_or_empty(path: str | os.PathLike) -> dict[tuple[str, int], int]:
    """Like read_offset_checkpoint but a missing file is an empty checkpoint (first start)."""
    try:
        return read_offset_checkpoint(path)
    except FileNotFoundError:
        return {}


class OffsetCheckpointFile:
    """A small object wrapper, handy for LogManager: `.read()` / `.write(entries)`."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def read(self) -> dict[tuple[str, int], int]:
        """The file's entries; raises DataError naming the line at fault."""
        return read_offset_checkpoint_or_empty(self.path)

    def write(self, entries: Mapping[tuple[str, int], int]) -> None:
        """Replace the file atomically with these entries."""
        write_offset_checkpoint(self.path, entries)

    def __repr__(self) -> str:
        return f"OffsetCheckpointFile({str(self.path)!r})"
