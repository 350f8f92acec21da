"""Precise errors: torn tails, CRC damage, bad magic, codecs, record framing."""
from __future__ import annotations

import struct
import zlib

import pytest
from crc32c import crc32c

from pylog.core.records import (
    BatchBuilder,
    LegacyBatch,
    LegacyBuilder,
    RecordBatch,
    iter_entries,
    iter_headers,
    read_batch_header,
)
from pylog.core.records.errors import (CorruptCompressedError, CorruptRecordError, CrcMismatchError,
                                       InvalidBatchSizeError, InvalidMagicError, RecordCountMismatchError,
                                       TruncatedBatchError, UnknownCodecError)
from pylog.core.records.header import write_crc


def _batch(base: int, n: int, codec: int = 0) -> bytes:
    b = BatchBuilder(base_offset=base, codec=codec)
    for i in range(n):
        b.append(1000 + i, b"k%d" % i, b"value-%d" % i, [("h", b"x")] if i % 2 else ())
    return b.build()


BATCHES = [_batch(0, 2), _batch(2, 3, codec=3), _batch(5, 1, codec=1)]
BUF = b"".join(BATCHES)
STARTS = [sum(len(b) for b in BATCHES[:i]) for i in range(len(BATCHES))]


def _walk(walker, buf):
    seen = []
    try:
        for item in walker(buf):
            seen.append(item[0])
    except TruncatedBatchError as e:
        return seen, e
    return seen, None


@pytest.mark.parametrize("walker", [iter_headers, iter_entries], ids=["iter_headers", "iter_entries"])
def test_truncated_tail_at_every_byte(walker):
    for cut in range(len(BUF) + 1):
        seen, err = _walk(walker, BUF[:cut])
        complete = [s for s, b in zip(STARTS, BATCHES) if s + len(b) <= cut]
        assert seen == complete, cut
        if cut in STARTS or cut == len(BUF):
            assert err is None, cut  # ends on a boundary: nothing torn
        else:
            assert err is not None and err.position == max(s for s in STARTS if s < cut), cut


def test_truncated_tail_of_legacy_entries_at_every_byte():
    parts = []
    for magic, codec in ((0, 0), (1, 1), (1, 0)):
        lb = LegacyBuilder(magic, codec, base_offset=len(parts) * 10)
        lb.append(5, b"k", b"v")
        lb.append(6, None, b"w")
        parts.append(lb.build())
    buf = b"".join(parts)
    ends, pos = [], 0
    for _, _, h in iter_entries(buf):
        pos += h.size
        ends.append(pos)
    starts = [0] + ends[:-1]
    for cut in range(len(buf) + 1):
        seen, err = _walk(iter_entries, buf[:cut])
        assert seen == [s for s, e in zip(starts, ends) if e <= cut]
        assert (err is None) == (cut in starts or cut == len(buf))
        if err is not None:
            assert err.position == max(s for s in starts if s < cut)


def test_record_batch_on_truncated_buffer():
    with pytest.raises(TruncatedBatchError):
        RecordBatch(BATCHES[0][:-1])


def test_flipped_byte_inside_the_crc_is_a_crc_mismatch():
    raw = BATCHES[1]
    stored = struct.unpack_from(">I", raw, 17)[0]
    for pos in range(21, len(raw)):
        bad = bytearray(raw)
        bad[pos] ^= 0x40
        buf = BATCHES[0] + bytes(bad)
        with pytest.raises(CrcMismatchError) as e:
            list(iter_headers(buf))
        assert e.value.position == len(BATCHES[0])
        assert e.value.expected == stored
        assert e.value.found == crc32c(bytes(bad[21:]))
        assert e.value.found != stored
        with pytest.raises(CrcMismatchError):
            RecordBatch(bytes(bad)).check_crc()
        assert not RecordBatch(bytes(bad)).crc_ok()


def test_flipped_crc_field_and_fields_outside_the_crc():
    bad = bytearray(BATCHES[0])
    bad[18] ^= 1
    with pytest.raises(CrcMismatchError):
        list(iter_entries(bytes(bad)))
    # base offset and leader epoch are outside the CRC (the broker patches them)
    ok = bytearray(BATCHES[0])
    ok[3] ^= 1
    ok[13] ^= 1
    assert len(list(iter_headers(bytes(ok)))) == 1


