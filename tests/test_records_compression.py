"""Codecs: round trips, the Java client's framings, and damaged payloads."""
from __future__ import annotations

import gzip
import struct

import cramjam
import lz4.frame
import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from support.examples import examples

from pylog.core.records import compression as c
from pylog.core.records.errors import CorruptCompressedError, UnknownCodecError

CODECS = [0, 1, 2, 3, 4]
SAMPLE = b"".join(b"record %d of the sample payload; " % i for i in range(5000))  # ~170 KB


@settings(max_examples=examples(40), deadline=None)
@given(codec=st.sampled_from(CODECS), data=st.binary(max_size=3000))
def test_round_trip(codec, data):
    assert c.decompress(codec, c.compress(codec, data)) == data


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_large_memoryview(codec):
    packed = c.compress(codec, memoryview(SAMPLE))
    assert c.decompress(codec, memoryview(packed)) == SAMPLE
    if codec:
        assert len(packed) < len(SAMPLE) // 3


def test_snappy_writes_xerial_framing_in_32k_blocks():
    packed = c.compress_snappy(SAMPLE)
    assert packed[:8] == b"\x82SNAPPY\x00"
    assert struct.unpack(">ii", packed[8:16]) == (1, 1)
    pos, blocks = 16, []
    while pos < len(packed):
        (n,) = struct.unpack_from(">i", packed, pos)
        blocks.append(bytes(cramjam.snappy.decompress_raw(packed[pos + 4 : pos + 4 + n])))
        pos += 4 + n
    assert pos == len(packed)
    assert [len(b) for b in blocks[:-1]] == [32 * 1024] * (len(blocks) - 1)
    assert b"".join(blocks) == SAMPLE


def test_snappy_reads_raw_blocks():
    raw = bytes(cramjam.snappy.compress_raw(SAMPLE))
    assert c.decompress_snappy(raw) == SAMPLE


def test_gzip_is_a_gzip_member_and_reads_concatenated_members():
    packed = c.compress_gzip(SAMPLE)
    assert packed[:2] == b"\x1f\x8b"
    assert gzip.decompress(packed) == SAMPLE
    assert c.decompress_gzip(gzip.compress(b"one") + gzip.compress(b"two")) == b"onetwo"


def test_lz4_frame_as_kafka_writes_it():
    packed = c.compress_lz4(SAMPLE)
    assert packed[:4] == b"\x04\x22\x4d\x18"
    flg, bd = packed[4], packed[5]
    assert flg & 0x20  # independent blocks
    assert not flg & 0x08  # no content size
    assert (bd >> 4) & 0x7 == 4  # 64 KiB blocks
    assert lz4.frame.decompress(packed) == SAMPLE


def test_zstd_frame_without_content_size():
    cobj = zstandard.ZstdCompressor(write_content_size=False).compressobj()
    packed = cobj.compress(SAMPLE) + cobj.flush()
    with pytest.raises(zstandard.ZstdError):
        zstandard.ZstdDecompressor().decompress(packed)  # the naive call fails...
    assert c.decompress_zstd(packed) == SAMPLE  # ...ours streams
    assert c.decompress_zstd(packed + packed) == SAMPLE + SAMPLE


def test_xxh32_known_vectors():
    assert c.xxh32(b"") == 0x02CC5D05
    assert c.xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F


@pytest.mark.parametrize("store_size", [False, True])
def test_xxh32_matches_liblz4_header_checksum(store_size):
    frame = lz4.frame.compress(SAMPLE[:1000], store_size=store_size)
    hc = 6 + (8 if store_size else 0)
    assert frame[hc] == (c.xxh32(frame[4:hc]) >> 8) & 0xFF


def test_lz4_legacy_broken_checksum():
    old = c.compress_lz4_legacy(SAMPLE)
    with pytest.raises(CorruptCompressedError):
        c.decompress_lz4(old)  # a strict reader rejects Kafka 0.8's checksum
    assert c.decompress_lz4_legacy(old) == SAMPLE
    assert c.decompress_lz4_legacy(c.compress_lz4(SAMPLE)) == SAMPLE  # the correct form too
    bad = bytearray(old)
    bad[6] ^= 0xFF
    with pytest.raises(CorruptCompressedError):
        c.decompress_lz4_legacy(bytes(bad))


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty"])
def test_corrupt_payload(codec, damage):
    packed = c.compress(codec, SAMPLE)
    payload = {"garbage": b"this is not compressed data at all", "truncated": packed[: len(packed) // 2], "empty": b""}[damage]
    with pytest.raises(CorruptCompressedError):
        c.decompress(codec, payload)


@pytest.mark.parametrize("codec", [5, 6, 7, -1])
def test_unknown_codec(codec):
    with pytest.raises(UnknownCodecError) as e:
        c.decompress(codec, b"x")
    assert e.value.codec == codec
    with pytest.raises(UnknownCodecError):
        c.compress(codec, b"x")
