"""`pylog compact`: offline cleaning of a log dir or partition folder."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time

from support.cleaner_support import append, read_records
from pylog.core.config import BROKER_CONFIGS
from pylog.storage.lock import DirLock
from pylog.storage.log_manager import LogManager
from support.cli import pylog


def make_dir(tmp_path):
    lm = LogManager([str(tmp_path)], BROKER_CONFIGS.resolve({"log.dirs": str(tmp_path), "log.cleaner.enable": "false"}))
    lm.startup()
    lm.create_topic("users", 1, {"cleanup.policy": "compact", "segment.bytes": "1500"})
    lm.create_topic("plain", 1, {"segment.bytes": "1500"})
    now = int(time.time() * 1000)
    for name in ("users", "plain"):
        lg = lm.get_log(name, 0)
        for i in range(60):
            append(lg, [(b"user-%d" % (i % 6), None if i % 13 == 0 else b"profile-%d" % i)], ts=now)
    lm.shutdown()


def records(tmp_path, name):
    from pylog.storage.log import Log
    from pylog.core.config import TOPIC_CONFIGS
    lg = Log(tmp_path / name, TOPIC_CONFIGS.resolve({"cleanup.policy": "compact"}), fsync=False)
    try:
        return read_records(lg)
    finally:
        lg.close()


def test_compact_dry_run_then_real(tmp_path):
    make_dir(tmp_path)
    before = records(tmp_path, "users-0")
    r = pylog("compact", str(tmp_path), "--dry-run", "--json")
    assert r.returncode == 0, r.stderr
    dry = json.loads(r.stdout)
    assert records(tmp_path, "users-0") == before  # nothing written
    parts = {p["topic"]: p for p in dry["partitions"]}
    assert parts["plain"]["cleaned"] is False and "cleanup.policy" in parts["plain"]["reason"]
    assert parts["users"]["records_removed"] > 0

    r = pylog("compact", str(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    real = json.loads(r.stdout)
    u = {p["topic"]: p for p in real["partitions"]}["users"]
    for k in ("records_read", "records_written", "bytes_read", "bytes_written", "tombstones_removed"):
        assert u[k] == parts["users"][k], k  # the dry run predicted it exactly
    after = records(tmp_path, "users-0")
    assert len(after) == len(before) - u["records_removed"]
    assert pylog("verify", str(tmp_path)).returncode == 0
    cp = (tmp_path / "cleaner-offset-checkpoint").read_text().split("\n")
    assert f"users 0 {u['end_offset']}" in cp


def test_compact_partition_folder_with_overrides_and_table(tmp_path):
    make_dir(tmp_path)
    r = pylog("compact", str(tmp_path / "plain-0"), "--set", "cleanup.policy=compact", "--set", "delete.retention.ms=0")
    assert r.returncode == 0, r.stderr
    assert "plain-0" in r.stdout and "compacted" in r.stdout
    recs = records(tmp_path, "plain-0")
    active_base = max(int(p.name[:20]) for p in (tmp_path / "plain-0").glob("*.log"))
    assert all(v is not None for off, _, v in recs if off < active_base)  # tombstones gone at once
    assert pylog("verify", str(tmp_path / "plain-0")).returncode == 0


def test_compact_refuses_a_locked_dir_and_bad_input(tmp_path):
    make_dir(tmp_path)
    with DirLock(tmp_path):
        r = pylog("compact", str(tmp_path))
    assert r.returncode == 1 and "locked" in r.stderr and "Traceback" not in r.stderr
    r = pylog("compact", str(tmp_path), "--set", "nonsense=1")
    assert r.returncode == 2 and "not a topic config" in r.stderr
    r = pylog("compact", str(tmp_path), "--buffer-size", "lots")
    assert r.returncode == 2
    r = pylog("compact", "--help")
    assert r.returncode == 0 and "--dry-run" in r.stdout and "delete.retention.ms" in r.stdout


def _why(tmp_path, *sets) -> dict[str, dict]:
    args = [a for s in sets for a in ("--set", s)]
    r = pylog("compact", str(tmp_path), "--dry-run", "--json", *args)
    assert r.returncode == 0, r.stderr
    return {f"{p['topic']}-{p['partition']}": p for p in json.loads(r.stdout)["partitions"]}


def test_compact_dry_run_says_why_per_partition(tmp_path):
    make_dir(tmp_path)
    lm = LogManager([str(tmp_path)], BROKER_CONFIGS.resolve({"log.dirs": str(tmp_path), "log.cleaner.enable": "false"}))
    lm.startup()
    lm.create_topic("small", 1, {"cleanup.policy": "compact"})
    append(lm.get_log("small", 0), [(b"k", b"v")], ts=int(time.time() * 1000))
    lm.shutdown()

    p = _why(tmp_path)
    assert (p["users-0"]["would_clean_now"], p["users-0"]["why"]) == (True, "dirty-ratio")
    assert p["users-0"]["dirty_ratio"] == 1.0 and p["users-0"]["clean_bytes"] == 0
    assert (p["plain-0"]["would_clean_now"], p["plain-0"]["why"]) == (False, "not-compacted")
    assert (p["small-0"]["would_clean_now"], p["small-0"]["why"]) == (False, "only-active-segment")
    text = subprocess.run([sys.executable, "-m", "pylog.cli.main", "compact", str(tmp_path), "--dry-run"],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "COLUMNS": "250"})
    assert "dirty ratio 1.000 >= min.cleanable.dirty.ratio 0.5" in text.stdout
    assert "only the active segment" in text.stdout and "does not include compact" in text.stdout

    # the records were written just now: a day of min.compaction.lag.ms holds all of them back
    u = _why(tmp_path, "min.compaction.lag.ms=86400000")["users-0"]
    assert (u["would_clean_now"], u["why"]) == (False, "min-compaction-lag") and "younger than" in u["why_text"]
    # max.compaction.lag.ms overdue: cleaned whatever the ratio
    u = _why(tmp_path, "max.compaction.lag.ms=1", "min.cleanable.dirty.ratio=1")["users-0"]
    assert (u["would_clean_now"], u["why"]) == (True, "max-compaction-lag")

    assert pylog("compact", str(tmp_path)).returncode == 0
    u = _why(tmp_path)["users-0"]
    assert (u["would_clean_now"], u["why"]) == (False, "nothing-to-clean")
    lm = LogManager([str(tmp_path)], BROKER_CONFIGS.resolve({"log.dirs": str(tmp_path), "log.cleaner.enable": "false"}))
    lm.startup()
    lg = lm.get_log("users", 0)
    for i in range(12):  # rolls a new segment: a little dirty data after the cleaned part
        append(lg, [(b"user-%d" % (i % 6), b"again-%d" % i)], ts=int(time.time() * 1000))
    lm.shutdown()
    u = _why(tmp_path, "min.cleanable.dirty.ratio=0.99")["users-0"]
    assert u["why"] == "dirty-ratio" and 0 < u["dirty_ratio"] < 0.99 and u["would_clean_now"] is False
    assert "below min.cleanable.dirty.ratio 0.99" in u["why_text"]
    u = _why(tmp_path, f"min.cleanable.dirty.ratio={u['dirty_ratio'] / 2:.4f}")["users-0"]
    assert (u["would_clean_now"], u["why"]) == (True, "dirty-ratio")


def test_compact_dry_run_predicts_transactional_cleaning(tmp_path):
    """Aborted records and transaction markers: the dry run's figures are the cleaning's."""
    from pylog.core.records import BatchBuilder
    from pylog.core.records.control import ABORT, COMMIT, build_end_txn_batch

    lm = LogManager([str(tmp_path)], BROKER_CONFIGS.resolve({"log.dirs": str(tmp_path), "log.cleaner.enable": "false"}))
    lm.startup()
    lm.create_topic("tx", 1, {"cleanup.policy": "compact", "segment.bytes": "700", "delete.retention.ms": "0"})
    lg = lm.get_log("tx", 0)
    # an hour old: a marker kept with a delete horizon (cleaning time + 0) has its timestamp delta
    # re-encoded against it, and the delta's varint length must not depend on the seconds
    # between the dry run and the cleaning
    now = int(time.time() * 1000) - 3_600_000
    for i in range(24):
        pid = 100 + i % 3
        b = BatchBuilder(producer_id=pid, producer_epoch=0, base_sequence=i // 3, is_transactional=True)
        b.append(now, b"k%d" % (i % 5), b"v%d" % i)
        lg.append_internal(bytearray(b.build()), 0, now_ms=now)
        kind = ABORT if i % 4 == 1 else COMMIT
        lg.append_internal(bytearray(build_end_txn_batch(kind, pid, 0, 0, timestamp=now)), 0, now_ms=now)
    append(lg, [(b"tail", b"t")], ts=now)
    lm.shutdown()
    before = records(tmp_path, "tx-0")
    aborted = {b"v%d" % i for i in range(24) if i % 4 == 1}
    assert aborted <= {v for _, _, v in before}

    r = pylog("compact", str(tmp_path), "--dry-run", "--json")
    assert r.returncode == 0, r.stderr
    dry = {p["topic"]: p for p in json.loads(r.stdout)["partitions"]}["tx"]
    r = pylog("compact", str(tmp_path), "--json")
    assert r.returncode == 0, r.stderr
    real = {p["topic"]: p for p in json.loads(r.stdout)["partitions"]}["tx"]
    for k in ("records_read", "records_written", "records_removed", "bytes_read", "bytes_written"):
        assert real[k] == dry[k], k
    after = records(tmp_path, "tx-0")
    assert not aborted & {v for _, _, v in after}  # no aborted value survives
    assert len(after) == len(before) - real["records_removed"]
    assert pylog("verify", str(tmp_path)).returncode == 0
