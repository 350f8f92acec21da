"""Compiled or pure Python for the command line's text loops (split_key_value, frame_text, json_key_values,
json_block_key_values, render_format, render_records).

The compiled twins are pylog.commands._speedups (commands/_speedups*.c), loaded here only; each module that
holds a pure-Python twin binds its public name with `fastpath.choose(name, twin)`. See
pylog.core.fastpath for when compiled code runs.
"""
from __future__ import annotations

from pylog.core.fastpath import load

__all__ = ["extension", "native", "choose"]

extension = load("pylog.commands._speedups")
native = extension.native
choose = extension.choose
