"""The rich consoles every command prints through."""
from __future__ import annotations

import json
import os
import sys

# stdout carries results (tables, dumps, JSON); stderr carries progress and errors: `out` and
# `err`, rich consoles made on first use (importing rich is ~15 ms of a command's start-up)
_CONSOLES = {"out": False, "err": True}  # name -> on stderr
# what makes rich treat a stream as a terminal whatever isatty() says
_TERMINAL_ENV = ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


def __getattr__(name: str):
    if name not in _CONSOLES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from rich.console import Console

    console = globals()[name] = Console(stderr=_CONSOLES[name], highlight=False, soft_wrap=True)
    return console


def _console(name: str):
    return globals().get(name) or __getattr__(name)


def _plain_stderr() -> bool:
    """True while `err` is not made and stderr is no terminal to rich either: plain text
    written to it reads as rich would print it."""
    if "err" in globals() or any(map(os.environ.__contains__, _TERMINAL_ENV)):
        return False
    isatty = getattr(sys.stderr, "isatty", None)
    return isatty is None or not isatty()


def stderr_is_terminal() -> bool:
    """`err.is_terminal`, without importing rich when stderr is a file or a pipe."""
    return not _plain_stderr() and _console("err").is_terminal


def print_err(text: str) -> None:
    """`err.print(text, markup=False)`; a plain write where that shows the same (stderr no
    terminal, printable ASCII without ":" that rich could read as an emoji code), so a
    command's one summary line does not import rich."""
    if _plain_stderr() and text.isascii() and text.isprintable() and ":" not in text:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
        return
    _console("err").print(text, markup=False)


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


def print_table(columns, rows, title: str | None = None, console=None, header: bool = True) -> None:
    """A table on stdout. `columns`: [(heading, "left"|"right")]; cells may hold rich markup.

    On a terminal: rich's table, cells folded rather than cut, so it fits the
    terminal's width (80 columns is the usual) and paths are never shortened to
    "...". Piped: plain space-aligned columns with the full text of every cell, no
    box drawing and no markup, for grep, awk and sort.
    """
    console = console or _console("out")
    rows = [[str(c) for c in r] for r in rows]
    if console.is_terminal:
        from rich import box
        from rich.table import Table

        t = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, show_header=header, pad_edge=False)
        for name, just in columns:
            t.add_column(name, justify=just, overflow="fold")
        for r in rows:
            t.add_row(*r)
        console.print(t)
        return
    from rich.text import Text

    plain = [[Text.from_markup(c).plain for c in r] for r in rows]
    table = ([[name for name, _ in columns]] if header else []) + plain
    widths = [max(len(r[i]) for r in table) for i in range(len(columns))] if table else []
    lines = [title] if title else []
    for r in table:
        cells = [c.rjust(w) if just == "right" else c.ljust(w) for c, w, (_, just) in zip(r, widths, columns)]
        lines.append("  ".join(cells).rstrip())
    sys.stdout.write("".join(line + "\n" for line in lines))
