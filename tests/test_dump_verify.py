"""`pylog dump-segment` and `pylog verify`."""
from __future__ import annotations

import json
import os
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner
from crc32c import crc32c

from pylog.cli.main import cli
from pylog.core.config import TOPIC_CONFIGS
from pylog.core.records import BatchBuilder, LegacyBuilder, build_end_txn_batch
from pylog.core.records.control import COMMIT
from pylog.storage.log import Log
from pylog.storage.producer_state import ProducerStateManager, SnapshotEntry, encode_snapshot
from support.segments import (  # noqa: F401
    CODECS, TS, batch, engine_log, golden_segment, legacy_segment, txn_dir,
)
from support.cli import pylog as _pylog

GOLDEN = Path(__file__).parent / "golden"


def run(*args, input=None):
    return CliRunner().invoke(cli, list(map(str, args)), input=input, catch_exceptions=False)


def check_golden(name: str, text: str, tmp_path: Path) -> None:
    """pylog's output equals the golden, which is Kafka's DumpLogSegments output (tests/golden/regenerate.py)."""
    text = text.replace(str(tmp_path), "<tmp>")
    g = GOLDEN / name
    assert g.exists(), f"{g} missing: run python tests/golden/regenerate.py (Kafka's DumpLogSegments writes it)"
    assert text == g.read_text()


# ---------------------------------------------------------------- dump-segment: .log
def test_dump_batch_level_golden(tmp_path):
    seg = golden_segment(tmp_path / "t-0")
    r = run("dump-segment", seg)
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == f"Dumping {seg}" and lines[1] == "Log starting offset: 0"
    first = lines[2]
    # Kafka's field order, exactly
    keys = [tok[:-1] for tok in first.split() if tok.endswith(":")]
    assert keys == ["baseOffset", "lastOffset", "count", "baseSequence", "lastSequence", "producerId", "producerEpoch",
                    "partitionLeaderEpoch", "isTransactional", "isControl", "deleteHorizonMs", "position", "CreateTime",
                    "size", "magic", "compresscodec", "crc", "isvalid"]
    assert "deleteHorizonMs: OptionalLong.empty" in first and "compresscodec: none" in first
    assert [l.split("compresscodec: ")[1].split()[0] for l in lines[2:7]] == list(CODECS)
    assert "isTransactional: true isControl: true" in lines[9]
    assert "LogAppendTime:" in lines[10]
    check_golden("dump_batches.txt", r.output, tmp_path)


def test_dump_deep_iteration_and_data_golden(tmp_path):
    seg = golden_segment(tmp_path / "t-0")
    r = run("dump-segment", "--deep-iteration", seg)
    assert r.exit_code == 0
    assert "| offset: 0 CreateTime: 1700000000000 keySize: 2 valueSize: 12 sequence: -1 headerKeys: [h1,h2]" in r.output
    assert "| offset: 19 CreateTime: 1700000000005 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] " \
           "endTxnMarker: COMMIT coordinatorEpoch: 7" in r.output
    assert "| offset: 17 CreateTime: 1700000000000 keySize: 2 valueSize: 6 sequence: 0 headerKeys: []" in r.output
    check_golden("dump_deep.txt", r.output, tmp_path)
    r = run("dump-segment", "--print-data-log", seg)
    assert "keySize: -1 valueSize: 5 sequence: -1 headerKeys: [] payload: nokey" in r.output
    assert "keySize: 4 valueSize: -1 sequence: -1 headerKeys: [] key: tomb\n" in r.output
    assert "key: t2 payload: \ufffd\ufffdbin" in r.output  # invalid UTF-8 replaced, as Kafka's StringDecoder does
    check_golden("dump_data.txt", r.output, tmp_path)


