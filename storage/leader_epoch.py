"""The leader-epoch cache and its `leader-epoch-checkpoint` file.

File format (Kafka's LeaderEpochCheckpointFile): version line `0`, count line,
then one `epoch startOffset` line per entry, epochs and offsets increasing.
Semantics follow Kafka's LeaderEpochFileCache (assign, endOffsetFor,
truncateFromEnd, truncateFromStart).
"""
from __future__ import annotations

import bisect
import os
import threading
from pathlib import Path
from typing import NamedTuple

from pylog.core.errors import DataError
from pylog.storage.checkpoint import atomic_write, parse_versioned_lines

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochEntry(NamedTuple):
    """One leader-epoch-checkpoint line: an epoch and the first offset written in it."""
    epoch: int
    start_offset: int


def format_leader_epoch_checkpoint(entries: list[EpochEntry]) -> str:
    """The text of a leader-epoch-checkpoint file (Kafka's version 0 format)."""
    lines = ["0", str(len(entries))]
    lines += [f"{e.epoch} {e.start_offset}" for e in entries]
    return "\n".join(lines) + "\n"


def read_leader_epoch_checkpoint(path: str | os.PathLike) -> list[EpochEntry]:
    """Parse the file; FileNotFoundError when missing, DataError naming file+line when bad."""
    path = Path(path)
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise DataError(f"{path}: not a text checkpoint file (invalid UTF-8 at byte {e.start})") from None
    out: list[EpochEntry] = []
    for line_no, (epoch, offset) in parse_versioned_lines(path, text, 2):
        try:
            entry = EpochEntry(int(epoch), int(offset))
        except ValueError:
            raise DataError(f"{path} line {line_no}: epoch and offset must be integers: {epoch} {offset}") from None
        if entry.epoch < 0 or entry.start_offset < 0:
            raise DataError(f"{path} line {line_no}: negative epoch or offset: {epoch} {offset}")
        out.append(entry)
    return out


class LeaderEpochFileCache:
    """Epoch -> start offset, kept sorted; flushed atomically on every change."""

    def __init__(self, path: str | os.PathLike, entries: list[EpochEntry] | None = None, *, fsync: bool = True):
        self.path = Path(path)
        self._fsync = fsync
        self._lock = threading.RLock()
        self._epochs: list[int] = []
        self._offsets: list[int] = []
        for e in entries or []:
            self._assign(e.epoch, e.start_offset)

    @classmethod
    def load(cls, partition_dir: str | os.PathLike, *, fsync: bool = True) -> "LeaderEpochFileCache":
        """Load `leader-epoch-checkpoint` from a partition folder (an empty cache when missing)."""
        path = Path(partition_dir) / LEADER_EPOCH_CHECKPOINT
        try:
            entries = read_leader_epoch_checkpoint(path)
        except FileNotFoundError:
            entries = []
        return cls(path, entries, fsync=fsync)

    # ---- queries ----
    @property
    def entries(self) -> list[EpochEntry]:
        """Every entry, oldest first."""
        with self._lock:
            return [EpochEntry(e, o) for e, o in zip(self._epochs, self._offsets)]

    def __len__(self) -> int:
        return len(self._epochs)

    @property
    def latest_epoch(self) -> int | None:
        """The newest epoch, or None."""
        return self._epochs[-1] if self._epochs else None

    @property
    def latest_entry(self) -> EpochEntry | None:
        """The newest entry, or None."""
        with self._lock:
            return EpochEntry(self._epochs[-1], self._offsets[-1]) if self._epochs else None

    @property
    def earliest_entry(self) -> EpochEntry | None:
        """The oldest entry, or None."""
        with self._lock:
            return EpochEntry(self._epochs[0], self._offsets[0]) if self._epochs else None

    def epoch_for_offset(self, offset: int) -> int | None:
        """The epoch whose range holds `offset` (the last entry starting at or before it)."""
        with self._lock:
            i = bisect.bisect_right(self._offsets, offset) - 1
            return self._epochs[i] if i >= 0 else None

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """Kafka's OffsetsForLeaderEpoch answer: (epoch, end offset), (-1, -1) when unknown.

        The end offset of epoch E is the start offset of the first epoch above E;
        for the latest epoch it is the log end offset. When E itself is absent the
        answer names the largest epoch below E.
        """
        with self._lock:
            if requested_epoch == UNDEFINED_EPOCH:
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            if self._epochs and self._epochs[-1] == requested_epoch:
                return requested_epoch, log_end_offset
            hi = bisect.bisect_right(self._epochs, requested_epoch)
            if hi == len(self._epochs):
                return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
            higher_start = self._offsets[hi]
            if hi == 0:
                return requested_epoch, higher_start
            return self._epochs[hi - 1], higher_start

    # ---- changes ----
    def _assign(self, epoch: int, start_offset: int) -> bool:
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"epoch {epoch} and start offset {start_offset} must be >= 0")
        if self._epochs:
            last_e, last_o = self._epochs[-1], self._offsets[-1]
            # Kafka updates only for a different epoch or an earlier start of the same one
            if epoch == last_e and start_offset >= last_o:
                return False
        # drop entries that would break monotonicity (epoch >= new or offset >= new)
        while self._epochs and (self._epochs[-1] >= epoch or self._offsets[-1] >= start_offset):
            self._epochs.pop()
            self._offsets.pop()
        self._epochs.append(epoch)
        self._offsets.append(start_offset)
        return True

    def assign(self, epoch: int, start_offset: int, *, flush: bool = True) -> bool:
        """Record that `epoch` starts at `start_offset`; True (and flushed) when the cache changed."""
        with self._lock:
            changed = self._assign(epoch, start_offset)
            if changed and flush:
                self.flush()
            return changed

    def truncate_from_end(self, end_offset: int, *, flush: bool = True) -> None:
        """Drop entries starting at or after `end_offset` (log truncated to end_offset)."""
        with self._lock:
            if end_offset < 0 or not self._offsets or self._offsets[-1] < end_offset:
                return
            i = bisect.bisect_left(self._offsets, end_offset)
            del self._epochs[i:]
            del self._offsets[i:]
            if flush:
                self.flush()

    def truncate_from_start(self, start_offset: int, *, flush: bool = True) -> None:
        """Log start moved to `start_offset`: entries at or before it collapse into one starting there."""
        with self._lock:
            i = bisect.bisect_right(self._offsets, start_offset)
            if i == 0 or i == 1 and self._offsets[0] == start_offset:
                return  # nothing starts before it: the file stays as it is (a start rewrites nothing)
            keep_epoch = self._epochs[i - 1]
            del self._epochs[:i]
            del self._offsets[:i]
            self._epochs.insert(0, keep_epoch)
            self._offsets.insert(0, start_offset)
            if flush:
                self.flush()

    def clear(self, *, flush: bool = True) -> None:
        """Drop every entry."""
        with self._lock:
            self._epochs.clear()
            self._offsets.clear()
            if flush:
                self.flush()

    def flush(self) -> None:
        """Write the checkpoint file (atomically) with the entries held."""
        with self._lock:
            atomic_write(self.path, format_leader_epoch_checkpoint(self.entries), fsync=self._fsync)

    def __repr__(self) -> str:
        return f"LeaderEpochFileCache({self.entries})"
