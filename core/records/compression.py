"""Compression codecs of Kafka record batches and legacy wrapper messages.

Codec ids are the attribute bits: 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd.

- gzip: a gzip member (Java's GZIPOutputStream); reading accepts several.
- snappy: the Java client writes snappy-java's "xerial" framing: the magic
  b"\\x82SNAPPY\\x00", two big-endian int32 (version, min compatible version),
  then blocks of int32 length + raw snappy data, each from at most 32 KiB of
  input. Other clients (librdkafka) write one raw snappy block; we read both.
- lz4: the LZ4 frame format with 64 KiB independent blocks and no content
  size, as Kafka's KafkaLZ4BlockOutputStream writes. Kafka before 0.10 (and
  every writer of magic 0 since, for compatibility, see KIP-57) computed the
  frame header checksum over the 4 magic bytes too; `decompress_lz4_legacy`
  repairs that before decoding.
- zstd: a zstd frame; frames written by streaming encoders (zstd-jni) carry no
  content size, so decoding must stream.
"""
from __future__ import annotations

import struct
import threading
import zlib

from pylog.core.records.errors import CorruptCompressedError, UnknownCodecError
from pylog.core.records.header import (
    CODEC_GZIP,
    CODEC_LZ4,
    CODEC_NONE,
    CODEC_SNAPPY,
    CODEC_ZSTD,
)

__all__ = [
    "compress",
    "decompress",
    "compress_gzip",
    "decompress_gzip",
    "compress_snappy",
    "decompress_snappy",
    "compress_lz4",
    "decompress_lz4",
    "compress_lz4_legacy",
    "decompress_lz4_legacy",
    "compress_zstd",
    "decompress_zstd",
    "XERIAL_MAGIC",
    "xxh32",
]

XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = XERIAL_MAGIC + struct.pack(">ii", 1, 1)
# snappy-java's SnappyOutputStream default block size, which Kafka uses.
_XERIAL_BLOCK = 32 * 1024
_I32 = struct.Struct(">i")

_LZ4_MAGIC = b"\x04\x22\x4d\x18"

# ---------------------------------------------------------------- gzip


def compress_gzip(data, level: int = 6) -> bytes:
    # wbits 16+15 writes a gzip wrapper, like java.util.zip.GZIPOutputStream.
    c = zlib.compressobj(level, zlib.DEFLATED, 31)
    return c.compress(data) + c.flush()


def decompress_gzip(data) -> bytes:
    out = []
    data = bytes(data)
    if not data:
        raise CorruptCompressedError("gzip: empty payload")
    try:
        while data:
            # 32+15 detects gzip or zlib headers; concatenated members are legal gzip.
            d = zlib.decompressobj(47)
            out.append(d.decompress(data))
            out.append(d.flush())
            if not d.eof:
                raise CorruptCompressedError("gzip stream ends before its trailer")
            data = d.unused_data
    except zlib.error as e:
        raise CorruptCompressedError(f"gzip: {e}") from None
    return b"".join(out)


# ---------------------------------------------------------------- snappy


def compress_snappy(data, xerial: bool = True) -> bytes:
    """Snappy in the xerial framing the Java client writes (or one raw block)."""
    import cramjam  # the codecs' modules load on first use: most commands never compress

    try:
        if not xerial:
            return bytes(cramjam.snappy.compress_raw(data))
        mv = memoryview(data).cast("B")
        parts = [_XERIAL_HEADER]
        for start in range(0, len(mv), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(mv[start : start + _XERIAL_BLOCK]))
            parts.append(_I32.pack(len(block)))
            parts.append(block)
        return b"".join(parts)
    except Exception as e:  # cramjam raises its own error type
        raise CorruptCompressedError(f"snappy: {e}") from None


def decompress_snappy(data) -> bytes:
    import cramjam

    mv = memoryview(data).cast("B")
    try:
        if mv[:8] != XERIAL_MAGIC:
            return bytes(cramjam.snappy.decompress_raw(mv))
        if len(mv) < 16:
            raise CorruptCompressedError("xerial snappy header truncated")
        pos, end = 16, len(mv)
        parts = []
        while pos < end:
            if end - pos < 4:
                raise CorruptCompressedError("xerial snappy block length truncated")
            (n,) = _I32.unpack_from(mv, pos)
            pos += 4
            if n < 0 or pos + n > end:
                raise CorruptCompressedError(f"xerial snappy block of {n} bytes runs past the end")
            parts.append(bytes(cramjam.snappy.decompress_raw(mv[pos : pos + n])))
            pos += n
        return b"".join(parts)
    except CorruptCompressedError:
        raise
    except Exception as e:
        raise CorruptCompressedError(f"snappy: {e}") from None


# ---------------------------------------------------------------- lz4