@pytest.mark.parametrize("decoder, expected", [
    ("hex", "payload: 76616c75652d6e6f6e652d30"),
    ("base64", "payload: dmFsdWUtbm9uZS0w"),
    ("none", "headerKeys: [h1,h2] key: k0\n"),
])
def test_dump_value_decoders(tmp_path, decoder, expected):
    seg = golden_segment(tmp_path / "t-0")
    r = run("dump-segment", "--value-decoder", decoder, seg)
    assert expected in r.output


def test_dump_json_decoder_and_skip_metadata(tmp_path):
    seg = golden_segment(tmp_path / "t-0")
    r = run("dump-segment", "--value-decoder", "json", "--skip-record-metadata", seg)
    assert '| key: j payload: {\n  "a": [\n    1,\n    2\n  ]\n}' in r.output


def test_dump_json_lines(tmp_path):
    seg = golden_segment(tmp_path / "t-0")
    r = run("dump-segment", "--json", "--print-data-log", seg)
    objs = [json.loads(l) for l in r.output.splitlines()]
    assert objs[0] == {"type": "file", "file": str(seg), "kind": "log", "logStartOffset": 0}
    batches = [o for o in objs if o["type"] == "batch"]
    records = [o for o in objs if o["type"] == "record"]
    assert len(batches) == 9 and len(records) == 21
    assert records[0]["payload"] == "value-none-0" and records[0]["headerKeys"] == ["h1", "h2"]
    assert records[19]["endTxnMarker"] == "COMMIT"


def test_dump_third_party_fixtures(fixtures_dir, tmp_path):
    fixtures = fixtures_dir / "third-party-segments"
    for name, batches, records in (("cluster-metadata-a.log", 2, 3), ("cluster-metadata-b.log", 2, 4)):
        f = fixtures / name
        r = run("dump-segment", "--cluster-metadata-decoder", f)
        assert r.exit_code == 0, r.output
        assert r.output.count("isvalid: true") == batches
        assert r.output.count("| offset:") == records
        assert "Error" not in r.output
        assert '"type":"FEATURE_LEVEL_RECORD","version":0,"data":{"name":"metadata.version","featureLevel":20}' in r.output
        assert '"type":"PARTITION_RECORD"' in r.output and '"type":"TOPIC_RECORD"' in r.output
    a = run("dump-segment", fixtures / "cluster-metadata-a.log").output
    assert "baseOffset: 1 lastOffset: 1 count: 1" in a and "position: 91" in a
    r = run("verify", fixtures / "cluster-metadata-a.log", fixtures / "cluster-metadata-b.log")
    assert r.exit_code == 0, r.output
    assert "CLEAN" in r.output


def test_dump_offsets_decoder(tmp_path):
    key = struct.pack(">h", 1) + struct.pack(">h", 1) + b"g" + struct.pack(">h", 1) + b"t" + struct.pack(">i", 3)
    value = struct.pack(">hqi", 3, 99, 5) + struct.pack(">h", 2) + b"md" + struct.pack(">q", TS)
    gkey = struct.pack(">h", 2) + struct.pack(">h", 1) + b"g"
    gval = (struct.pack(">h", 3) + struct.pack(">h", 8) + b"consumer" + struct.pack(">i", 4) + struct.pack(">h", 5)
            + b"range" + struct.pack(">h", 2) + b"m1" + struct.pack(">q", TS) + struct.pack(">i", 1)
            + struct.pack(">h", 2) + b"m1" + struct.pack(">h", -1) + struct.pack(">h", 1) + b"c"
            + struct.pack(">h", 1) + b"h" + struct.pack(">ii", 300000, 45000) + struct.pack(">i", 1) + b"\x01"
            + struct.pack(">i", 0))
    d = tmp_path / "__consumer_offsets-0"
    d.mkdir()
    seg = d / "00000000000000000000.log"
    seg.write_bytes(batch(0, [(key, value, []), (gkey, gval, []), (key, None, [])]))
    r = run("dump-segment", "--offsets-decoder", seg)
    assert 'key: {"type":"1","data":{"group":"g","topic":"t","partition":3}} payload: ' \
           '{"version":"3","data":{"offset":99,"leaderEpoch":5,"metadata":"md","commitTimestamp":1700000000000}}' in r.output
    assert '"protocolType":"consumer","generation":4,"protocol":"range","leader":"m1"' in r.output
    assert '"memberId":"m1","groupInstanceId":null,"clientId":"c","clientHost":"h"' in r.output
    assert "payload: <DELETE>" in r.output