def test_flipped_byte_in_legacy_entry():
    lb = LegacyBuilder(1)
    lb.append(1, b"k", b"v")
    raw = bytearray(lb.build())
    raw[-1] ^= 0xFF
    with pytest.raises(CrcMismatchError) as e:
        list(iter_entries(bytes(raw)))
    assert e.value.found == zlib.crc32(bytes(raw[16:]))
    assert not LegacyBatch(bytes(raw)).crc_ok()


@pytest.mark.parametrize("magic", [3, 7, 0xFF])
def test_bad_magic(magic):
    bad = bytearray(BUF)
    bad[STARTS[1] + 16] = magic
    with pytest.raises(InvalidMagicError) as e:
        list(iter_headers(bytes(bad)))
    assert (e.value.magic, e.value.position) == (magic, STARTS[1])
    with pytest.raises(InvalidMagicError):
        list(iter_entries(bytes(bad)))
    with pytest.raises(InvalidMagicError):
        read_batch_header(bytes(bad), STARTS[1])


def test_v2_walker_rejects_legacy_entries():
    lb = LegacyBuilder(1)
    lb.append(1, b"k", b"v")
    with pytest.raises(InvalidMagicError):
        list(iter_headers(lb.build()))


def test_impossible_lengths():
    bad = bytearray(BATCHES[0])
    bad[8:12] = struct.pack(">i", 10)
    with pytest.raises(InvalidBatchSizeError):
        list(iter_headers(bytes(bad)))
    with pytest.raises(InvalidBatchSizeError):
        list(iter_headers(BUF, max_batch_size=len(BATCHES[0]) - 1))


def _patched(raw: bytes, pos: int, fmt: str, value) -> bytes:
    bad = bytearray(raw)
    struct.pack_into(fmt, bad, pos, value)
    write_crc(bad, 0, len(bad))  # a valid CRC: the damage is below it
    return bytes(bad)


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec(codec):
    raw = _patched(BATCHES[0], 21, ">h", codec)
    batch = RecordBatch(raw, verify_crc=True)  # header walk is fine
    with pytest.raises(UnknownCodecError) as e:
        batch.records()
    assert e.value.codec == codec and e.value.position == 0


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_corrupt_compressed_payload(codec):
    raw = bytearray(_batch(10, 50, codec))
    assert raw[22] & 7 == codec  # attributes int16: codec in the low byte
    raw[61 + 20 : 61 + 40] = b"\xde\xad\xbe\xef" * 5
    write_crc(raw, 0, len(raw))
    with pytest.raises(CorruptCompressedError) as e:
        RecordBatch(bytes(b"\x00" * 3 + raw), 3, verify_crc=True).records()
    assert e.value.position == 3


@pytest.mark.parametrize("declared", [0, 1, 3, 1000])
def test_record_count_mismatch(declared):
    raw = _patched(BATCHES[0], 57, ">i", declared)
    with pytest.raises(RecordCountMismatchError) as e:
        RecordBatch(raw, verify_crc=True).records()
    assert (e.value.declared, e.value.found) == (declared, 2)


def test_corrupt_record_framing():
    raw = BATCHES[0]
    # first record's length varint one larger: fields no longer fill it
    first_len = raw[61]
    with pytest.raises(CorruptRecordError):
        RecordBatch(_patched(raw, 61, ">B", first_len + 2)).records()
    # a record length running past the batch
    with pytest.raises(CorruptRecordError):
        RecordBatch(_patched(raw, 61, ">B", 0x7E)).records()
    # key length -5 is not a length
    with pytest.raises(CorruptRecordError):
        RecordBatch(_patched(raw, 65, ">B", 9)).records()


def test_garbage_records_section_never_escapes_as_another_error():
    import random

    rng = random.Random(7)
    for _ in range(300):
        body = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
        b = bytearray(BATCHES[0][:61] + body)
        struct.pack_into(">i", b, 8, len(b) - 12)
        write_crc(b, 0, len(b))
        try:
            RecordBatch(bytes(b)).records()
        except (CorruptRecordError, RecordCountMismatchError):
            pass
