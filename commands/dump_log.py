"""kafka-dump-log's view of a .log file (and KRaft snapshots): batch lines, records, control and
data decoders, and the damage and offset gaps found while reading."""
from __future__ import annotations

import os
import json
import re
import struct
from pathlib import Path

from pylog.commands.dump_format import TIMESTAMP_TYPE_NAMES, Writer, codec_name, decode_bytes, java_bool, optional_long
from pylog.storage.scan import Damage, scan_log
from pylog.core.records.batch import RecordBatch
from pylog.core.records.control import ABORT, COMMIT, CONTROL_TYPE_NAMES
from pylog.core.records.errors import RecordFormatError
from pylog.core.records.legacy import LegacyBatch
from pylog.core.records.raft_control import format_raft_control
from pylog.storage.kraft_bootstrap import BOOTSTRAP_CHECKPOINT


RECORD_INDENT = "|"

KRAFT_SNAPSHOT = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
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
    m = KRAFT_SNAPSHOT.match(name)
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