def test_dump_legacy_message_sets(tmp_path):
    seg = legacy_segment(tmp_path / "old-0")
    r = run("dump-segment", "--print-data-log", seg)
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[2].startswith("offset: 0 position: 0 NoTimestampType: -1 size: ")
    assert "magic: 0 compresscodec: none" in lines[2] and lines[2].endswith("isvalid: true")
    assert "| offset: 0 NoTimestampType: -1 keySize: 1 valueSize: 8 isValid: true crc: " in lines[3]
    assert lines[3].endswith(" key: a payload: v0-plain")
    assert lines[4].startswith("offset: 2 position: ") and "CreateTime: " in lines[4] and "magic: 1 compresscodec: gzip" in lines[4]
    assert lines[5].startswith(f"| offset: 1 CreateTime: {TS} keySize: 1 valueSize: 12 isValid: true crc: ")
    assert lines[5].endswith(" key: b payload: v1-in-gzip-1")
    assert lines[6].endswith(" key: c payload: v1-in-gzip-2")
    check_golden("dump_legacy.txt", r.output, tmp_path)


def test_dump_truncated_and_corrupt_continue(tmp_path):
    seg = golden_segment(tmp_path / "t-0")
    data = bytearray(seg.read_bytes())
    sizes = []
    pos = 0
    while pos < len(data):
        n = struct.unpack_from(">i", data, pos + 8)[0] + 12
        sizes.append((pos, n))
        pos += n
    # wreck the length of batch 2 (hides the boundary), flip a byte of batch 4 (CRC), cut the tail
    p2 = sizes[2][0]
    struct.pack_into(">i", data, p2 + 8, 0x7FFFFFF0)
    p4 = sizes[4][0]
    data[p4 + 70] ^= 0xFF
    data = data[:-10]
    seg.write_bytes(bytes(data))
    r = run("dump-segment", seg)
    assert r.exit_code == 1
    assert f"Corrupt data at position {p2}: batch size 2147483644 above the maximum message size 5242880; " \
           f"skipped {sizes[2][1]} bytes" in r.output
    assert f"position: {sizes[3][0]} " in r.output  # resumed at the next batch
    assert f"position: {p4} " in r.output and "isvalid: false" in r.output
    assert f"Found {sizes[-1][1] - 10} invalid bytes at the end of 00000000000000000000.log" in r.output
    r = run("dump-segment", "--max-message-size", "100", seg)
    assert "above the maximum message size 100" in r.output


def test_dump_streams_in_chunks(tmp_path):
    """A file much larger than the chunk reads correctly with a tiny chunk size."""
    from pylog.storage.scan import Entry, scan_log

    seg = golden_segment(tmp_path / "t-0")
    full = [e.position for e in scan_log(seg)]
    tiny = [e.position for e in scan_log(seg, chunk_size=64) if isinstance(e, Entry)]
    assert tiny == full and len(full) == 9


def test_scan_checks_legacy_message_crcs(tmp_path):
    """A v0/v1 message whose bytes no longer match its CRC-32 is scanned as damaged, in the mapped
    and in the chunked reader alike; with check_crc=False it is not checked."""
    from pylog.storage.scan import Entry, scan_log

    seg = legacy_segment(tmp_path / "old-0")
    data = bytearray(seg.read_bytes())
    assert [e.crc_ok for e in scan_log(seg)] == [True, True]
    data[-1] ^= 0xFF  # the last byte of the gzip wrapper's value
    seg.write_bytes(bytes(data))
    for chunk in (1 << 20, 64):
        entries = [e for e in scan_log(seg, chunk_size=chunk) if isinstance(e, Entry)]
        assert [e.crc_ok for e in entries] == [True, False], chunk
    assert [e.crc_ok for e in scan_log(seg, check_crc=False)] == [True, True]


