"""The message browser: read a page of records of one partition from an offset, a time or
the end, filter by key or a search, decode values (the registry's wire format, JSON, text,
hex), and produce a record.

One consumer without a group serves every page (assign, seek, poll: a page costs one
fetch from the leader however long the partition is); one producer serves produce.
"""
from __future__ import annotations

import binascii
import json
import threading
import time

from pylog.core.client.consumer import Consumer, TopicPartition
from pylog.core.client.producer import Producer
from pylog.core.errors import UsageError

FORMATS = ("auto", "registry", "json", "text", "hex")
MAX_PAGE = 500
SCAN_LIMIT = 200_000  # records a filtered page may look at before answering with what it found
SCAN_SECONDS = 3.0


class Decoder:
    """bytes -> (shown text, how it was decoded) for one of FORMATS."""

    def __init__(self, registry=None):
        self.registry = registry  # a RegistryClient, or None
        self._deser = None

    def deserializer(self):
        if self._deser is None and self.registry is not None:
            from pylog.core.client.schema_registry import Deserializer

            self._deser = Deserializer(self.registry)
        return self._deser

    def decode(self, data, fmt: str):
        if data is None:
            return None, "null"
        data = bytes(data)
        if fmt == "hex":
            return binascii.hexlify(data).decode(), "hex"
        if fmt in ("auto", "registry") and len(data) >= 5 and data[0] == 0 and self.deserializer() is not None:
            try:
                return json.dumps(self.deserializer().decode(data), ensure_ascii=False), "registry"
            except Exception as e:  # noqa: BLE001 - shown as undecodable, the page goes on
                if fmt == "registry":
                    return f"cannot decode with the registry: {e}", "error"
        if fmt in ("auto", "json"):
            try:
                return json.dumps(json.loads(data), ensure_ascii=False), "json"
            except ValueError:
                if fmt == "json":
                    return binascii.hexlify(data).decode(), "hex"
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return binascii.hexlify(data).decode(), "hex"
        if fmt == "auto" and any(c < " " and c not in "\t\n\r" for c in text):
            return binascii.hexlify(data).decode(), "hex"  # binary that happens to be UTF-8
        return text, "text"


class Messages:
    """Pages of records and produce, for the console's message browser."""

    def __init__(self, props: dict, registry=None, allow_writes: bool = False):
        self.props = dict(props)
        self.allow_writes = allow_writes
        self.decoder = Decoder(registry)
        self._producer: Producer | None = None
        self._lock = threading.Lock()

    def close(self) -> None:
        if self._producer is not None:
            self._producer.close()

    def consumer(self) -> Consumer:
        """A consumer for one page: its own connection, so no fetch left in flight by an earlier
        page waits ahead of this page's requests (a short fetch.max.wait.ms: a page never waits
        for records that are not there)."""
        return Consumer({**self.props, "enable.auto.commit": "false", "max.poll.records": "500",
                         "fetch.max.wait.ms": "100", "client.id": "pylog-console"})

    # ---------------------------------------------------------------- browse
    def page(self, topic: str, partition: int, start: str = "end", offset: int | None = None,
             timestamp: int | None = None, limit: int = 50, key: str | None = None, search: str | None = None,
             fmt: str = "auto") -> dict:
        """Up to `limit` records of topic-partition from `start` (offset, time or end)."""
        if fmt not in FORMATS:
            raise UsageError(f"format {fmt!r}: expected one of {', '.join(FORMATS)}")
        limit = max(1, min(int(limit), MAX_PAGE))
        tp = TopicPartition(topic, int(partition))
        with self.consumer() as c:
            low, high = (c.beginning_offsets([tp])[tp], c.end_offsets([tp])[tp])
            first = self._first_offset(c, tp, start, offset, timestamp, limit, low, high, bool(key or search))
            rows, next_offset, scanned = self._read(c, tp, first, high, limit, key, search, fmt)
        return {"topic": topic, "partition": tp.partition, "start_offset": low, "end_offset": high,
                "from": first, "next": next_offset, "scanned": scanned, "records": rows}

    @staticmethod
    def _first_offset(c, tp, start, offset, timestamp, limit, low, high, filtered) -> int:
        if start == "offset":
            if offset is None:
                raise UsageError("start=offset needs an offset")
            return min(max(int(offset), low), high)
        if start == "time":
            if timestamp is None:
                raise UsageError("start=time needs a timestamp (ms)")
            found = c.offsets_for_times({tp: int(timestamp)})[tp]
            return high if found is None else found.offset
        if start == "beginning":
            return low
        if start == "end":
            return low if filtered else max(low, high - limit)
        raise UsageError(f"start {start!r}: expected offset, time, beginning or end")

    def _read(self, c, tp, first, high, limit, key, search, fmt):
        rows: list = []
        if first >= high:
            return rows, first, 0
        c.assign([tp])
        c.seek(tp, first)
        pos, scanned = first, 0
        deadline = time.monotonic() + SCAN_SECONDS
        kb = key.encode() if key else None
        sb = search.encode() if search else None
        idle = 0
        while pos < high and len(rows) < limit and scanned < SCAN_LIMIT and time.monotonic() < deadline:
            got = c.poll(500).get(tp, [])
            for r in got:
                if r.offset < pos:
                    continue
                pos = r.offset + 1
                scanned += 1
                if kb is not None and r.key != kb:
                    continue
                if sb is not None and sb not in (r.value or b"") and sb not in (r.key or b""):
                    continue
                rows.append(self._row(tp.partition, r, fmt))
                if len(rows) >= limit:
                    return rows, pos, scanned
            # control batches (transaction markers) hold offsets no record is returned for: the
            # consumer's position moves past them
            at = c.position(tp)
            idle = 0 if got or (at is not None and at > pos) else idle + 1
            pos = max(pos, at if at is not None else pos)
            if idle >= 2:
                break
        return rows, pos, scanned

    def _row(self, partition, r, fmt) -> dict:
        key, key_as = self.decoder.decode(r.key, "auto" if fmt == "registry" else fmt)
        value, value_as = self.decoder.decode(r.value, fmt)
        headers = [[k, None if v is None else self.decoder.decode(v, "hex" if fmt == "hex" else "text")[0]]
                   for k, v in r.headers]
        return {"partition": partition, "offset": r.offset, "timestamp": r.timestamp, "key": key,
                "key_as": key_as, "value": value, "value_as": value_as, "headers": headers,
                "size": len(r.value or b"") + len(r.key or b"")}

    # ---------------------------------------------------------------- produce
    def produce(self, topic: str, value: str | None, key: str | None = None, partition: int | None = None,
                headers: list | None = None) -> dict:
        if not self.allow_writes:
            from pylog.console.cluster import ReadOnlyError

            raise ReadOnlyError(f"read-only console: cannot produce to {topic} (start it with --allow-writes)")
        with self._lock:
            if self._producer is None:
                self._producer = Producer({**self.props, "client.id": "pylog-console", "linger.ms": "0"})
            fut = self._producer.send(topic, value, key, partition=partition,
                                      headers=[(str(k), v) for k, v in (headers or [])] or None)
            self._producer.flush(30)
        md = fut.get(30)
        return {"topic": topic, "partition": md.partition, "offset": md.offset}
