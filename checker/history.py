"""The history: one JSON object per line, appended and flushed as operations happen.

Each line is an event of one operation:

    {"index": 7, "process": "queue-2.0", "type": "invoke", "f": "txn", "time": 1200345, "value": [...]}
    {"index": 8, "process": "queue-2.0", "type": "ok", "f": "txn", "time": 1400301, "start": 1200345,
     "value": [...]}

`type` is invoke, then one of ok (it happened), fail (it certainly did not happen) or info (it
may or may not have happened). `time` and `start` are nanoseconds since the run began. A process
runs one operation at a time; an invoke with no completion (the run crashed) counts as info.
`value` by `f`:

    send, txn, poll   micro-operations: ["send", KEY, VALUE, OFFSET or null] and
                      ["poll", {KEY: [[OFFSET, VALUE], ...]}]; a txn's ok carries "commit_at"
                      (when its commit began) and may carry "group" and "offsets" (its
                      consumer offsets, committed with it)
    assign, subscribe the keys (or topics) a consumer now reads: its reading starts afresh
    rebalance         {"group": G, "assigned": [KEY...], "revoked": [KEY...]}
    commit            {"group": G, "offsets": {KEY: NEXT_OFFSET}}
    share-poll        {"group": G, "records": {KEY: [[OFFSET, VALUE, DELIVERY_COUNT], ...]}}
    share-ack         {"group": G, "accept": {KEY: [OFFSET...]}, "release": {...}, "reject": {...},
                       "failed": [KEY...]} (acknowledgements of failed keys are info)
    kill, pause, ...  faults, by the process "nemesis": invoke when it begins, ok when it ends

A KEY is "topic/partition"; values are integers unique in the run.
"""
from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import NamedTuple

HISTORY_FILE = "history.jsonl"
INVOKE, OK, FAIL, INFO = "invoke", "ok", "fail", "info"


class Op(NamedTuple):
    """A completed operation: its completion event, with the time it was invoked."""
    index: int
    process: str
    type: str
    f: str
    start: int
    time: int
    value: object
    extra: dict


def key_of(topic: str, partition: int) -> str:
    return f"{topic}/{partition}"


def split_key(key: str) -> tuple[str, int]:
    topic, _, partition = key.rpartition("/")
    return topic, int(partition)


class HistoryWriter:
    """Appends events to DIR/history.jsonl, one flushed line each, from any thread."""

    def __init__(self, directory: Path, clock=time.monotonic_ns):
        self.path = Path(directory) / HISTORY_FILE
        self._file = open(self.path, "a", encoding="utf-8")
        self._lock = threading.Lock()
        self._clock = clock
        self._t0 = clock()
        self._index = 0
        self._open: dict[str, dict] = {}

    def now(self) -> int:
        return self._clock() - self._t0

    def invoke(self, process: str, f: str, value=None) -> None:
        event = {"process": process, "type": INVOKE, "f": f, "value": value}
        with self._lock:
            event["time"] = self.now()
            self._open[process] = event
            self._write(event)

    def complete(self, process: str, type: str, value=None, **extra) -> None:
        with self._lock:
            start = self._open.pop(process)
            event = {"process": process, "type": type, "f": start["f"], "time": self.now(),
                     "start": start["time"], "value": start["value"] if value is None else value}
            event.update(extra)
            self._write(event)

    def event(self, process: str, f: str, value=None) -> None:
        """An instantaneous ok event (a rebalance seen by a consumer)."""
        with self._lock:
            now = self.now()
            self._write({"process": process, "type": OK, "f": f, "time": now, "start": now, "value": value})

    def _write(self, event: dict) -> None:
        event["index"] = self._index
        self._index += 1
        self._file.write(json.dumps(event, separators=(",", ":")) + "\n")
        self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()


def read_history(path: Path) -> list[Op]:
    """The completed operations of a history file (or of DIR/history.jsonl), in completion order.

    An invoke never completed becomes an info operation at the end; a torn last line (the
    writer was killed mid-line) is ignored. Completion lines are decoded in blocks, one JSON
    array per block: one call into the decoder instead of one per line."""
    path = Path(path)
    if path.is_dir():
        path = path / HISTORY_FILE
    ops: list[Op] = []
    pending: dict = {}  # process -> its invoke line not yet completed
    block: list[bytes] = []
    marker, pkey = b'"type":"invoke"', b'"process":"'
    with open(path, "rb") as fh:
        for line in fh:
            at = line.find(pkey)
            if at < 0:  # not written by HistoryWriter (spaces after colons): parse it alone
                _flush(block, ops)
                _one(line, ops, pending)
                continue
            process = line[at + 11:line.find(b'"', at + 11)]
            if marker in line:
                pending[process] = line  # parsed only if never completed
                continue
            pending.pop(process, None)
            block.append(line)
            if len(block) >= 4096:
                _flush(block, ops)
    _flush(block, ops)
    for line in pending.values():
        try:
            e = json.loads(line)
        except ValueError:
            continue
        ops.append(_op(dict(e, type=INFO, start=e["time"])))
    return ops


def _flush(block: list[bytes], ops: list[Op]) -> None:
    if not block:
        return
    try:
        events = json.loads(b"[" + b",".join(block) + b"]")
    except ValueError:  # a torn line among them: one at a time
        events = []
        for line in block:
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
    ops.extend(map(_op, events))
    block.clear()


def _one(line: bytes, ops: list[Op], pending: dict) -> None:
    try:
        e = json.loads(line)
    except ValueError:
        return
    if e["type"] == INVOKE:
        pending[e["process"].encode()] = line
    else:
        pending.pop(e["process"].encode(), None)
        ops.append(_op(e))


_BASE = frozenset(("index", "process", "type", "f", "start", "time", "value"))


def _op(e: dict) -> Op:
    t = e["time"]
    if len(e) != 7 or "start" not in e:
        extra = {k: v for k, v in e.items() if k not in _BASE}
        return Op(e["index"], e["process"], e["type"], e["f"], e.get("start", t), t, e.get("value"), extra)
    return Op(e["index"], e["process"], e["type"], e["f"], e.get("start", t), t, e.get("value"), _NONE)


_NONE: dict = {}


def history_size(directory: Path) -> int:
    path = Path(directory) / HISTORY_FILE
    return os.path.getsize(path) if path.exists() else 0