@pytest.fixture
def clean_dir(tmp_path):
    d = tmp_path / "logs" / "orders-0"
    log = engine_log(d, batches=60, leader_epochs=(0, 2, 5))
    log.take_snapshot()
    log.close()
    return d


def test_dump_index_timeindex_snapshot_epochs(clean_dir):
    idx = sorted(clean_dir.glob("*.index"))
    assert len(idx) > 2
    r = run("dump-segment", *idx[:2], *sorted(clean_dir.glob("*.timeindex"))[:1],
            *clean_dir.glob("*.snapshot"), clean_dir / "leader-epoch-checkpoint")
    assert r.exit_code == 0, r.output
    assert "offset: " in r.output and " position: " in r.output
    assert "timestamp: " in r.output
    assert "producerId: 7 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty" in r.output
    assert "epoch: 0 startOffset: 0" in r.output and "epoch: 5 startOffset: " in r.output
    r = run("dump-segment", "--verify-index-only", idx[0])
    assert r.exit_code == 0 and "offset:" not in r.output
    r = run("dump-segment", "--index-sanity-check", idx[0])
    assert "passed sanity check." in r.output


def test_dump_index_mismatch(clean_dir):
    idx = sorted(clean_dir.glob("*.index"))[0]
    data = bytearray(idx.read_bytes())
    struct.pack_into(">i", data, 0, struct.unpack_from(">i", data, 0)[0] + 1)
    idx.write_bytes(bytes(data))
    r = CliRunner().invoke(cli, ["dump-segment", str(idx)])
    assert r.exit_code == 1
    assert f"Mismatches in :{idx.resolve()}" in r.stderr and "  Index offset: " in r.stderr


def test_dump_txnindex_and_checkpoints(tmp_path):
    from pylog.storage.checkpoint import write_offset_checkpoint
    from pylog.storage.txn_index import AbortedTxn, TransactionIndex

    t = TransactionIndex(tmp_path / "00000000000000000000.txnindex", 0)
    t.append(AbortedTxn(5, 10, 20, 9))
    write_offset_checkpoint(tmp_path / "recovery-point-offset-checkpoint", {("a", 0): 12})
    r = run("dump-segment", tmp_path / "00000000000000000000.txnindex", tmp_path / "recovery-point-offset-checkpoint")
    assert "version: 0 producerId: 5 firstOffset: 10 lastOffset: 20 lastStableOffset: 9" in r.output
    assert "topic: a partition: 0 offset: 12" in r.output


def test_verify_clean_engine_log(clean_dir):
    r = run("verify", clean_dir.parent)
    assert r.exit_code == 0, r.output
    assert "CLEAN" in r.output and "orders-0" in r.output
    j = json.loads(run("verify", "--json", clean_dir).output)
    assert j["verdict"] == "clean" and j["items"][0]["batches"] == 60 and j["items"][0]["records"] == 240


# every problem class: (name, planter) -> expected kind
def _segments(d):
    return sorted(d.glob("*.log"))


def plant_crc(d):
    seg = _segments(d)[0]
    data = bytearray(seg.read_bytes())
    data[100] ^= 1
    seg.write_bytes(bytes(data))


def plant_corrupt(d):
    seg = _segments(d)[0]
    data = bytearray(seg.read_bytes())
    struct.pack_into(">i", data, 8, 3)
    seg.write_bytes(bytes(data))


def plant_torn_tail(d):
    seg = _segments(d)[-1]
    with open(seg, "ab") as f:
        f.write(b"\x00" * 7 + b"\x01" + b"\x00\x00\x01\x00")


def plant_truncated_segment(d):
    seg = _segments(d)[0]
    os.truncate(seg, seg.stat().st_size - 5)


