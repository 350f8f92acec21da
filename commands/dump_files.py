"""kafka-dump-log's view of the files beside a segment: offset and time indexes (checked against
their .log), producer snapshots, transaction indexes, leader-epoch and offset checkpoints."""
from __future__ import annotations

import os
import struct
from pathlib import Path

from pylog.commands.dump_format import Writer, optional_long
from pylog.core.errors import DataError
from pylog.core.records.errors import RecordFormatError
from pylog.core.records.header import HEADER_SIZE, parse_header
from pylog.commands.dump_log import Options, Problems


# ---------------------------------------------------------------- indexes
def _log_header_at(fd: int, position: int):
    if position < 0:  # a damaged index entry: nothing of the log is there
        return None
    raw = os.pread(fd, HEADER_SIZE, position)
    if len(raw) < 17:
        return None
    if raw[16] == 2 and len(raw) == HEADER_SIZE:
        return parse_header(raw, 0)
    if raw[16] in (0, 1):
        from pylog.core.records.legacy import read_legacy_header

        size = struct.unpack_from(">i", raw, 8)[0] + 12
        if size <= 12:
            return None
        try:
            return read_legacy_header(os.pread(fd, size, position), 0)
        except RecordFormatError:
            return None
    return None


def _base_offset(path: Path) -> int:
    """The base offset a segment file's name carries (00000000000000000042.index -> 42)."""
    stem = path.name.split(".")[0]
    if not stem.isdigit():
        raise DataError(f"{path}: not a Kafka segment file name (expected the base offset in 20 digits, "
                        f"like 00000000000000000000{path.suffix})")
    return int(stem)


def _open_log(path: Path):
    log = path.with_name(path.name.split(".")[0] + ".log")
    try:
        return os.open(log, os.O_RDONLY)
    except FileNotFoundError:
        return None


def _require_segment(path: Path, entries, position_of=None) -> None:
    """Kafka's tool refuses an index it cannot read against its segment: one DataError naming
    the file and what is wrong (no .log beside it, offsets below the base offset or not
    increasing, negative positions)."""
    base = _base_offset(path)
    log = path.with_name(path.name.split(".")[0] + ".log")
    if not log.exists():
        raise DataError(f"{path}: no log segment {log.name} beside it")
    prev = None
    for offset, position in entries:
        if offset < base:
            raise DataError(f"{path}: offset {offset} is below the base offset {base}")
        if prev is not None and offset <= prev and not (offset == base and position in (0, None)):
            raise DataError(f"{path}: offsets are not increasing ({offset} after {prev})")
        if position is not None and position < 0:
            raise DataError(f"{path}: negative position {position} for offset {offset}")
        prev = offset


def dump_index(path: Path, o: Options, w: Writer, problems: Problems) -> None:
    from pylog.storage.offset_index import OffsetIndex

    base = _base_offset(path)
    probe = OffsetIndex(path, base, max(os.path.getsize(path), 8), writable=False)
    try:
        _require_segment(path, [probe.entry(i) for i in range(probe.entries)])
    finally:
        probe.close()
    index = OffsetIndex(path, base, max(os.path.getsize(path), 8), writable=False)
    fd = _open_log(path)
    try:
        if index.entries == 0:
            w.line(f"{path} is empty.") if not w.as_json else w.obj({"type": "index", "file": str(path), "entries": 0})
            return
        if o.index_sanity_check:
            log_size = os.fstat(fd).st_size if fd is not None else None
            try:
                index.sanity_check(log_size)
            except DataError as e:
                problems.add()
                w.line(f"{path} failed sanity check: {e}") if not w.as_json else w.obj(
                    {"type": "sanity_check", "file": str(path), "passed": False, "message": str(e)})
                return
            w.line(f"{path} passed sanity check.") if not w.as_json else w.obj(
                {"type": "sanity_check", "file": str(path), "passed": True})
            return
        mismatches = []
        for i in range(index.entries):
            offset, position = index.entry(i)
            # a preallocated index left by a crash ends in zero entries
            if offset == base and i > 0:
                break
            if fd is not None:
                h = _log_header_at(fd, position)
                found = h.last_offset if h is not None else -1
                if found != offset:
                    mismatches.append((offset, found))
            if not o.verify_index_only:
                w.obj({"type": "index_entry", "offset": offset, "position": position}) if w.as_json \
                    else w.line(f"offset: {offset} position: {position}")
        if mismatches:
            problems.add(len(mismatches))
            if w.as_json:
                for a, b in mismatches:
                    w.obj({"type": "index_mismatch", "file": str(path), "indexOffset": a, "logOffset": b})
            w.note(f"Mismatches in :{path.resolve()}")
            for a, b in mismatches:
                w.note(f"  Index offset: {a}, log offset: {b}")
    finally:
        index.close()
        if fd is not None:
            os.close(fd)


