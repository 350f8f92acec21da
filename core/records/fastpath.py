"""Compiled or pure Python for the record formats' hot functions (varints, decode_records, decode_columns,
check_records, patch_append_fields, encode_record, crc32c).

The compiled twins are pylog.core.records._speedups (core/records/_speedups*.c), loaded here only; each module that
holds a pure-Python twin binds its public name with `fastpath.choose(name, twin)`. See
pylog.core.fastpath for when compiled code runs.
"""
from __future__ import annotations

from pylog.core.fastpath import load

__all__ = ["extension", "native", "choose"]

extension = load("pylog.core.records._speedups")
native = extension.native
choose = extension.choose
