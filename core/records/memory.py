"""Walking a buffer of log entries of any magic (v0/v1 messages, v2 batches).

Every format starts with offset int64 | length int32, and has its magic byte
at position 16, so one walker can step over a mixed file (a topic upgraded
from old message formats) reading only headers. `header.iter_headers` stays
the faster v2-only path for the broker and recovery.
"""
from __future__ import annotations

from typing import Iterator, Optional, Union

from pylog.core.records.batch import Record, RecordBatch
from pylog.core.records.errors import InvalidMagicError, TruncatedBatchError
from pylog.core.records.header import LOG_OVERHEAD, MAGIC_OFFSET, BatchHeader, read_batch_header
from pylog.core.records.legacy import LegacyBatch, LegacyHeader, read_legacy_header

__all__ = ["iter_entries", "iter_batches", "iter_records", "AnyHeader", "AnyBatch"]

AnyHeader = Union[BatchHeader, LegacyHeader]
AnyBatch = Union[RecordBatch, LegacyBatch]


def _magic_at(buf, pos: int, end: int) -> int:
    if end - pos <= MAGIC_OFFSET:
        raise TruncatedBatchError(f"{end - pos} trailing bytes, less than an entry header", pos)
    return buf[pos + MAGIC_OFFSET]


def iter_entries(
    buf,
    start: int = 0,
    end: Optional[int] = None,
    *,
    verify_crc: bool = True,
    max_batch_size: Optional[int] = None,
) -> Iterator[tuple[int, int, AnyHeader]]:
    """Yield (position, magic, header) for each entry in buf[start:end] without decoding records.

    The header is a BatchHeader (magic 2) or a LegacyHeader (magic 0/1); both
    have size, last_offset, next_offset, crc, codec, is_control and
    is_transactional. Raises TruncatedBatchError at the position of an
    incomplete tail entry, after yielding every complete one before it.
    """
    if end is None:
        end = len(buf)
    pos = start
    while pos < end:
        if end - pos < LOG_OVERHEAD:
            raise TruncatedBatchError(f"{end - pos} trailing bytes, less than an entry header", pos)
        magic = _magic_at(buf, pos, end)
        if magic == 2:
            header = read_batch_header(buf, pos, end, verify_crc=verify_crc, max_batch_size=max_batch_size)
        elif magic == 0 or magic == 1:
            header = read_legacy_header(buf, pos, end, verify_crc=verify_crc)
        else:
            raise InvalidMagicError(magic, pos)
        yield pos, magic, header
        pos += header.size


def iter_batches(
    buf, start: int = 0, end: Optional[int] = None, *, verify_crc: bool = True
) -> Iterator[AnyBatch]:
    """Yield a reader (RecordBatch or LegacyBatch) for each entry; records decode on demand."""
    for pos, magic, _ in iter_entries(buf, start, end, verify_crc=verify_crc):
        yield RecordBatch(buf, pos) if magic == 2 else LegacyBatch(buf, pos)


def iter_records(
    buf, start: int = 0, end: Optional[int] = None, *, verify_crc: bool = True
) -> Iterator[Record]:
    """Every record of every entry, in order (control records included)."""
    for batch in iter_batches(buf, start, end, verify_crc=verify_crc):
        yield from batch.records()
