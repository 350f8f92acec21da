"""`pylog dump-segment`: print Kafka log files the way kafka-dump-log.sh does."""
from __future__ import annotations

import os
import json
import re
import sys
import struct
from pathlib import Path

import click

from pylog.commands.registry_options import registry_options

from pylog.commands.console import plural
from pylog.commands.options import json_option
from pylog.commands.dump_format import (
    DECODERS,
    TIMESTAMP_TYPE_NAMES,
    Writer,
    codec_name,
    decode_bytes,
    java_bool,
    optional_long,
)
from pylog.storage.scan import DEFAULT_MAX_MESSAGE_SIZE, Damage, scan_log
from pylog.core.errors import DataError
from pylog.core.records.batch import RecordBatch
from pylog.core.records.control import ABORT, COMMIT, CONTROL_TYPE_NAMES
from pylog.core.records.errors import RecordFormatError
from pylog.core.records.header import HEADER_SIZE, parse_header
from pylog.core.records.legacy import LegacyBatch
from pylog.core.records.raft_control import format_raft_control
from pylog.storage.kraft_bootstrap import BOOTSTRAP_CHECKPOINT

RECORD_INDENT = "|"

_KRAFT_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_I16x2 = struct.Struct(">hh")
_MARKER = struct.Struct(">hi")


class Options:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class Problems:
    """Everything kafka-dump-log reports on stderr after the dump, plus our damage count."""

    def __init__(self):
        self.count = 0

    def add(self, n: int = 1) -> None:
        self.count += n


# ---------------------------------------------------------------- .log
_CODEC_TEXT = tuple(codec_name(c) for c in range(8))


def _batch_text(e, h) -> str:
    if e.magic == 2:
        # one f-string over the raw header fields: the BatchHeader properties cost a call each
        base, length, ple, _, crc, attrs, delta, base_ts, max_ts, pid, pepoch, base_seq, count = h
        return (
            f"baseOffset: {base} lastOffset: {base + delta} count: {count} "
            f"baseSequence: {base_seq} lastSequence: {-1 if base_seq == -1 else (base_seq + delta) % 2147483648} "
            f"producerId: {pid} producerEpoch: {pepoch} partitionLeaderEpoch: {ple} "
            f"isTransactional: {'true' if attrs & 0x10 else 'false'} isControl: {'true' if attrs & 0x20 else 'false'} "
            f"deleteHorizonMs: {optional_long(base_ts if attrs & 0x40 else None)} "
            f"position: {e.position} {'LogAppendTime' if attrs & 0x08 else 'CreateTime'}: {max_ts} "
            f"size: {length + 12} magic: 2 compresscodec: {_CODEC_TEXT[attrs & 7]} crc: {crc} "
            f"isvalid: {'true' if e.crc_ok else 'false'}"
        )
    return (
        f"offset: {h.offset} position: {e.position} {TIMESTAMP_TYPE_NAMES[h.timestamp_type]}: {h.timestamp} "
        f"size: {h.size} magic: {h.magic} compresscodec: {codec_name(h.codec)} crc: {h.crc} isvalid: {java_bool(e.crc_ok)}"
    )


def _batch_json(e, h) -> dict:
    if e.magic == 2:
        return {
            "type": "batch", "baseOffset": h.base_offset, "lastOffset": h.last_offset, "count": h.record_count,
            "baseSequence": h.base_sequence, "lastSequence": h.last_sequence, "producerId": h.producer_id,
            "producerEpoch": h.producer_epoch, "partitionLeaderEpoch": h.partition_leader_epoch,
            "isTransactional": h.is_transactional, "isControl": h.is_control,
            "deleteHorizonMs": h.delete_horizon_ms if h.has_delete_horizon else None, "position": e.position,
            "timestampType": TIMESTAMP_TYPE_NAMES[h.timestamp_type], "maxTimestamp": h.max_timestamp, "size": h.size,
            "magic": 2, "compresscodec": codec_name(h.codec), "crc": h.crc, "isvalid": e.crc_ok,
        }
    return {
        "type": "batch", "offset": h.offset, "position": e.position,
        "timestampType": TIMESTAMP_TYPE_NAMES[h.timestamp_type], "maxTimestamp": h.timestamp, "size": h.size,
        "magic": h.magic, "compresscodec": codec_name(h.codec), "crc": h.crc, "isvalid": e.crc_ok,
    }


