"""Helpers for the cleaner tests: build compacted logs, read them back."""
from __future__ import annotations

import time
from pathlib import Path

from pylog.core.config import TOPIC_CONFIGS
from pylog.core.records import BatchBuilder, RecordBatch
from pylog.storage.log import Log

NOW = 1_700_000_000_000


def topic_config(**kw):
    props = {"cleanup.policy": "compact", "segment.bytes": "1024", "delete.retention.ms": "1000",
             "min.cleanable.dirty.ratio": "0.01", "file.delete.delay.ms": "0",
             "message.timestamp.before.max.ms": str(1 << 62), "message.timestamp.after.max.ms": str(1 << 62)}
    props.update({k.replace("_", "."): str(v) for k, v in kw.items()})
    return TOPIC_CONFIGS.resolve(props)


def open_log(path: Path, config=None, *, clean=True) -> Log:
    return Log(path, config or topic_config(), fsync=False, had_clean_shutdown=clean, clock=lambda: NOW / 1000)


def append(lg: Log, records, *, codec=0, producer=None, ts=NOW):
    """records: [(key bytes, value bytes | None)]; producer: (pid, epoch, base_seq) or None."""
    kw = {}
    if producer is not None:
        kw = dict(producer_id=producer[0], producer_epoch=producer[1], base_sequence=producer[2])
    b = BatchBuilder(codec=codec, **kw)
    for k, v in records:
        b.append(ts, k, v)
    return lg.append_as_leader(bytearray(b.build()), 0, now_ms=ts)


def read_records(lg_or_dir) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record, in log order, CRCs checked."""
    out = []
    segs = lg_or_dir.segments
    for seg in segs:
        for p, h in seg.batches():
            raw = seg.read_batch_bytes(p, h.batch_length + 12)
            out += [(r.offset, r.key, r.value) for r in RecordBatch(raw, 0, verify_crc=True).records()]
    return out


def kv_map(records) -> dict:
    m = {}
    for _, k, v in records:
        if v is None:
            m.pop(k, None)
        else:
            m[k] = v
    return m
