"""Bytes as Java's `new String(bytes, UTF_8)` reads them, which Kafka's tools print.

Valid UTF-8 reads the same in Java and Python, and both replace malformed bytes with U+FFFD,
but not in the same number: Python replaces each maximal valid prefix (Unicode's practice),
Java's decoder takes a lead byte with its continuation bytes as one unit (`ED A0 80`, an
encoded surrogate, is one U+FFFD in Java and three in Python) and a truncated tail as one.
The error handler below gives each malformed place Java's length; `decode_java(data)` uses it.
"""
from __future__ import annotations

import codecs

ERRORS = "pylog-java-utf8"


def _cont(x: int) -> bool:
    return x & 0xC0 == 0x80


def _three(b: bytes, i: int, n: int) -> int:
    b1 = b[i]
    if n < 3:  # the input ends inside the sequence
        if n > 1 and ((b1 == 0xE0 and b[i + 1] & 0xE0 == 0x80) or not _cont(b[i + 1])):
            return 1
        return n
    b2 = b[i + 1]
    if (b1 == 0xE0 and b2 & 0xE0 == 0x80) or not _cont(b2):  # overlong, or no continuation
        return 1
    return 3 if _cont(b[i + 2]) else 2  # all three continuation: an encoded surrogate


def _four(b: bytes, i: int, n: int) -> int:
    b1 = b[i]
    if b1 > 0xF4:
        return 1
    if n > 1:
        b2 = b[i + 1]
        if (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF) or (b1 == 0xF4 and b2 & 0xF0 != 0x80) or not _cont(b2):
            return 1
    if n > 2 and not _cont(b[i + 2]):
        return 2
    return min(n, 3)  # a bad fourth byte, or the input ends inside the sequence


def java_malformed_length(b: bytes, i: int) -> int:
    """How many bytes from b[i] (where UTF-8 is malformed) Java replaces with one U+FFFD
    (the JDK's String.decodeUTF8 and UTF_8.Decoder's malformedN)."""
    b1, n = b[i], len(b) - i
    if 0xE0 <= b1 <= 0xEF:
        return _three(b, i, n)
    if 0xF0 <= b1 <= 0xF7:
        return _four(b, i, n)
    return 1


def _handler(e: UnicodeDecodeError):
    return "\ufffd", e.start + java_malformed_length(e.object, e.start)


codecs.register_error(ERRORS, _handler)


def decode_java(data) -> str:
    """`new String(data, StandardCharsets.UTF_8)`."""
    return bytes(data).decode("utf-8", ERRORS)
