"""The rich consoles every command prints through."""
from __future__ import annotations

import json
import sys

from rich.console import Console

# stdout carries results (tables, dumps, JSON); stderr carries progress and errors
out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def emit_json(obj) -> None:
    """One JSON document per line on stdout, for scripts."""
    sys.stdout.write(json.dumps(obj, separators=(",", ":"), default=str) + "\n")
