"""Producer id allocation that never hands out an id twice, even across crashes.

Like Kafka's controller, ids are reserved in blocks: the file records the first
id of the next unreserved block and is rewritten atomically *before* any id of
a new block is handed out. A crash loses at most the rest of the current block.

File `pylog-producer-ids` in the first log dir, Java .properties style:
    version=0
    next.block.start=<int64>
"""
from __future__ import annotations

import threading
from pathlib import Path

from pylog.core.errors import DataError
from pylog.core.properties import parse_properties
from pylog.storage.checkpoint import atomic_write

FILE_NAME = "pylog-producer-ids"
BLOCK_SIZE = 1000


class ProducerIdManager:
    """Hands out producer ids from blocks reserved in the id file (see the module text)."""

    def __init__(self, log_dir: str, block_size: int = BLOCK_SIZE):
        self.path = Path(log_dir) / FILE_NAME
        self.block_size = block_size
        self._lock = threading.Lock()
        self._next = 0
        self._block_end = 0  # exclusive end of the reserved block
        self._reserved_to = self._load()

    def _load(self) -> int:
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return 0
        props = parse_properties(text, str(self.path))
        try:
            value = int(props["next.block.start"])
        except (KeyError, ValueError):
            raise DataError(f"{self.path}: missing or bad next.block.start") from None
        if value < 0:
            raise DataError(f"{self.path}: negative next.block.start")
        return value

    def _reserve_block(self) -> None:
        start = self._reserved_to
        end = start + self.block_size
        atomic_write(self.path, f"version=0\nnext.block.start={end}\n")
        self._reserved_to = end
        self._next, self._block_end = start, end

    def next_id(self) -> int:
        """A producer id never handed out before (reserving a new block when needed)."""
        with self._lock:
            if self._next >= self._block_end:
                self._reserve_block()
            pid = self._next
            self._next += 1
            return pid

    def is_allocated(self, pid: int) -> bool:
        """True when `pid` was handed out by this file at some point (ever)."""
        limit = self._next if self._block_end else self._reserved_to
        return 0 <= pid < limit
