"""A log dir on a page: its partitions, each partition's segments, a segment's batches with
the fields `pylog dump-segment --json` prints (Kafka's kafka-dump-log.sh names), and the
verdicts of `pylog verify` (CLEAN, REPAIRABLE, DAMAGED) with their problems."""
from __future__ import annotations

import os
import time
from pathlib import Path

from pylog.core.errors import UsageError
from pylog.core.records.header import CODEC_NAMES
from pylog.storage.checks import verify_partition
from pylog.storage.layout import SEGMENT_FILE, parse_partition_dir
from pylog.storage.lock import in_use
from pylog.storage.scan import Damage, scan_log

TIMESTAMP_TYPES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}
PAGE_BATCHES = 200
PAGE_PARTITIONS = 500
NAMES_TTL = 5.0


def batch_fields(e) -> dict:
    """One scanned batch as dump-segment's JSON shows it."""
    h = e.header
    if e.magic == 2:
        return {"baseOffset": h.base_offset, "lastOffset": h.last_offset, "count": h.record_count,
                "baseSequence": h.base_sequence, "lastSequence": h.last_sequence, "producerId": h.producer_id,
                "producerEpoch": h.producer_epoch, "partitionLeaderEpoch": h.partition_leader_epoch,
                "isTransactional": h.is_transactional, "isControl": h.is_control,
                "deleteHorizonMs": h.delete_horizon_ms if h.has_delete_horizon else None, "position": e.position,
                "timestampType": TIMESTAMP_TYPES[h.timestamp_type], "maxTimestamp": h.max_timestamp,
                "size": h.size, "magic": 2, "compresscodec": CODEC_NAMES.get(h.codec, str(h.codec)), "crc": h.crc,
                "isvalid": e.crc_ok}
    return {"offset": h.offset, "position": e.position, "timestampType": TIMESTAMP_TYPES[h.timestamp_type],
            "maxTimestamp": h.timestamp, "size": h.size, "magic": h.magic,
            "compresscodec": CODEC_NAMES.get(h.codec, str(h.codec)), "crc": h.crc, "isvalid": e.crc_ok}


class LogDirs:
    def __init__(self, dirs, live: bool = False):
        self.dirs = [Path(d) for d in dirs]
        self.live = live  # a running broker owns them: the active segment may grow as it is read
        self.listed: tuple[float, list] | None = None  # (when, names())

    def _partition(self, name: str) -> Path:
        for d in self.dirs:
            p = d / name
            if parse_partition_dir(name) is not None and p.is_dir():
                return p
        raise UsageError(f"no partition folder {name} in {', '.join(map(str, self.dirs))}")

    def names(self) -> list[tuple[Path, str]]:
        """(log dir, partition folder name) of every partition, in name order (read again after
        NAMES_TTL seconds: a page of a big log dir does not list all of its folders again)."""
        cached = self.listed
        if cached is not None and time.monotonic() - cached[0] < NAMES_TTL:
            return cached[1]
        out = []
        for d in self.dirs:
            if d.is_dir():
                with os.scandir(d) as it:
                    out += [(d, e.name) for e in it if e.is_dir() and parse_partition_dir(e.name) is not None]
        out.sort(key=lambda x: (parse_partition_dir(x[1]), str(x[0])))
        self.listed = (time.monotonic(), out)
        return out

    def partitions(self, start: int = 0, limit: int = PAGE_PARTITIONS, match: str | None = None) -> dict:
        """A page of the partitions (their folders read for this page only), and how many there are."""
        names = [x for x in self.names() if not match or match in x[1]]
        out = []
        for d, name in names[start:start + limit]:
            pd = parse_partition_dir(name)
            with os.scandir(d / name) as it:
                logs = [e.stat().st_size for e in it if SEGMENT_FILE.match(e.name)]
            out.append({"dir": str(d), "name": name, "topic": pd.topic, "partition": pd.partition,
                        "segments": len(logs), "size": sum(logs)})
        return {"total": len(names), "start": start, "partitions": out}

    def segments(self, name: str) -> dict:
        p = self._partition(name)
        segs = []
        for f in sorted(p.iterdir()):
            m = SEGMENT_FILE.match(f.name)
            if m is None:
                continue
            base = m.group(1)
            side = {ext: (p / f"{base}{ext}").stat().st_size if (p / f"{base}{ext}").exists() else None
                    for ext in (".index", ".timeindex", ".txnindex")}
            segs.append({"file": f.name, "base_offset": int(base), "size": f.stat().st_size,
                         "index": side[".index"], "timeindex": side[".timeindex"], "txnindex": side[".txnindex"]})
        files = sorted(x.name for x in p.iterdir() if not SEGMENT_FILE.match(x.name))
        return {"name": name, "path": str(p), "segments": segs, "other_files": files}

    def batches(self, name: str, segment: str, position: int = 0, limit: int = PAGE_BATCHES) -> dict:
        p = self._partition(name)
        if not SEGMENT_FILE.match(segment) or not (p / segment).is_file():
            raise UsageError(f"no segment {segment} in {name}")
        rows, damage, nxt = [], [], None
        for item in scan_log(p / segment):
            if isinstance(item, Damage):
                damage.append({"position": item.position, "kind": item.kind, "message": item.message})
                continue
            if item.position < position:
                continue
            if len(rows) >= limit:
                nxt = item.position
                break
            rows.append(batch_fields(item))
        return {"name": name, "segment": segment, "position": position, "batches": rows, "next_position": nxt,
                "damage": damage}

    def verify(self, name: str | None = None) -> list[dict]:
        names = [name] if name else [n for _, n in self.names()]
        out = []
        for n in names:
            pdir = self._partition(n)
            rep = verify_partition(pdir, live=self.live or in_use(pdir.parent))
            out.append({"name": n, "verdict": rep.verdict, "segments": rep.segments, "batches": rep.batches,
                        "records": rep.records, "bytes": rep.bytes, "log_start_offset": rep.log_start_offset,
                        "log_end_offset": rep.log_end_offset,
                        "problems": [{"kind": x.kind, "file": Path(x.file).name, "message": x.message,
                                      "position": x.position, "offset": x.offset} for x in rep.problems]})
        return out
