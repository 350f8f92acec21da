"""Streaming walk over a `.log` file of any magic, shared by dump-segment and verify.

The file is read in chunks (8 MB by default) so a multi-GB segment never sits
in memory; a batch larger than a chunk grows the buffer just for that batch.
Each entry is yielded with the buffer that holds it, so callers can decode
records without copying. Damage is yielded as a `Damage` item with its file
position; after damage that hides the next batch boundary (bad length or
magic) the scanner searches forward for the next batch whose CRC checks and
resumes there, so the rest of the file is still reported.
"""
from __future__ import annotations

import mmap
import os
import struct
import zlib
from typing import Iterator, NamedTuple, Union

from pylog.core.records.crc import crc32c

from pylog.core.errors import DataError
from pylog.core.records.errors import RecordFormatError
from pylog.core.records.header import (
    ATTRIBUTES_OFFSET,
    BATCH_LENGTH_OFFSET,
    CRC_OFFSET,
    HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MIN_BATCH_LENGTH,
    PREFIX_STRUCT,
    BatchHeader,
    iter_headers,
)
from pylog.core.records.legacy import LegacyHeader, read_legacy_header

CHUNK = 8 << 20
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024  # kafka-dump-log's --max-message-size default

_HEADER = HEADER_STRUCT
_PREFIX = PREFIX_STRUCT
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")


class Entry(NamedTuple):
    """One batch (any magic) of a scanned log file, with the buffer that holds it and whether its CRC
    checks."""
    position: int  # file position
    magic: int
    header: Union[BatchHeader, LegacyHeader]
    buf: bytearray  # holds the entry at buf_pos (reused: valid until the next item)
    buf_pos: int
    crc_ok: bool


class Damage(NamedTuple):
    """A damaged stretch of a log file: its position, kind (truncated or corrupt), a message, and the bytes
    skipped to the next good batch."""
    position: int
    kind: str  # "truncated" | "corrupt"
    message: str
    skipped: int  # bytes skipped before scanning resumed (0 at end of file)


def _find_resume(buf, start: int, end: int, max_size: int) -> int | None:
    """Next position >= start holding a v2 batch whose length is sane and CRC checks."""
    pos = start
    while True:
        m = buf.find(b"\x02", pos + MAGIC_OFFSET, end)
        if m < 0:
            return None
        cand = m - MAGIC_OFFSET
        pos = cand + 1
        if end - cand < HEADER_SIZE:
            continue
        length = _PREFIX.unpack_from(buf, cand)[1]
        size = length + LOG_OVERHEAD
        if length < MIN_BATCH_LENGTH or size > max_size or cand + size > end:
            continue
        if crc32c(memoryview(buf)[cand + ATTRIBUTES_OFFSET : cand + size]) == _U32.unpack_from(buf, cand + CRC_OFFSET)[0]:
            return cand


class _Window:
    """What a scan sees of the file: a read-only mapping of all of it, or one reused buffer
    refilled as the scan moves on (`base` is the file position of buf[0])."""

    def __init__(self, f, limit: int, chunk_size: int):
        self.f, self.limit, self.base = f, limit, 0
        self.mm = None
        if limit > 0 and chunk_size >= CHUNK:
            try:
                self.mm = mmap.mmap(f.fileno(), limit, prot=mmap.PROT_READ)
                self.mm.madvise(mmap.MADV_SEQUENTIAL)
            except (OSError, ValueError):
                self.mm = None
        if self.mm is not None:
            self.buf, self.avail = self.mm, limit  # the whole file: refill() is never needed
        else:
            self.buf, self.avail = bytearray(max(chunk_size, HEADER_SIZE)), 0
        self.mv = memoryview(self.buf)

    def more(self) -> bool:
        """Whether the file has bytes past the window."""
        return self.base + self.avail < self.limit

    def refill(self, keep_from: int, need: int) -> None:
        """Keep buf[keep_from:avail] at the front (the scan's position becomes 0), then read up
        to the buffer's size (at least `need` bytes from the front when the file has them)."""
        rem = self.avail - keep_from
        if need > len(self.buf):
            bigger = bytearray(max(need, len(self.buf)))
            bigger[:rem] = self.mv[keep_from:self.avail]
            self.mv.release()
            self.buf, self.mv = bigger, memoryview(bigger)
        elif rem and keep_from:
            self.buf[:rem] = bytes(self.mv[keep_from:self.avail])
        self.base += keep_from
        filled = rem
        want = min(len(self.buf), self.limit - self.base)
        while filled < want:
            n = self.f.readinto(self.mv[filled:want])
            if not n:
                break
            filled += n
        self.avail = filled

    def close(self) -> None:
        self.mv.release()
        if self.mm is not None:
            try:
                self.mm.close()
            except BufferError:
                pass  # a caller still holds a view of it: the mapping goes with that view