def compress_lz4(data) -> bytes:
    import lz4.frame

    return lz4.frame.compress(
        data,
        block_size=lz4.frame.BLOCKSIZE_MAX64KB,
        block_linked=False,
        content_checksum=False,
        store_size=False,
    )


def decompress_lz4(data) -> bytes:
    import lz4.frame

    try:
        return lz4.frame.decompress(data)
    except RuntimeError as e:
        raise CorruptCompressedError(f"lz4: {e}") from None


def _lz4_descriptor_end(data) -> int:
    """Index of the header-checksum byte of an LZ4 frame."""
    if len(data) < 7 or bytes(data[:4]) != _LZ4_MAGIC:
        raise CorruptCompressedError("lz4: not an LZ4 frame")
    flg = data[4]
    end = 6
    if flg & 0x08:  # content size present
        end += 8
    if flg & 0x01:  # dictionary id present
        end += 4
    if len(data) <= end:
        raise CorruptCompressedError("lz4: frame header truncated")
    return end


def compress_lz4_legacy(data) -> bytes:
    """LZ4 frame with the pre-KIP-57 header checksum (magic bytes included)."""
    frame = bytearray(compress_lz4(data))
    hc = _lz4_descriptor_end(frame)
    frame[hc] = (xxh32(bytes(frame[:hc])) >> 8) & 0xFF
    return bytes(frame)


def decompress_lz4_legacy(data) -> bytes:
    """Read an LZ4 frame whose header checksum may be Kafka's old broken one."""
    frame = bytearray(data)
    hc = _lz4_descriptor_end(frame)
    good = (xxh32(bytes(frame[4:hc])) >> 8) & 0xFF
    if frame[hc] != good:
        broken = (xxh32(bytes(frame[:hc])) >> 8) & 0xFF
        if frame[hc] != broken:
            raise CorruptCompressedError("lz4: frame header checksum matches neither form")
        frame[hc] = good
    return decompress_lz4(frame)


# ---------------------------------------------------------------- zstd

_local = threading.local()  # zstandard contexts are not thread-safe: one per thread


def _zstd_c():
    c = getattr(_local, "zc", None)
    if c is None:
        import zstandard

        c = _local.zc = zstandard.ZstdCompressor(level=3)
    return c


def _zstd_d():
    d = getattr(_local, "zd", None)
    if d is None:
        import zstandard

        d = _local.zd = zstandard.ZstdDecompressor()
    return d


def compress_zstd(data) -> bytes:
    return _zstd_c().compress(data)


def decompress_zstd(data) -> bytes:
    import zstandard

    try:
        out = []
        remaining = data
        while True:
            # A decompressobj streams, so frames without a content size work.
            d = _zstd_d().decompressobj()
            out.append(d.decompress(remaining))
            if not d.eof:
                raise CorruptCompressedError("zstd frame truncated")
            remaining = d.unused_data
            if not remaining:
                break
        return out[0] if len(out) == 1 else b"".join(out)
    except zstandard.ZstdError as e:
        raise CorruptCompressedError(f"zstd: {e}") from None


# ---------------------------------------------------------------- dispatch


def _identity(data) -> bytes:
    return bytes(data)


COMPRESSORS = {
    CODEC_NONE: _identity,
    CODEC_GZIP: compress_gzip,
    CODEC_SNAPPY: compress_snappy,
    CODEC_LZ4: compress_lz4,
    CODEC_ZSTD: compress_zstd,
}
_DECOMPRESS = {
    CODEC_NONE: _identity,
    CODEC_GZIP: decompress_gzip,
    CODEC_SNAPPY: decompress_snappy,
    CODEC_LZ4: decompress_lz4,
    CODEC_ZSTD: decompress_zstd,
}


def compress(codec: int, data) -> bytes:
    fn = COMPRESSORS.get(codec)
    if fn is None:
        raise UnknownCodecError(codec)
    return fn(data)


def decompress(codec: int, data) -> bytes:
    fn = _DECOMPRESS.get(codec)
    if fn is None:
        raise UnknownCodecError(codec)
    return fn(data)


# ---------------------------------------------------------------- xxh32

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 (only used on the few bytes of an LZ4 frame header)."""
    n = len(data)
    pos = 0
    if n >= 16:
        v = [(seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32]
        while pos + 16 <= n:
            for i in range(4):
                lane = int.from_bytes(data[pos : pos + 4], "little")
                v[i] = (_rotl((v[i] + lane * _P2) & _M32, 13) * _P1) & _M32
                pos += 4
        h = (_rotl(v[0], 1) + _rotl(v[1], 7) + _rotl(v[2], 12) + _rotl(v[3], 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while pos + 4 <= n:
        lane = int.from_bytes(data[pos : pos + 4], "little")
        h = (_rotl((h + lane * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    while pos < n:
        h = (_rotl((h + data[pos] * _P5) & _M32, 11) * _P1) & _M32
        pos += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h