def _control_text(key: bytes | None, value: bytes | None) -> tuple[str, dict]:
    """Kafka prints end-transaction markers with their coordinator epoch, other control types by name."""
    if key is None or len(key) < 4:
        return " controlType: UNKNOWN(-1)", {"controlType": "UNKNOWN"}
    ctype = _I16x2.unpack_from(key)[1]
    if ctype in (ABORT, COMMIT) and value is not None and len(value) >= 6:
        epoch = _MARKER.unpack_from(value)[1]
        name = CONTROL_TYPE_NAMES[ctype]
        return f" endTxnMarker: {name} coordinatorEpoch: {epoch}", {"endTxnMarker": name, "coordinatorEpoch": epoch}
    name = CONTROL_TYPE_NAMES.get(ctype, "UNKNOWN")
    text = format_raft_control(ctype, value)
    if text is not None:  # KRaft's own control records, as Kafka's JSON
        return text, {"controlType": name, "controlTypeId": ctype, "data": json.loads(text.split(" ", 2)[2])}
    return f" controlType: {name}({ctype})", {"controlType": name, "controlTypeId": ctype}


def _parse_data(o: Options, key, value, offset: int) -> tuple[str | None, str | None]:
    if o.offsets_decoder:
        from pylog.core.records.offsets_records import format_offsets_record

        return format_offsets_record(key, value, offset)
    if o.transaction_log_decoder:
        from pylog.core.records.txn_log_records import format_transaction_log_record

        return format_transaction_log_record(key, value, offset)
    if o.cluster_metadata_decoder:
        from pylog.core.records.metadata_records import format_metadata_record

        return None, format_metadata_record(value, offset)
    return decode_bytes(key, o.key_decoder), decode_bytes(value, o.value_decoder)


