"""What `pylog consume` reads and which records it prints: start/end positions
(kcat's `-o` forms and relative times), `--filter` on key and headers, and Kafka's
console-consumer `--property print.*` formatter options.
"""
from __future__ import annotations

import re
import time
from typing import NamedTuple

from pylog.core.errors import UsageError

_UNITS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"^-(\d+)(ms|s|m|h|d)$")
OFFSET_HELP = ("N, -N, earliest (beginning), latest (end), stored (the group's committed offset), "
               "@TS or s@TS (first record at/after TS), e@TS (stop before the first record at/after TS); "
               "TS is epoch milliseconds or a time before now such as -10m, -2h, -1d")


class Start(NamedTuple):
    kind: str  # earliest | latest | offset | relative | timestamp | stored
    n: int = 0


def parse_time(text: str, what: str, now_ms: int | None = None) -> int:
    """Epoch milliseconds, or `-<N><ms|s|m|h|d>` before now."""
    m = _DURATION.match(text.strip())
    if m:
        now = int(time.time() * 1000) if now_ms is None else now_ms
        return max(0, now - int(m.group(1)) * _UNITS[m.group(2)])
    try:
        ts = int(text)
    except ValueError:
        raise UsageError(f"{what}: expected epoch milliseconds or a time before now like -10m, -2h, -1d") from None
    if ts < 0:
        raise UsageError(f"{what}: a negative time needs a unit, like -10m")
    return ts


def parse_offsets(values: tuple[str, ...], now_ms: int | None = None) -> tuple[Start | None, int | None]:
    """The repeatable `-o`: at most one start position and one `e@TS` end time."""
    start = end = None
    for v in values:
        t = v.strip()
        flag = f"--offset {v!r}"
        if t.startswith("e@"):
            if end is not None:
                raise UsageError(f"{flag}: only one end time (e@TS)")
            end = parse_time(t[2:], flag, now_ms)
            continue
        if start is not None:
            raise UsageError(f"{flag}: only one start position (plus an optional e@TS)")
        if t in ("earliest", "beginning"):
            start = Start("earliest")
        elif t in ("latest", "end"):
            start = Start("latest")
        elif t == "stored":
            start = Start("stored")
        elif t.startswith(("s@", "@")):
            start = Start("timestamp", parse_time(t.partition("@")[2], flag, now_ms))
        else:
            try:
                n = int(t)
            except ValueError:
                raise UsageError(f"{flag}: expected {OFFSET_HELP}") from None
            start = Start("relative", -n) if n < 0 else Start("offset", n)
    return start, end


class RecordFilter:
    """`--filter` expressions, all of which a record must match:

    key=TEXT, key~REGEX, header.NAME=TEXT, header.NAME~REGEX, header.NAME (present).
    Text compares against the raw bytes (UTF-8 encoded); regexes search the bytes.
    """

    _EXPR = re.compile(r"^(key|header\.(?P<name>[^=~]+))(?:(?P<op>[=~])(?P<arg>.*))?$", re.S)

    def __init__(self, exprs: tuple[str, ...]):
        self.tests = []
        for e in exprs:
            m = self._EXPR.match(e)
            if m is None or (m.group(1) == "key" and m.group("op") is None):
                raise UsageError(f"--filter {e!r}: expected key=TEXT, key~REGEX, header.NAME=TEXT, "
                                 "header.NAME~REGEX or header.NAME")
            arg = (m.group("arg") or "").encode("utf-8")
            op = m.group("op")
            if op == "~":
                try:
                    arg = re.compile(arg)
                except re.error as x:
                    raise UsageError(f"--filter {e!r}: bad regular expression: {x}") from None
            name = m.group("name")
            self.tests.append((name, op, arg))

    def __bool__(self):
        return bool(self.tests)

    @staticmethod
    def _match(value, op, arg) -> bool:
        if op is None:
            return True
        if value is None:
            return False
        if op == "=":
            return bytes(value) == arg
        return arg.search(bytes(value)) is not None

    def keep(self, r) -> bool:
        for name, op, arg in self.tests:
            if name is None:
                if not self._match(r.key, op, arg):
                    return False
            elif not any(k == name and self._match(v, op, arg) for k, v in (r.headers or ())):
                return False
        return True

    def apply(self, records: list) -> list:
        return [r for r in records if self.keep(r)]


# Kafka's console consumer formatter properties (DefaultMessageFormatter)
FORMATTER_PROPS = {"print.timestamp", "print.key", "print.value", "print.partition", "print.offset",
                   "print.headers", "key.separator", "line.separator", "headers.separator", "null.literal"}


def _unescape(s: str) -> str:
    return s.replace("\\t", "\t").replace("\\n", "\n").replace("\\r", "\r")


def kafka_formatter(props: dict, text):
    """(topic, partition, Record) -> str as kafka-console-consumer.sh prints with these
    --property settings; `text(bytes) -> str` shows keys, values and headers."""
    def flag(name, default=False):
        v = props.get(name)
        if v is None:
            return default
        if v.lower() not in ("true", "false"):
            raise UsageError(f"--property {name}={v}: expected true or false")
        return v.lower() == "true"

    ts, part, off = flag("print.timestamp"), flag("print.partition"), flag("print.offset")
    hdrs, key, val = flag("print.headers"), flag("print.key"), flag("print.value", True)
    ksep = _unescape(props.get("key.separator", "\t"))
    lsep = _unescape(props.get("line.separator", "\n"))
    hsep = _unescape(props.get("headers.separator", ","))
    null = props.get("null.literal", "null")

    def show(b):
        return null if b is None else text(b)

    def render(topic, partition, r):
        cols = []
        if ts:
            cols.append(f"CreateTime:{r.timestamp}" if r.timestamp >= 0 else "NO_TIMESTAMP")
        if part:
            cols.append(f"Partition:{partition}")
        if off:
            cols.append(f"Offset:{r.offset}")
        if hdrs:
            cols.append(hsep.join(f"{k}:{show(v)}" for k, v in r.headers) if r.headers else "NO_HEADERS")
        if key:
            cols.append(show(r.key))
        if val:
            cols.append(show(r.value))
        # columns apart by key.separator, the last one ends with line.separator
        return ksep.join(cols) + lsep if cols else ""
    return render
