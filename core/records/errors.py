"""Precise record-format errors.

A truncated tail is its own class (not corruption) so that recovery can trim
it while verify reports real damage separately.
"""
from __future__ import annotations

from pylog.core.errors import DataError


class RecordFormatError(DataError):
    """Base of everything wrong with record bytes."""

    def __init__(self, message: str, position: int | None = None):
        super().__init__(message if position is None else f"{message} at position {position}")
        self.position = position


class TruncatedBatchError(RecordFormatError):
    """The buffer ends inside a batch: a torn tail, not corruption."""


class InvalidMagicError(RecordFormatError):
    """A magic byte pylog does not read here."""
    def __init__(self, magic: int, position: int | None = None):
        super().__init__(f"invalid magic byte {magic}", position)
        self.magic = magic


class CrcMismatchError(RecordFormatError):
    """A batch whose stored CRC is not the computed one."""
    def __init__(self, expected: int, found: int, position: int | None = None):
        super().__init__(f"CRC mismatch: stored {expected:#010x}, computed {found:#010x}", position)
        self.expected, self.found = expected, found


class InvalidBatchSizeError(RecordFormatError):
    """A length field that cannot be right (negative, below the header, above a limit)."""


class RecordCountMismatchError(RecordFormatError):
    """A batch whose header declares another number of records than it holds."""
    def __init__(self, declared: int, found: int, position: int | None = None):
        super().__init__(f"record count mismatch: header says {declared}, found {found}", position)
        self.declared, self.found = declared, found


class UnknownCodecError(RecordFormatError):
    """A compression codec id outside 0-4."""
    def __init__(self, codec: int, position: int | None = None):
        super().__init__(f"unknown compression codec {codec}", position)
        self.codec = codec


class CorruptCompressedError(RecordFormatError):
    """The compressed payload does not decompress."""


class CorruptRecordError(RecordFormatError):
    """A record inside a batch does not parse (bad varint, lengths past the end)."""


class MalformedVarintError(CorruptRecordError):
    """A varint that runs past the end of its buffer or is longer than its type allows."""
