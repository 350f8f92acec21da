"""The suite's own reading of Python source as a syntax tree (the layering, size and suite rules)."""
from __future__ import annotations

import ast
import gc
from pathlib import Path


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    """`ast.parse` with the garbage collector held off.

    CPython 3.11.7 keeps one AST-constructor depth counter per interpreter: a finalizer that
    runs during the conversion and parses too (asyncio logging a never-retrieved future formats
    its traceback with `ast.parse`) leaves it off by its own depth, and the outer parse fails
    with "AST constructor recursion depth mismatch". 3.11.8 fixed it; this runs on 3.11.7."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return ast.parse(source, filename)
    finally:
        if enabled:
            gc.enable()


def parse_file(path: Path) -> ast.Module:
    """The syntax tree of one source file."""
    return parse(Path(path).read_text(), str(path))
