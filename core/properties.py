"""Java-style .properties text: parse and format (no file I/O here)."""
from __future__ import annotations

from pylog.core.errors import UsageError


def parse_properties(text: str, source: str = "<properties>") -> dict[str, str]:
    """Parse the subset of java.util.Properties that Kafka configs use.

    Supports `#`/`!` comments, `key=value`, `key: value`, `key value`, line
    continuations with a trailing backslash and the usual escapes.
    """
    props: dict[str, str] = {}
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i].lstrip()
        i += 1
        if not line or line[0] in "#!":
            continue
        while _continues(line) and i <= len(lines):
            line = line[:-1] + (lines[i].lstrip() if i < len(lines) else "")
            i += 1
        key, value = _split(line)
        if not key:
            raise UsageError(f"{source}:{i}: property line has no key: {line!r}")
        props[_unescape(key)] = _unescape(value)
    return props


def _continues(line: str) -> bool:
    n = len(line) - len(line.rstrip("\\"))
    return n % 2 == 1


def _split(line: str) -> tuple[str, str]:
    j = 0
    while j < len(line):
        c = line[j]
        if c == "\\":
            j += 2
            continue
        if c in "=: \t":
            key = line[:j]
            rest = line[j:].lstrip(" \t")
            if rest[:1] in ("=", ":") and c in " \t":
                rest = rest[1:].lstrip(" \t")
            elif c in "=:":
                rest = line[j + 1 :].lstrip(" \t")
            return key, rest
        j += 1
    return line, ""


_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(s: str) -> str:
    if "\\" not in s:
        return s
    out = []
    j = 0
    while j < len(s):
        c = s[j]
        if c == "\\" and j + 1 < len(s):
            n = s[j + 1]
            if n == "u" and j + 6 <= len(s):
                out.append(chr(int(s[j + 2 : j + 6], 16)))
                j += 6
                continue
            out.append(_ESCAPES.get(n, n))
            j += 2
            continue
        out.append(c)
        j += 1
    return "".join(out)


def parse_assignment(item: str, flag: str = "-X") -> tuple[str, str]:
    """`key=value` from the command line."""
    key, sep, value = item.partition("=")
    key = key.strip()
    if not sep or not key:
        raise UsageError(f"{flag} expects key=value, got {item!r}")
    return key, value