def _entry_problem(buf, pos: int, max_message_size: int) -> tuple[int, int, str | None]:
    """(magic, size, what is wrong with the entry's length or magic, or None)."""
    length = _I32.unpack_from(buf, pos + BATCH_LENGTH_OFFSET)[0]
    magic = buf[pos + MAGIC_OFFSET]
    size = length + LOG_OVERHEAD
    if magic == 2:
        if length < MIN_BATCH_LENGTH:
            return magic, size, f"batch length {length} below the minimum {MIN_BATCH_LENGTH}"
        if size > max_message_size:
            return magic, size, f"batch size {size} above the maximum message size {max_message_size}"
        return magic, size, None
    if magic in (0, 1):
        return magic, size, (f"message size {length} out of range"
                             if length < 14 or size > max_message_size else None)
    return magic, size, f"invalid magic byte {magic}"


def scan_log(path: str | os.PathLike, *, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE, max_bytes: int | None = None,
             check_crc: bool = True, chunk_size: int = CHUNK) -> Iterator[Union[Entry, Damage]]:
    """Yield every entry (and every damage) of a log file in order.

    A regular file is memory-mapped read-only (CRC-32C runs straight over the
    page cache, no copy); anything that cannot be mapped, or a test's small
    chunk_size, is read into one reused buffer instead. Either way an Entry's
    `buf` is valid only until the next item is requested. The mapping covers
    the size seen at open: bytes appended later are not read, and, as with any
    mmap reader, a file truncated under a running scan is an error of the
    caller's making (pylog truncates segments only in recovery, before serving).
    """
    with open(path, "rb", buffering=0) as f:
        file_size = os.fstat(f.fileno()).st_size
        limit = file_size if max_bytes is None else min(file_size, max_bytes)
        w = _Window(f, limit, chunk_size)
        pos = 0  # position in w.buf
        new = tuple.__new__
        fast = True
        try:
            while True:
                if w.avail - pos < HEADER_SIZE and w.more():
                    w.refill(pos, HEADER_SIZE)
                    pos = 0
                buf, avail, base = w.buf, w.avail, w.base
                if pos >= avail:
                    return
                if fast:
                    # the common case: whole v2 batches, stepped through by the one batch walker
                    try:
                        for p, h in iter_headers(buf, pos, avail, verify_crc=False, max_batch_size=max_message_size):
                            size = h.batch_length + LOG_OVERHEAD
                            ok = (not check_crc) or crc32c(w.mv[p + ATTRIBUTES_OFFSET: p + size]) == h.crc
                            yield new(Entry, (base + p, 2, h, buf, p, ok))
                            pos = p + size
                    except RecordFormatError as e:
                        pos, fast = e.position, False  # the entry at pos: legacy, torn, damaged or past the buffer
                    continue
                fast = True
                if avail - pos < LOG_OVERHEAD + 5:
                    yield Damage(base + pos, "truncated", f"{avail - pos} trailing bytes, less than a batch header", 0)
                    return
                magic, size, bad = _entry_problem(buf, pos, max_message_size)
                if bad is None and pos + size > avail:
                    if base + pos + size > limit:
                        if max_bytes is not None and limit < file_size:
                            return  # --max-bytes cut: not damage
                        yield Damage(base + pos, "truncated",
                                     f"batch of {size} bytes but only {limit - base - pos} remain in the file", 0)
                        return
                    w.refill(pos, max(size, HEADER_SIZE))  # read on, growing the buffer if this entry needs it
                    pos = 0
                    continue
                if bad is not None:
                    bad_at = base + pos
                    resume = _find_resume(buf, pos + 1, avail, max_message_size)
                    while resume is None and w.more():
                        # slide the window forward and keep searching for a good batch
                        w.refill(max(pos + 1, w.avail - HEADER_SIZE), HEADER_SIZE)
                        pos = 0
                        resume = _find_resume(w.buf, 0, w.avail, max_message_size)
                    if resume is None:
                        yield Damage(bad_at, "corrupt", bad + "; no valid batch after it", limit - bad_at)
                        return
                    yield Damage(bad_at, "corrupt", bad, w.base + resume - bad_at)
                    pos = resume
                    continue
                if magic == 2:
                    header = new(BatchHeader, _HEADER.unpack_from(buf, pos))
                    ok = (not check_crc) or crc32c(w.mv[pos + ATTRIBUTES_OFFSET: pos + size]) == header.crc
                else:
                    try:
                        header = read_legacy_header(buf, pos, avail)
                    except RecordFormatError as e:  # should not happen after the checks above
                        yield Damage(base + pos, "corrupt", str(e), size)
                        pos += size
                        continue
                    # a v0/v1 message's CRC covers magic..end
                    ok = (not check_crc) or zlib.crc32(w.mv[pos + MAGIC_OFFSET: pos + size]) == header.crc
                yield Entry(base + pos, magic, header, buf, pos, ok)
                pos += size
        finally:
            w.close()