def plant_offset_order(d):
    segs = _segments(d)
    data = bytearray(segs[1].read_bytes())
    struct.pack_into(">q", data, 0, 0)  # second segment's first batch claims offset 0 (CRC excludes it)
    segs[1].write_bytes(bytes(data))


def plant_index(d):
    idx = sorted(d.glob("*.index"))[0]
    data = bytearray(idx.read_bytes())
    struct.pack_into(">i", data, 4, struct.unpack_from(">i", data, 4)[0] + 3)
    idx.write_bytes(bytes(data))


def plant_missing_index(d):
    sorted(d.glob("*.index"))[0].unlink()


def plant_time_index(d):
    t = sorted(d.glob("*.timeindex"))[0]
    data = bytearray(t.read_bytes())
    struct.pack_into(">q", data, 0, 1)
    t.write_bytes(bytes(data))


def plant_snapshot_corrupt(d):
    s = sorted(d.glob("*.snapshot"))[-1]
    s.write_bytes(s.read_bytes()[:-3])


def plant_snapshot_disagrees(d):
    s = sorted(d.glob("*.snapshot"))[-1]
    s.write_bytes(encode_snapshot([SnapshotEntry(7, 0, 3, 3, 3, TS, -1, -1)]))


def plant_leader_epoch(d):
    (d / "leader-epoch-checkpoint").write_text("0\n2\n0 0\n9 3\n")


def plant_checkpoint(d):
    (d.parent / "recovery-point-offset-checkpoint").write_text("0\n2\norders 0 99999\nghost 3 0\n")


def plant_segment_base(d):
    seg = _segments(d)[1]
    base = int(seg.name[:20])
    for suffix in (".log", ".index", ".timeindex"):
        p = seg.with_name(seg.name[:20] + suffix)
        if p.exists():
            p.rename(d / f"{base + 1:020d}{suffix}")


def plant_segment_overlap(d):
    """The second segment's first batch claims the first segment's last offset (file renamed to match)."""
    from pylog.core.records.header import parse_header

    segs = _segments(d)
    first = segs[0].read_bytes()
    pos = last = 0
    while pos < len(first):
        h = parse_header(first, pos)
        last, pos = h.last_offset, pos + h.size
    data = bytearray(segs[1].read_bytes())
    struct.pack_into(">q", data, 0, last)
    stem = segs[1].name[:20]
    for suffix in (".log", ".index", ".timeindex"):
        (d / (stem + suffix)).unlink(missing_ok=True)
    (d / f"{last:020d}.log").write_bytes(bytes(data))


def plant_partition_metadata(d):
    (d / "partition.metadata").write_text("version: 0\n")


def plant_meta_properties(d):
    (d.parent / "meta.properties").write_text("version=banana\n")


PLANTS = [
    (plant_segment_overlap, "segment-overlap"), (plant_partition_metadata, "metadata"),
    (plant_meta_properties, "metadata"),
    (plant_crc, "crc"), (plant_corrupt, "corrupt"), (plant_torn_tail, "torn-tail"),
    (plant_truncated_segment, "truncated-segment"), (plant_offset_order, "offset-order"), (plant_index, "index"),
    (plant_missing_index, "index"), (plant_time_index, "time-index"), (plant_snapshot_corrupt, "snapshot"),
    (plant_snapshot_disagrees, "snapshot"), (plant_leader_epoch, "leader-epoch"), (plant_checkpoint, "checkpoint"),
    (plant_segment_base, "segment-base"),
]


# problems only in files the broker derives from the log: REPAIRABLE, not DAMAGED
# metadata and checkpoint files hold no records: a problem there is never "records lost"
DERIVED_PLANTS = {plant_index, plant_missing_index, plant_time_index, plant_snapshot_corrupt,
                  plant_snapshot_disagrees, plant_leader_epoch, plant_partition_metadata, plant_meta_properties,
                  plant_checkpoint}