def _dump_records(o: Options, w: Writer, e, h, state: dict) -> None:
    """One line (or JSON object) per record of the entry."""
    try:
        if e.magic == 2:
            records = RecordBatch(e.buf, e.buf_pos).records()
        else:
            records = LegacyBatch(e.buf, e.buf_pos).records(verify_inner_crc=False)
    except RecordFormatError as err:
        state["problems"].add()
        msg = f"cannot decode the records of the batch at position {e.position}: {err}"
        w.obj({"type": "error", "position": e.position, "message": msg}) if w.as_json else w.line(f"{RECORD_INDENT} error: {msg}")
        return
    ts_name = TIMESTAMP_TYPE_NAMES[h.timestamp_type]
    v2 = e.magic == 2
    control = v2 and h.is_control
    # kafka-dump-log prints every legacy record's own crc and validity (inner ones of a wrapper too)
    legacy_crcs = None if v2 else LegacyBatch(e.buf, e.buf_pos).record_crcs()
    last = state["last_offset"]
    gaps = state["gaps"]
    if v2 and not control and not w.as_json and not o.print_data_log and not o.skip_record_metadata and records:
        # the common deep-iteration case: one f-string per record, lines added per batch
        first = records[0][0]
        n = len(records)
        if (last == -1 or first == last + 1) and [r[0] for r in records] == list(range(first, first + n)):
            state["last_offset"] = first + n - 1
        else:
            for r in records:
                if last != -1 and r[0] != last + 1:
                    gaps.append((last, r[0]))
                last = r[0]
            state["last_offset"] = last
        base_seq, base_off = h.base_sequence, h.base_offset
        if base_seq >= 0:
            w.extend([
                f"| offset: {off} {ts_name}: {ts} keySize: {-1 if k is None else len(k)} "
                f"valueSize: {-1 if v is None else len(v)} sequence: {(base_seq + off - base_off) & 0x7FFFFFFF} "
                f"headerKeys: [{','.join([x[0] for x in hs]) if hs else ''}]"
                for off, ts, k, v, hs in records])
        else:
            w.extend([
                f"| offset: {off} {ts_name}: {ts} keySize: {-1 if k is None else len(k)} "
                f"valueSize: {-1 if v is None else len(v)} sequence: -1 "
                f"headerKeys: [{','.join([x[0] for x in hs]) if hs else ''}]"
                for off, ts, k, v, hs in records])
        return
    line = w.line
    skip_meta = o.skip_record_metadata
    print_data = o.print_data_log and not control
    base_seq, base_off = (h.base_sequence, h.base_offset) if v2 else (-1, 0)
    for i, r in enumerate(records):
        off = r.offset
        if last != -1 and off != last + 1:
            gaps.append((last, off))
        last = off
        key, value = r.key, r.value
        if w.as_json:
            obj = {"type": "record", "offset": off, "timestampType": ts_name, "timestamp": r.timestamp,
                   "keySize": -1 if key is None else len(key), "valueSize": -1 if value is None else len(value)}
            if v2:
                obj["sequence"] = ((base_seq + off - base_off) & 0x7FFFFFFF) if base_seq >= 0 else -1
                obj["headerKeys"] = [k for k, _ in r.headers]
            if legacy_crcs is not None:
                obj["crc"], obj["isValid"] = legacy_crcs[i]
            if control:
                obj.update(_control_text(key, value)[1])
            if print_data:
                k, p = _parse_data(o, key, value, off)
                obj["key"] = k
                obj["payload"] = p
            w.obj(obj)
            continue
        prefix = RECORD_INDENT + " "
        parts = []
        if not skip_meta:
            parts.append(
                f"{prefix}offset: {off} {ts_name}: {r.timestamp} keySize: {-1 if key is None else len(key)} "
                f"valueSize: {-1 if value is None else len(value)}"
            )
            prefix = " "
            if v2:
                seq = ((base_seq + off - base_off) & 0x7FFFFFFF) if base_seq >= 0 else -1
                parts.append(f" sequence: {seq} headerKeys: [{','.join(k for k, _ in r.headers)}]")
            if legacy_crcs is not None:
                crc, ok = legacy_crcs[i]
                parts.append(f" isValid: {java_bool(ok)} crc: {crc}")
            if control:
                parts.append(_control_text(key, value)[0])
        if print_data:
            k, p = _parse_data(o, key, value, off)
            if k is not None:
                parts.append(f"{prefix}key: {k}")
                prefix = " "
            if p is not None:
                parts.append(f" payload: {p}")
        line("".join(parts))
    state["last_offset"] = last


def dump_log(path: Path, o: Options, w: Writer, problems: Problems) -> None:
    name = path.name
    m = _KRAFT_SNAPSHOT.match(name)
    if name.endswith(".log"):
        start = int(name.split(".")[0]) if name.split(".")[0].isdigit() else 0
        w.obj({"type": "file", "file": str(path), "kind": "log", "logStartOffset": start}) if w.as_json \
            else w.line(f"Log starting offset: {start}")
    elif name == BOOTSTRAP_CHECKPOINT:
        w.obj({"type": "file", "file": str(path), "kind": "kraft-bootstrap-snapshot"}) if w.as_json \
            else w.line("KRaft bootstrap snapshot")
    elif m:
        w.obj({"type": "file", "file": str(path), "kind": "kraft-snapshot", "endOffset": int(m.group(1)),
               "epoch": int(m.group(2))}) if w.as_json \
            else w.line(f"Snapshot end offset: {int(m.group(1))}, epoch: {int(m.group(2))}")
    state = {"last_offset": -1, "gaps": [], "problems": problems}
    deep = o.deep_iteration
    for item in scan_log(path, max_message_size=o.max_message_size, max_bytes=o.max_bytes):
        if isinstance(item, Damage):
            problems.add()
            if item.kind == "truncated":
                text = f"Found {os.path.getsize(path) - item.position} invalid bytes at the end of {name}"
            else:
                text = f"Corrupt data at position {item.position}: {item.message}; skipped {item.skipped} bytes"
            if w.as_json:
                w.obj({"type": "error", "file": str(path), "position": item.position, "kind": item.kind,
                       "message": item.message, "skippedBytes": item.skipped})
            else:
                w.line(text)
            continue
        h = item.header
        if not item.crc_ok:
            problems.add()
        w.obj(_batch_json(item, h)) if w.as_json else w.line(_batch_text(item, h))
        if deep:
            _dump_records(o, w, item, h, state)
    if state["gaps"]:
        w.note(f"Non-consecutive offsets in {path.resolve()}")
        for a, b in state["gaps"]:
            w.note(f"  {a} is followed by {b}")


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