# a header walk reads just the header of a batch this big (a page of data per header costs more)
_BIG_BATCH = 1024


def file_batches(fd: int, start: int, end: int, name, *, verify_crc: bool = True, chunk: int = CHUNK,
                 headers_only: bool = False, quiet: bool = False) -> Iterator[tuple[bytes, int, int, BatchHeader]]:
    """(buffer, position in buffer, file position, header) of every v2 batch in bytes [start, end)
    of the open file `fd`: the file form of the one batch walker (core.records.header.iter_headers),
    read with pread in chunks of `chunk` bytes. A batch larger than a chunk is read whole, or,
    with `headers_only` (no CRC), just its header (the buffer then holds only that): a header
    walk reads small batches a chunk at a time and big ones header by header. Damage raises
    DataError naming `name` and the file position, or with `quiet` ends the walk there (a
    torn tail the segment has not cut yet)."""
    pos = start
    hsize = HEADER_SIZE
    want = chunk
    while pos < end:
        buf = os.pread(fd, min(want, end - pos), pos)
        n = len(buf)
        if n < hsize:
            if quiet:
                return
            raise DataError(f"{name}: torn batch at position {pos}")
        size = _PREFIX.unpack_from(buf, 0)[1] + LOG_OVERHEAD
        if size > n:  # the first batch is larger than this chunk (or torn): on its own
            if pos + size > end or size < hsize or buf[MAGIC_OFFSET] != 2:
                if quiet:
                    return
                raise DataError(f"{name}: torn or bad batch at position {pos}")
            if headers_only and not verify_crc:
                yield buf, 0, pos, tuple.__new__(BatchHeader, _HEADER.unpack_from(buf, 0))
                want = hsize if size >= _BIG_BATCH else chunk
            else:
                buf = os.pread(fd, size, pos)
                try:
                    for _, h in iter_headers(buf, 0, len(buf), verify_crc=verify_crc):
                        yield buf, 0, pos, h
                except RecordFormatError as e:
                    if quiet:
                        return
                    raise DataError(f"{name}: {_without_position(e)} at position {pos}") from None
            pos += size
            continue
        nxt = 0  # where the next chunk starts: after the last whole batch of this one
        try:
            for off, h in iter_headers(buf, 0, n, verify_crc=verify_crc, partial_ok=True):
                yield buf, off, pos + off, h
                nxt = off + h.batch_length + LOG_OVERHEAD
            if headers_only and not verify_crc and h.batch_length >= _BIG_BATCH:
                want = hsize
        except RecordFormatError as e:
            if quiet:
                return
            raise DataError(f"{name}: {_without_position(e)} at position {pos + e.position}") from None
        pos += nxt


def _without_position(e: RecordFormatError) -> str:
    msg, suffix = str(e.args[0]), f" at position {e.position}"
    return msg[:-len(suffix)] if msg.endswith(suffix) else msg


def read_batches(fd: int, start: int, end: int, name, chunk: int = CHUNK) -> Iterator[tuple[bytes, int, BatchHeader]]:
    """(buffer, position in buffer, header) of every v2 batch in bytes [start, end) of
    the open file `fd`, each batch's CRC checked. For readers of healthy logs (the cleaner,
    the Spark analysis): any damage raises DataError naming `name` and the file position;
    scan_log is the walker that reports damage and goes on."""
    for buf, off, _, h in file_batches(fd, start, end, name, chunk=chunk):
        yield buf, off, h


__all__ = ["scan_log", "read_batches", "file_batches", "Entry", "Damage", "DEFAULT_MAX_MESSAGE_SIZE"]