def dump_time_index(path: Path, o: Options, w: Writer, problems: Problems) -> None:
    from pylog.storage.offset_index import OffsetIndex
    from pylog.storage.time_index import TimeIndex

    base = _base_offset(path)
    tindex = TimeIndex(path, base, max(os.path.getsize(path), 12), writable=False)
    try:
        _require_segment(path, [(off, None) for _, off in (tindex.entry(i) for i in range(tindex.entries))])
    except DataError:
        tindex.close()
        raise
    ipath = path.with_name(path.name.split(".")[0] + ".index")
    oindex = OffsetIndex(ipath, base, max(os.path.getsize(ipath), 8), writable=False) if ipath.exists() else None
    fd = _open_log(path)
    mismatch, out_of_order, not_found = [], [], []
    try:
        if o.index_sanity_check:
            try:
                tindex.sanity_check()
            except DataError as e:
                problems.add()
                w.line(f"{path} failed sanity check: {e}")
                return
            w.line(f"{path} passed sanity check.")
            return
        prev_ts = -1
        log_size = os.fstat(fd).st_size if fd is not None else 0
        for i in range(tindex.entries):
            ts, offset = tindex.entry(i)
            if offset == base and i > 0:
                break
            if fd is not None:
                pos = oindex.lookup(offset)[1] if oindex is not None and oindex.entries else 0
                found = None
                while pos < log_size:
                    h = _log_header_at(fd, pos)
                    if h is None:
                        break
                    if h.last_offset >= offset:
                        found = h
                        break
                    pos += h.size
                if found is None:
                    not_found.append((offset, -1))
                elif found.last_offset != offset:
                    not_found.append((offset, found.last_offset))
                else:
                    log_ts = found.max_timestamp if hasattr(found, "max_timestamp") else found.timestamp
                    if log_ts != ts:
                        mismatch.append((ts, log_ts))
                    if prev_ts >= ts:
                        out_of_order.append((ts, prev_ts))
            if not o.verify_index_only:
                w.obj({"type": "time_index_entry", "timestamp": ts, "offset": offset}) if w.as_json \
                    else w.line(f"timestamp: {ts} offset: {offset}")
            prev_ts = ts
    finally:
        tindex.close()
        if oindex is not None:
            oindex.close()
        if fd is not None:
            os.close(fd)
    problems.add(len(mismatch) + len(out_of_order) + len(not_found))
    full = path.resolve()
    if mismatch:
        w.note(f"Found timestamp mismatch in :{full}")
        for a, b in mismatch:
            w.note(f"  Index timestamp: {a}, log timestamp: {b}")
    if out_of_order:
        w.note(f"Found out of order timestamp in :{full}")
        for a, b in out_of_order:
            w.note(f"  Index timestamp: {a}, Previously indexed timestamp: {b}")
    if not_found:
        w.note("The following indexed offsets are not found in the log.")
        for a, b in not_found:
            w.note(f"Indexed offset: {a}, found log offset: {b}")


# ---------------------------------------------------------------- small files
def dump_producer_snapshot(path: Path, o: Options, w: Writer, problems: Problems) -> None:
    from pylog.storage.producer_state import CorruptSnapshotError, decrement_sequence, read_snapshot

    try:
        entries = read_snapshot(path)
    except CorruptSnapshotError as e:
        problems.add()
        w.note(str(e))
        return
    for e in entries:
        txn = e.current_txn_first_offset if e.current_txn_first_offset >= 0 else None
        has_batch = e.last_offset >= 0
        first_seq = decrement_sequence(e.last_sequence, e.offset_delta) if has_batch else None
        if w.as_json:
            obj = {"type": "producer_snapshot_entry", "producerId": e.producer_id, "producerEpoch": e.producer_epoch,
                   "coordinatorEpoch": e.coordinator_epoch, "currentTxnFirstOffset": txn, "lastTimestamp": e.timestamp}
            if has_batch:
                obj.update(firstSequence=first_seq, lastSequence=e.last_sequence, lastOffset=e.last_offset,
                           offsetDelta=e.offset_delta, timestamp=e.timestamp)
            w.obj(obj)
            continue
        text = (f"producerId: {e.producer_id} producerEpoch: {e.producer_epoch} coordinatorEpoch: {e.coordinator_epoch} "
                f"currentTxnFirstOffset: {optional_long(txn)} lastTimestamp: {e.timestamp}")
        if has_batch:
            text += (f" firstSequence: {first_seq} lastSequence: {e.last_sequence} lastOffset: {e.last_offset} "
                     f"offsetDelta: {e.offset_delta} timestamp: {e.timestamp}")
        w.line(text)


def dump_txn_index(path: Path, o: Options, w: Writer, problems: Problems) -> None:
    from pylog.storage.txn_index import TransactionIndex

    base = _base_offset(path)
    try:
        entries = TransactionIndex(path, base).read_all()
    except DataError as e:
        problems.add()
        w.note(str(e))
        return
    for t in entries:
        w.obj({"type": "aborted_txn", "version": 0, "producerId": t.producer_id, "firstOffset": t.first_offset,
               "lastOffset": t.last_offset, "lastStableOffset": t.last_stable_offset}) if w.as_json else w.line(
            f"version: 0 producerId: {t.producer_id} firstOffset: {t.first_offset} "
            f"lastOffset: {t.last_offset} lastStableOffset: {t.last_stable_offset}")


def dump_leader_epochs(path: Path, o: Options, w: Writer, problems: Problems) -> None:
    from pylog.storage.leader_epoch import read_leader_epoch_checkpoint

    for e in read_leader_epoch_checkpoint(path):
        w.obj({"type": "epoch_entry", "epoch": e.epoch, "startOffset": e.start_offset}) if w.as_json \
            else w.line(f"epoch: {e.epoch} startOffset: {e.start_offset}")


def dump_offset_checkpoint(path: Path, o: Options, w: Writer, problems: Problems) -> None:
    from pylog.storage.checkpoint import read_offset_checkpoint

    for (topic, partition), offset in sorted(read_offset_checkpoint(path).items()):
        w.obj({"type": "checkpoint_entry", "topic": topic, "partition": partition, "offset": offset}) if w.as_json \
            else w.line(f"topic: {topic} partition: {partition} offset: {offset}")
