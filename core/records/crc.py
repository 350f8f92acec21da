"""CRC-32C (Castagnoli), the checksum of record batches and of pylog's own files.

The one owner of the choice: the compiled extension's `crc32c` when it is active,
else the crc32c package's (the reference; tests/test_fastpath_crc.py requires the
same values). The package is imported only when needed: its import reads its
distribution metadata, which costs a short command a noticeable part of its start-up.
"""
from __future__ import annotations

from pylog.core.records import fastpath

__all__ = ["crc32c"]

crc32c = getattr(fastpath.native, "crc32c", None) if fastpath.native is not None else None
if crc32c is None:
    from crc32c import crc32c  # noqa: F811 - the pure-Python installs' implementation
