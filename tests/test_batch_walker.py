"""The one batch walker (core.records.header.iter_headers) and its file form (storage.scan.file_batches)."""
from __future__ import annotations

import os
import struct

import pytest

from pylog.core.errors import DataError
from pylog.core.records import BatchBuilder
from pylog.core.records.errors import CrcMismatchError, InvalidMagicError, TruncatedBatchError
from pylog.core.records.header import iter_headers
from pylog.storage.scan import file_batches


def log_bytes(sizes) -> tuple[bytes, list[tuple[int, int]]]:
    """Batches with these record counts back to back; returns the bytes and [(position, base offset)]."""
    out, where, off = bytearray(), [], 0
    for n in sizes:
        b = BatchBuilder(base_offset=off)
        for i in range(n):
            b.append(1_700_000_000_000 + i, b"k%d" % i, os.urandom(50))
        where.append((len(out), off))
        out += b.build()
        off += n
    return bytes(out), where


def test_walker_yields_every_batch_and_names_damage_with_its_position():
    data, where = log_bytes([1, 30, 2, 400, 3])
    assert [(p, h.base_offset) for p, h in iter_headers(data)] == where
    torn = data[:-5]
    with pytest.raises(TruncatedBatchError) as e:
        list(iter_headers(torn))
    assert e.value.position == where[-1][0]
    assert [p for p, _ in iter_headers(torn, partial_ok=True)] == [p for p, _ in where[:-1]]
    bad = bytearray(data)
    bad[where[2][0] + 70] ^= 1
    with pytest.raises(CrcMismatchError) as e:
        list(iter_headers(bad))
    assert e.value.position == where[2][0]
    assert len(list(iter_headers(bad, verify_crc=False))) == 5
    bad = bytearray(data)
    bad[where[1][0] + 16] = 7
    with pytest.raises(InvalidMagicError) as e:
        list(iter_headers(bad, partial_ok=True))  # damage is raised even when a partial tail is fine
    assert e.value.position == where[1][0]


@pytest.mark.parametrize("chunk", [61, 100, 1000, 4096, 1 << 20])
@pytest.mark.parametrize("headers_only", [False, True])
def test_file_batches_across_chunk_boundaries(tmp_path, chunk, headers_only):
    data, where = log_bytes([1, 30, 2, 400, 3, 1, 1, 50])
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        got = [(fpos, h.base_offset) for _, _, fpos, h in
               file_batches(fd, 0, len(data), path, chunk=chunk, verify_crc=not headers_only,
                            headers_only=headers_only)]
        assert got == where
        for buf, off, fpos, h in file_batches(fd, where[3][0], len(data), path, chunk=chunk, verify_crc=False,
                                              headers_only=headers_only):
            assert struct.unpack_from(">q", buf, off)[0] == h.base_offset and fpos >= where[3][0]
        # a torn tail: the quiet walk (a segment's header walk) ends before it, the checked one raises
        torn = len(data) - 7
        assert [p for _, _, p, _ in file_batches(fd, 0, torn, path, chunk=chunk, quiet=True,
                                                 headers_only=headers_only, verify_crc=False)] == \
            [p for p, _ in where[:-1]]
        with pytest.raises(DataError, match=f"position {where[-1][0]}"):
            list(file_batches(fd, 0, torn, path, chunk=chunk))
    finally:
        os.close(fd)


def test_file_batches_reports_crc_damage_at_its_file_position(tmp_path):
    data, where = log_bytes([5, 5, 5, 5])
    bad = bytearray(data)
    bad[where[2][0] + 80] ^= 0xFF
    path = tmp_path / "00000000000000000000.log"
    path.write_bytes(bytes(bad))
    fd = os.open(path, os.O_RDONLY)
    try:
        for chunk in (200, 1 << 20):
            with pytest.raises(DataError, match=f"CRC mismatch.* at position {where[2][0]}$"):
                list(file_batches(fd, 0, len(bad), path, chunk=chunk))
    finally:
        os.close(fd)