def dump_index(path: Path, o: Options, w: Writer, problems: Problems) -> None:
    from pylog.storage.offset_index import OffsetIndex

    base = _base_offset(path)
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


def _kind(path: Path) -> str | None:
    from pylog.storage.checkpoint import OFFSET_CHECKPOINT_FILES
    from pylog.storage.leader_epoch import LEADER_EPOCH_CHECKPOINT

    name = path.name
    if name.endswith(".log") or _KRAFT_SNAPSHOT.match(name) or name == BOOTSTRAP_CHECKPOINT:
        return "log"
    for suffix, kind in ((".index", "index"), (".timeindex", "timeindex"), (".snapshot", "snapshot"),
                         (".txnindex", "txnindex")):
        if name.endswith(suffix):
            return kind
    if name == LEADER_EPOCH_CHECKPOINT:
        return "leader-epoch"
    if name in OFFSET_CHECKPOINT_FILES:
        return "offset-checkpoint"
    return None


_DUMPERS = {
    "log": dump_log, "index": dump_index, "timeindex": dump_time_index, "snapshot": dump_producer_snapshot,
    "txnindex": dump_txn_index, "leader-epoch": dump_leader_epochs, "offset-checkpoint": dump_offset_checkpoint,
}


@click.command("dump-segment", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--deep-iteration", is_flag=True, help="Print every record, not just the batch headers.")
@click.option("--print-data-log", is_flag=True, help="Print record keys and values (implies --deep-iteration).")
@click.option("--skip-record-metadata", is_flag=True, help="With --print-data-log, print only keys and values.")
@click.option("--key-decoder", type=click.Choice(DECODERS), default="string", show_default=True,
              help="How to print record keys: UTF-8 text (invalid bytes escaped), hex, base64, pretty JSON, or nothing.")
@click.option("--value-decoder", type=click.Choice(DECODERS), default="string", show_default=True,
              help="How to print record values (same choices as --key-decoder; registry: the schema "
                   "registry's wire format as JSON, with --schema-registry).")
@registry_options
@click.option("--offsets-decoder", is_flag=True,
              help="Decode __consumer_offsets records (offset commits, group metadata) as JSON.")
@click.option("--cluster-metadata-decoder", is_flag=True,
              help="Decode KRaft __cluster_metadata records (type, version and fields) as JSON.")
@click.option("--transaction-log-decoder", is_flag=True,
              help="Decode __transaction_state records (transactional id, producer id and epoch, state, "
                   "partitions) as JSON.")
@click.option("--verify-index-only", is_flag=True,
              help="For .index/.timeindex: check entries against the log without printing them.")
@click.option("--index-sanity-check", is_flag=True,
              help="For .index/.timeindex: run only the sanity check that decides whether a broker rebuilds it.")
@click.option("--max-message-size", type=click.IntRange(min=64), default=DEFAULT_MAX_MESSAGE_SIZE, show_default=True,
              help="Largest batch size believed; a larger length field is reported as corruption.")
@click.option("--max-bytes", type=click.IntRange(min=1), default=None,
              help="Dump only the first N bytes of each .log file.")
@json_option
def dump_segment(files, deep_iteration, print_data_log, skip_record_metadata, key_decoder, value_decoder,
                 offsets_decoder, cluster_metadata_decoder, transaction_log_decoder, verify_index_only,
                 index_sanity_check, max_message_size,
                 max_bytes, registry_url, registry_auth, as_json):
    """Print the contents of Kafka log files, as kafka-dump-log.sh does.

    FILES may be segment data (.log, and KRaft snapshots
    <offset>-<epoch>.checkpoint and bootstrap.checkpoint), offset indexes (.index), time indexes
    (.timeindex), producer snapshots (.snapshot), transaction indexes
    (.txnindex), leader-epoch-checkpoint and the offset checkpoint files
    (recovery-point-offset-checkpoint, log-start-offset-checkpoint,
    replication-offset-checkpoint, cleaner-offset-checkpoint).

    Batch lines carry Kafka's field names in Kafka's order (baseOffset,
    lastOffset, count, ..., crc, isvalid); v0/v1 message sets print offset,
    position, timestamp, size, magic, compresscodec, crc and isvalid.
    Files are streamed in chunks: any size works in constant memory. A
    corrupt or truncated batch is reported with its position and the dump
    resumes at the next valid batch.

    Index mismatches, non-consecutive offsets and time-index errors are
    printed on stderr after the dump, as Kafka does. Exit status: 0 when
    everything read cleanly, 1 when damage or index mismatches were found,
    2 on usage errors.

    \b
    Examples:
      pylog dump-segment /var/kafka/t-0/00000000000000000000.log
      pylog dump-segment --print-data-log --value-decoder hex 0000*.log
      pylog dump-segment --offsets-decoder __consumer_offsets-7/*.log
      pylog dump-segment --transaction-log-decoder __transaction_state-3/*.log
      pylog dump-segment --json 00000000000000000000.index | jq .
      pylog dump-segment --value-decoder registry --schema-registry http://127.0.0.1:8081 0000*.log
    """
    if offsets_decoder + cluster_metadata_decoder + transaction_log_decoder > 1:
        raise click.UsageError("--offsets-decoder, --cluster-metadata-decoder and --transaction-log-decoder "
                               "are exclusive")
    decoders_given = (offsets_decoder or cluster_metadata_decoder or transaction_log_decoder
                      or key_decoder != "string" or value_decoder != "string")
    print_data_log = print_data_log or decoders_given
    key_decoder, value_decoder = (_registry_decoder(d, registry_url, registry_auth)
                                  for d in (key_decoder, value_decoder))
    o = Options(
        deep_iteration=deep_iteration or print_data_log, print_data_log=print_data_log,
        skip_record_metadata=skip_record_metadata, key_decoder=key_decoder, value_decoder=value_decoder,
        offsets_decoder=offsets_decoder, cluster_metadata_decoder=cluster_metadata_decoder,
        transaction_log_decoder=transaction_log_decoder,
        verify_index_only=verify_index_only, index_sanity_check=index_sanity_check,
        max_message_size=max_message_size, max_bytes=max_bytes,
    )
    unknown = [name for name in files if _kind(Path(name)) is None]
    if unknown:
        raise DataError(f"{unknown[0]}: not a Kafka log file (expected .log, .index, .timeindex, .snapshot, "
                        ".txnindex, a KRaft .checkpoint, leader-epoch-checkpoint or an offset checkpoint file)"
                        + (f"; and {plural(len(unknown) - 1, 'more such file')}" if len(unknown) > 1 else ""))
    w = Writer(as_json)
    problems = Problems()
    for name in files:
        path = Path(name)
        kind = _kind(path)
        if as_json:
            if kind != "log":
                w.obj({"type": "file", "file": str(path), "kind": kind})
        else:
            w.line(f"Dumping {path}")
        try:
            _DUMPERS[kind](path, o, w, problems)
        except OSError as e:
            w.flush()
            raise DataError(f"{path}: cannot read: {e.strerror or e}") from None
        except ValueError as e:  # content a reader could not make sense of
            w.flush()
            raise DataError(f"{path}: not a valid {kind} file: {e}") from None
    w.flush()
    if problems.count:
        sys.exit(1)  # SystemExit: click's non-standalone mode would swallow ctx.exit(1)


def _registry_decoder(decoder, url, auth):
    """--key/--value-decoder registry: a function bytes -> JSON text (others pass through)."""
    if decoder != "registry":
        return decoder
    from pylog.commands.consume_schema import schema_decoder
    from pylog.commands.registry_options import make_client

    dec = schema_decoder(make_client(url, auth), "auto")
    return lambda data: dec(data, False)
