"""Text and JSON renderings shared by dump-segment (Kafka's kafka-dump-log field names and order)."""
from __future__ import annotations

import base64
import json
import sys

from pylog.commands.java_utf8 import decode_java
from pylog.core.records.header import CODEC_NAMES

TIMESTAMP_TYPE_NAMES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}
DECODERS = ("string", "hex", "base64", "json", "none", "registry")


def java_bool(b: bool) -> str:
    return "true" if b else "false"


def optional_long(v: int | None) -> str:
    """Java's OptionalLong.toString(), which kafka-dump-log prints as is."""
    return "OptionalLong.empty" if v is None or v < 0 else f"OptionalLong[{v}]"


def codec_name(codec: int) -> str:
    return CODEC_NAMES.get(codec, f"unknown({codec})")


def decode_bytes(data: bytes | None, decoder: str) -> str | None:
    """Render a key or value; None means 'print nothing' (null field or decoder none)."""
    if data is None or decoder == "none":
        return None
    if callable(decoder):  # "registry": the schema registry's wire format, as JSON
        return decoder(data)
    if decoder == "string":
        # Kafka's StringDecoder (new String(bytes, UTF_8)): invalid UTF-8 becomes U+FFFD as Java
        # replaces it; hex/base64 keep the bytes
        return decode_java(data)
    if decoder == "hex":
        return bytes(data).hex()
    if decoder == "base64":
        return base64.b64encode(data).decode("ascii")
    if decoder == "json":
        try:
            return json.dumps(json.loads(bytes(data)), indent=2, ensure_ascii=False)
        except (ValueError, UnicodeDecodeError):
            return bytes(data).decode("utf-8", "backslashreplace")
    raise ValueError(decoder)


class Writer:
    """Buffered line output to stdout (text) or JSON lines; stderr notes go through `note`."""

    def __init__(self, as_json: bool, stream=None):
        self.as_json = as_json
        self.stream = stream or sys.stdout
        self._lines: list[str] = []
        self._dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=str).encode

    def line(self, text: str) -> None:
        self._lines.append(text)
        if len(self._lines) >= 4096:
            self.flush()

    def extend(self, lines: list[str]) -> None:
        self._lines.extend(lines)
        if len(self._lines) >= 4096:
            self.flush()

    def obj(self, obj: dict) -> None:
        self.line(self._dumps(obj))

    def flush(self) -> None:
        if self._lines:
            self.stream.write("\n".join(self._lines) + "\n")
            self._lines.clear()
        self.stream.flush()

    def note(self, text: str) -> None:
        """A stderr line (Kafka prints index mismatches and skipped files there)."""
        self.flush()
        sys.stderr.write(text + "\n")
        sys.stderr.flush()
