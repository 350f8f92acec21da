"""Compiled or pure Python for the producer's hot functions (encode_run, column_lengths, murmur2_many and
the framed-record encoders encode_frame_run, frame_partitions, frame_groups).

The compiled twins are pylog.core.client._speedups (core/client/_speedups*.c), loaded here only; each module that
holds a pure-Python twin binds its public name with `fastpath.choose(name, twin)`. See
pylog.core.fastpath for when compiled code runs.
"""
from __future__ import annotations

from pylog.core.fastpath import load

__all__ = ["extension", "native", "choose"]

extension = load("pylog.core.client._speedups")
native = extension.native
choose = extension.choose
