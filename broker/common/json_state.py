"""A broker state file kept as one JSON document in the log directory.

Client quotas and the security store (SCRAM credentials, ACLs) persist the
same way: read once at start, replaced atomically on every change, and an
unreadable file is a one-line DataError naming it.
"""
from __future__ import annotations

import json
import threading
from pathlib import Path

from pylog.core.errors import DataError
from pylog.storage.checkpoint import atomic_write


class JsonStateFile:
    """Base for a store persisted as `log_dir/FILE_NAME`; subclasses parse and render the document."""

    FILE_NAME = ""
    WHAT = "state"  # named in the error for an unreadable file

    def __init__(self, log_dir: str):
        self.path = Path(log_dir) / self.FILE_NAME
        self._lock = threading.Lock()

    def load(self) -> None:
        """Read the file if it exists; `_apply(doc)` takes the parsed document."""
        if not self.path.exists():
            return
        try:
            self._apply(json.loads(self.path.read_text("utf-8")))
        except (OSError, ValueError, KeyError, TypeError) as e:
            raise DataError(f"{self.path}: unreadable {self.WHAT} ({e.__class__.__name__}: {e})") from None

    def _apply(self, doc: dict) -> None:
        raise NotImplementedError

    def _write(self, doc: dict) -> None:
        atomic_write(self.path, json.dumps(doc, indent=1) + "\n")
