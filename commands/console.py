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


def plural(n: int, word: str, many: str | None = None) -> str:
    """'1 record', '2 records', '0 records'."""
    return f"{n} {word if n == 1 else (many or word + 's')}"


# C0 controls but tab and newline, DEL and C1 controls: shown as \xNN on a terminal
_CONTROLS = {c: f"\\x{c:02x}" for c in [*range(0, 9), *range(11, 32), *range(127, 160)]}


def escape_controls(text: str) -> str:
    """Control characters escaped so record bytes cannot drive the terminal."""
    return text.translate(_CONTROLS)
