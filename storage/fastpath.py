"""Compiled or pure Python for the log's hot functions (validate_batches, index_batches, and the cleaner's
scan_records, map_keys, max_timestamp_delta).

The compiled twins are pylog.storage._speedups (storage/_speedups*.c), loaded here only; each module that
holds a pure-Python twin binds its public name with `fastpath.choose(name, twin)`. See
pylog.core.fastpath for when compiled code runs.
"""
from __future__ import annotations

from pylog.core.fastpath import load

__all__ = ["extension", "native", "choose"]

extension = load("pylog.storage._speedups")
native = extension.native
choose = extension.choose
