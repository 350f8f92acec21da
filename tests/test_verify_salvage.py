"""`pylog verify --repair --salvage`: only unreadable batches go, every later record keeps its offset.

Damage is planted in an old segment and in the active one, in compressed and in transactional
batches; the exact offset ranges lost are checked (text and JSON), the repaired folder verifies
CLEAN, the storage engine loads it without cutting at the gap, Kafka's DumpLogSegments reads it,
and a librdkafka consumer reads every kept record at its offset from a broker serving it.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner
from confluent_kafka import Consumer, TopicPartition

from support.broker_fixtures import BrokerProcess
from pylog.cli.main import cli
from pylog.core.config import TOPIC_CONFIGS
from pylog.core.records import RecordBatch
from pylog.storage.log import Log
from pylog.storage.scan import Entry, scan_log
from support.segments import engine_log, txn_dir  # noqa: F401 - txn_dir is a fixture
from support.cli import pylog

DUMP = "org.apache.kafka.tools.DumpLogSegments"


def run(*args, input=None):
    return CliRunner().invoke(cli, list(map(str, args)), input=input, catch_exceptions=False)


def batches(d: Path) -> list[tuple[Path, int, int, int, int]]:
    """(log file, position, size, base offset, last offset) of every batch of a partition folder."""
    out = []
    for f in sorted(d.glob("*.log")):
        for e in scan_log(f):
            assert isinstance(e, Entry) and e.crc_ok
            out.append((f, e.position, e.header.size, e.header.base_offset, e.header.last_offset))
    return out


def records(d: Path) -> dict[int, tuple[bytes, bytes]]:
    """offset -> (key, value) of every data record in the folder (compressed batches decoded)."""
    out = {}
    for f in sorted(d.glob("*.log")):
        for e in scan_log(f):
            assert isinstance(e, Entry) and e.crc_ok, f"{f}: {e}"
            b = RecordBatch(bytes(e.buf[e.buf_pos:e.buf_pos + e.header.size]))
            if not e.header.is_control:
                for r in b.records():
                    out[r.offset] = (r.key, r.value)
    return out


def damage(path: Path, position: int, size: int) -> None:
    """Flip a byte inside the batch (past its header, so only the CRC notices)."""
    data = bytearray(path.read_bytes())
    data[position + size - 3] ^= 0x5A
    path.write_bytes(bytes(data))


def salvage(d: Path) -> tuple[dict, str]:
    r = run("verify", "--repair", "--salvage", "--yes", "--json", d)
    assert r.exit_code == 0, r.output
    doc = json.loads(r.output.splitlines()[-1])
    text = run("verify", d)
    assert text.exit_code == 0 and "CLEAN" in text.output, text.output
    return doc, r.output


def test_salvage_old_and_active_segments_keeps_later_offsets(tmp_path):
    d = tmp_path / "logs" / "orders-0"
    engine_log(d, batches=60, leader_epochs=(0, 2, 5)).close()  # 4 records a batch, every codec in turn
    before = records(d)
    all_batches = batches(d)
    segs = sorted(d.glob("*.log"))
    assert len(segs) >= 3
    old = [b for b in all_batches if b[0] == segs[0]][3]  # a batch in the middle of the first (old) segment
    active = [b for b in all_batches if b[0] == segs[-1]][1]  # one in the middle of the active segment
    old2 = [b for b in all_batches if b[0] == segs[0]][4]  # and the one right after the first: one range
    for f, pos, size, _, _ in (old, old2, active):
        damage(f, pos, size)
    r = run("verify", "--json", d)
    assert r.exit_code == 1 and json.loads(r.output)["verdict"] == "damaged"
    copy = tmp_path / "copy" / "orders-0"
    shutil.copytree(d, copy)
    out = run("verify", "--repair", "--salvage", "--yes", copy).output  # the text form of the report

    doc, _ = salvage(d)
    (plan,) = doc["salvaged"]
    assert [(x["first"], x["last"]) for x in plan["lost"]] == [(old[3], old2[4]), (active[3], active[4])]
    assert [len(x["removed"]) for x in plan["lost"]] == [2, 1]
    assert plan["removed_bytes"] == old[2] + old2[2] + active[2]
    assert plan["rewritten"] == [segs[0].name, segs[-1].name]
    assert f"lost: offsets {old[3]}..{old2[4]}" in out and f"lost: offsets {active[3]}..{active[4]}" in out
    assert doc["verdict"] == "clean"

    lost = set(range(old[3], old2[4] + 1)) | set(range(active[3], active[4] + 1))
    assert records(d) == {o: kv for o, kv in before.items() if o not in lost}
    # the storage engine loads the gapped log as it is, even after an unclean shutdown
    log = Log(d, TOPIC_CONFIGS.resolve({}), had_clean_shutdown=False, fsync=False)
    try:
        assert log.log_end_offset == max(before) + 1 and not log.warnings
    finally:
        log.close()
    assert records(d) == {o: kv for o, kv in before.items() if o not in lost}


def test_salvage_torn_tail_reports_loss_to_the_log_end(tmp_path):
    d = tmp_path / "logs" / "orders-0"
    engine_log(d, batches=20).close()
    last = batches(d)[-1]
    with open(last[0], "r+b") as f:
        f.truncate(last[1] + last[2] - 10)
    plan = json.loads(run("verify", "--repair", "--salvage", "--yes", "--json", d).output)["salvaged"][0]
    assert [(x["first"], x["last"]) for x in plan["lost"]] == [(last[3], None)]
    (tmp_path / "logs" / "orders-0").rename(tmp_path / "logs" / "done-0")
    d = tmp_path / "logs" / "orders-0"
    engine_log(d, batches=20).close()
    with open(last[0], "r+b") as f:
        f.truncate(last[1] + last[2] - 10)
    out = run("verify", "--repair", "--salvage", "--yes", d, input="").output
    assert f"offsets {last[3]}.. (to the log end)" in out
    doc = json.loads(run("verify", "--json", d).output)
    assert doc["verdict"] == "clean"
    assert max(records(d)) == last[3] - 1


def test_salvage_transactional_batch(txn_dir):  # noqa: F811 - the fixture
    """Producer 43's transactional batch (offset 2) is unreadable: only it goes; producer 42's aborted
    transaction keeps its .txnindex entry, and the markers and later records stay at their offsets."""
    from pylog.storage.txn_index import AbortedTxn, TransactionIndex

    seg = txn_dir / "00000000000000000000.log"
    b = [x for x in batches(txn_dir) if x[3] == 2][0]
    damage(seg, b[1], b[2])
    doc, _ = salvage(txn_dir)
    assert [(x["first"], x["last"]) for x in doc["salvaged"][0]["lost"]] == [(2, 2)]
    assert sorted(records(txn_dir)) == [0, 1, 5]
    assert [x[3] for x in batches(txn_dir)] == [0, 3, 4, 5]
    assert TransactionIndex(txn_dir / "00000000000000000000.txnindex", 0).read_all()[0][:3] == AbortedTxn(42, 0, 3, 2)[:3]


def test_salvage_without_repair_is_a_usage_error(tmp_path):
    d = tmp_path / "logs" / "orders-0"
    engine_log(d, batches=2).close()
    r = pylog("verify", "--salvage", d, timeout=60)
    assert r.returncode == 2 and "--salvage goes with --repair" in r.stderr and "Traceback" not in r.stderr


def test_salvaged_log_is_read_by_kafka_tools_and_a_consumer(tmp_path):
    from support.kafka_peer import run_main

    d = tmp_path / "logs" / "orders-0"
    engine_log(d, batches=40, leader_epochs=(0, 2)).close()
    before = records(d)
    all_batches = batches(d)
    segs = sorted(d.glob("*.log"))
    hit = [[b for b in all_batches if b[0] == segs[0]][2], [b for b in all_batches if b[0] == segs[-1]][0]]
    for f, pos, size, _, _ in hit:
        damage(f, pos, size)
    salvage(d)
    lost = {o for b in hit for o in range(b[3], b[4] + 1)}
    want = {o: kv for o, kv in before.items() if o not in lost}

    dump = run_main(DUMP, "--deep-iteration", "--print-data-log", "--files",
                    ",".join(str(p) for p in sorted(d.glob("*.log"))), check=True).stdout
    dumped = {int(line.split()[2]) for line in dump.splitlines() if line.startswith("| offset: ")}
    assert dumped == set(want), sorted(set(want) ^ dumped)[:10]

    b = BrokerProcess(d.parent).start()
    try:
        c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "salvage-reader", "enable.auto.commit": False,
                      "enable.partition.eof": True})
        c.assign([TopicPartition("orders", 0, 0)])
        got = {}
        for _ in range(240):
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                break
            got[m.offset()] = (m.key(), m.value())
        c.close()
        assert got == want
    finally:
        assert b.stop() == 0, b.stderr()