@pytest.mark.parametrize("plant, kind", PLANTS, ids=[p.__name__[6:] for p, _ in PLANTS])
def test_verify_reports_planted_problem(clean_dir, plant, kind):
    plant(clean_dir)
    derived = plant in DERIVED_PLANTS
    r = run("verify", "--json", clean_dir.parent)
    assert r.exit_code == (0 if derived else 1), r.output
    j = json.loads(r.output)
    assert j["verdict"] == ("repairable" if derived else "damaged")
    kinds = {p["kind"] for item in j["items"] for p in item["problems"]}
    assert kind in kinds, kinds
    flags = [p["derived"] for item in j["items"] for p in item["problems"]]
    assert all(flags) if derived else not all(flags)
    if derived:  # each derived file is named, in the JSON and the text
        assert j["derived_files"]
    text = run("verify", clean_dir.parent)
    word = "REPAIRABLE" if derived else "DAMAGED"
    assert text.exit_code == (0 if derived else 1) and word in text.output and kind in text.output
    for f in j["derived_files"]:
        assert f in text.output
    assert run("verify", "--strict", clean_dir.parent).exit_code == 1


def test_verify_usage_error_exit_2(tmp_path):
    r = CliRunner().invoke(cli, ["verify", str(tmp_path / "missing")])
    assert r.exit_code == 2


def test_verify_repair(clean_dir):
    plant_torn_tail(clean_dir)
    plant_index(clean_dir)
    r = run("verify", "--repair", clean_dir, input="n\n")
    assert r.exit_code != 0 and "will recover" in r.output
    r = run("verify", "--repair", "--yes", clean_dir)
    assert "bytes after the first damage are dropped" in r.output
    assert r.exit_code == 0, r.output
    assert run("verify", clean_dir).exit_code == 0


# ---------------------------------------------------------------- real subprocess


def test_subprocess_dump_verify_and_errors(clean_dir):
    p = _pylog("dump-segment", "--deep-iteration", _segments(clean_dir)[0])
    assert p.returncode == 0 and "| offset: 0 CreateTime:" in p.stdout
    p = _pylog("verify", "--json", clean_dir.parent)
    assert p.returncode == 0 and json.loads(p.stdout)["verdict"] == "clean"
    plant_crc(clean_dir)
    p = _pylog("verify", clean_dir)
    assert p.returncode == 1 and "DAMAGED" in p.stdout
    p = _pylog("dump-segment", clean_dir / "nope.log")
    assert p.returncode == 2 and "Traceback" not in p.stderr
    p = _pylog("dump-segment", "--help")
    assert p.returncode == 0 and "kafka-dump-log" in p.stdout
    p = _pylog("verify", "--help")
    assert p.returncode == 0 and "--repair" in p.stdout


def plant_stray_deleted(d):
    (d / (_segments(d)[0].name + ".deleted")).write_bytes(b"old data")


def plant_stray_cleaned(d):
    (d / "00000000000000000000.log.cleaned").write_bytes(b"")


def plant_stray_swap(d):
    (d / (_segments(d)[1].name + ".swap")).write_bytes(b"")


STRAYS = [plant_stray_cleaned, plant_stray_swap]


def test_verify_accepts_segments_pending_deletion(clean_dir):
    """A .deleted segment waits out file.delete.delay.ms: normal, not damage."""
    plant_stray_deleted(clean_dir)
    r = run("verify", "--json", clean_dir.parent)
    assert r.exit_code == 0, r.output
    assert not [p for item in json.loads(r.output)["items"] for p in item["problems"]]


@pytest.mark.parametrize("plant", STRAYS, ids=[p.__name__[12:] for p in STRAYS])
def test_verify_reports_stray_files(clean_dir, plant):
    plant(clean_dir)
    r = run("verify", "--json", clean_dir.parent)
    assert r.exit_code == 1, r.output
    problems = [p for item in json.loads(r.output)["items"] for p in item["problems"]]
    assert [p["kind"] for p in problems] == ["stray-file"]
    suffix = plant.__name__[12:]
    assert problems[0]["file"].endswith("." + suffix) and "interrupted" in problems[0]["message"]
    text = run("verify", clean_dir)
    assert text.exit_code == 1 and "stray-file" in text.output
    # recovery resolves them: a repaired folder verifies clean
    assert run("verify", "--repair", "--yes", clean_dir).exit_code == 0
    assert not [p for p in clean_dir.iterdir() if p.name.endswith("." + suffix)]


def _write_txn_index(d, *entries):
    from pylog.storage.txn_index import AbortedTxn, TransactionIndex

    p = d / "00000000000000000000.txnindex"
    p.unlink(missing_ok=True)
    t = TransactionIndex(p, 0)
    for e in entries:
        t.append(AbortedTxn(*e))


def _txn_problems(d):
    r = run("verify", "--json", d)
    return r.exit_code, [p["message"] for item in json.loads(r.output)["items"] for p in item["problems"]
                         if p["kind"] == "txn-index"]


def test_verify_txn_index_matches_abort_markers(txn_dir):
    _write_txn_index(txn_dir, (42, 0, 3, 2))
    assert _txn_problems(txn_dir) == (0, [])
    r = run("dump-segment", txn_dir / "00000000000000000000.txnindex")
    assert "version: 0 producerId: 42 firstOffset: 0 lastOffset: 3 lastStableOffset: 2" in r.output
    assert run("verify", txn_dir / "00000000000000000000.txnindex").exit_code == 0


@pytest.mark.parametrize("entries, message", [
    ((), "missing, but 00000000000000000000.log holds 1 ABORT marker(s) (the first: producer 42 at offset 3)"),
    (((42, 0, 3, 4),), "last stable offset 4, the log gives 2"),
    (((42, 1, 3, 2),), "the index says it starts at 1, the log at 0"),
    (((42, 0, 3, 2), (43, 2, 4, 5)), "producer 43 (offsets 2..4) has no ABORT marker at offset 4"),
    (((41, 0, 3, 2),), "the ABORT marker of producer 42 at offset 3 is missing from the index"),
])
def test_verify_reports_txn_index_problems(txn_dir, entries, message):
    _write_txn_index(txn_dir, *entries)  # no entries: no file at all, as Kafka leaves a segment without aborts
    code, messages = _txn_problems(txn_dir)
    assert code == 0 and any(message in m for m in messages), messages  # a derived file: REPAIRABLE
    assert run("verify", "--strict", txn_dir).exit_code == 1
    assert "txn-index" in run("verify", txn_dir).output


def test_verify_reports_unreadable_txn_index(txn_dir):
    (txn_dir / "00000000000000000000.txnindex").write_bytes(b"\x00" * 10)
    code, messages = _txn_problems(txn_dir)
    assert code == 0 and any("not a multiple of 34" in m for m in messages)


def test_storage_recovery_rebuilds_txn_index(txn_dir):
    """Recovery writes each ABORT marker's entry (as Kafka's segment recovery does), and a .txnindex that
    does not parse is rebuilt instead of making the partition unloadable."""
    from pylog.storage.txn_index import AbortedTxn, TransactionIndex

    path = txn_dir / "00000000000000000000.txnindex"
    assert TransactionIndex(path, 0).read_all() == [AbortedTxn(42, 0, 3, 2)]
    assert _txn_problems(txn_dir) == (0, [])
    path.write_bytes(b"\x00" * 10)
    log = Log(txn_dir, TOPIC_CONFIGS.resolve({}), fsync=False)  # a clean shutdown: the sanity check catches it
    assert any("not a multiple of 34" in w for w in log.warnings)
    assert log.log_end_offset == 6
    log.close()
    assert TransactionIndex(path, 0).read_all() == [AbortedTxn(42, 0, 3, 2)]
