"""Disk and I/O faults: a full tmpfs, short writes and EIO through storage's fault seam, a failed fsync,
a log dir that turns read-only or vanishes. Nothing acknowledged is lost, nothing torn is served.

The tmpfs tests mount a small tmpfs (CI runs as root); where mounting is not permitted they fail
loudly rather than skip. The seam tests (PYLOG_STORAGE_FAULTS) need no privilege."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from support.broker_fixtures import BrokerProcess, build_batch, call, connect, stored_batches
from pylog.core.errors import ErrorCode
from support.waiting import wait_until

STORAGE_ERROR = 56


@pytest.fixture
def tmpfs(tmp_path):
    mounted = []

    def mount(name: str, size: str) -> Path:
        p = tmp_path / name
        p.mkdir()
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(p)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            pytest.fail(f"cannot mount a tmpfs at {p} (these tests need root, as CI has): {r.stderr.strip()}")
        mounted.append(p)
        return p

    yield mount
    for p in reversed(mounted):
        subprocess.run(["umount", "-l", str(p)], capture_output=True)


def create_topic(s, name, partitions=1, configs=()):
    r = call(s, 19, 5, {"topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1,
                                    "configs": [{"name": k, "value": v} for k, v in configs]}],
                        "timeout_ms": 5000})
    assert r["topics"][0]["error_code"] == 0, r


def produce(s, topic, partition, batch, corr=1):
    r = call(s, 0, 9, {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": topic, "partition_data": [{"index": partition, "records": batch}]}]}, correlation_id=corr)
    return r["responses"][0]["partition_responses"][0]


def fetch(s, topic, partition, offset=0):
    r = call(s, 1, 12, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 26,
                        "isolation_level": 0, "session_id": 0, "session_epoch": -1, "topics": [
                            {"topic": topic, "partitions": [{"partition": partition, "current_leader_epoch": -1,
                                                              "fetch_offset": offset, "log_start_offset": -1,
                                                              "partition_max_bytes": 1 << 26}]}],
                        "forgotten_topics_data": [], "rack_id": ""})
    return r["responses"][0]["partitions"][0]


def whole_batches(records: bytes) -> list:
    """Every batch of a fetched record set, CRC-checked; fails on a torn tail."""
    from pylog.core.records.header import iter_headers

    buf = bytes(records)
    out, end = [], 0
    for pos, h in iter_headers(buf, 0, len(buf)):
        out.append(h)
        end = pos + h.batch_length + 12
    assert end == len(buf), f"{len(buf) - end} bytes after the last whole batch"
    return out


def error_lines(b, needle):
    return [x for x in b.stderr(None).splitlines() if " ERROR " in x and needle in x]


def test_full_disk_fails_fast_logs_once_keeps_reads_and_resumes(tmpfs, tmp_path):
    d = tmpfs("full", "3m")
    filler = d / "filler"
    filler.write_bytes(b"\0" * (1 << 20))  # taken back later: the space "returns"
    b = BrokerProcess(d, "--set", "metrics.listener=http://127.0.0.1:0", "--set", "log.index.size.max.bytes=65536",
                      "--set", "offsets.topic.num.partitions=1").start()
    try:
        s = connect(b)
        create_topic(s, "f")
        # a committed offset before the disk fills
        call(s, 10, 3, {"key": "g", "key_type": 0})
        r = call(s, 8, 2, {"group_id": "g", "generation_id": -1, "member_id": "", "retention_time_ms": -1,
                           "topics": [{"name": "f", "partitions": [{"partition_index": 0, "committed_offset": 7,
                                                                    "committed_metadata": ""}]}]})
        assert r["topics"][0]["partitions"][0]["error_code"] == 0
        acked, failed_at = 0, None
        for i in range(200):
            batch = build_batch([(None, os.urandom(1000), None) for _ in range(64)])
            t0 = time.monotonic()
            p = produce(s, "f", 0, batch, corr=i)
            if p["error_code"]:
                assert p["error_code"] == STORAGE_ERROR
                assert time.monotonic() - t0 < 2.0  # answered promptly, not timed out
                failed_at = i
                break
            acked += 64
        assert failed_at is not None, "the 3 MiB tmpfs never filled"
        for i in range(5):  # more refusals: still one ERROR line
            assert produce(s, "f", 0, build_batch([(None, os.urandom(1000), None)] * 64))["error_code"] == \
                STORAGE_ERROR
        lines = error_lines(b, "is full")
        assert len(lines) == 1 and str(d) in lines[0] and "bytes free" in lines[0], lines

        # the segment holds only whole batches, every acknowledged record is there, and reads go on
        log_file = next((d / "f-0").glob("*.log"))
        on_disk = stored_batches(b, "f", 0)
        assert sum(h.batch_length + 12 for h in on_disk) == log_file.stat().st_size
        assert sum(h.last_offset_delta + 1 for h in on_disk) == acked
        got = whole_batches(fetch(s, "f", 0)["records"])
        assert sum(h.last_offset_delta + 1 for h in got) == acked
        r = call(s, 9, 5, {"group_id": "g", "topics": [{"name": "f", "partition_indexes": [0]}],
                           })
        assert r["topics"][0]["partitions"][0]["committed_offset"] == 7

        url = next(x for x in b.stdout_lines if x.strip().startswith("metrics: ")).split()[1].rsplit("/", 1)[0]
        text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
        assert f'pylog_log_dir_storage_errors_total{{logDirectory="{d}"}}' in text
        status = json.loads(urllib.request.urlopen(url + "/ready", timeout=10).read())
        assert status["log_dirs"][0]["full"] is True and status["log_dirs"][0]["online"] is True

        # space returns: appends resume with no restart
        filler.unlink()
        p = produce(s, "f", 0, build_batch([(None, b"after", None)]), corr=999)
        assert p["error_code"] == 0 and p["base_offset"] == acked
        acked += 1
        assert wait_until(lambda: "has space again" in b.stderr(None), 10, "the INFO line")
        s.close()
    finally:
        b.stop_clean()
    # after a clean restart every acknowledged record reads back
    b2 = BrokerProcess(d).start()
    try:
        s = connect(b2)
        got = whole_batches(fetch(s, "f", 0)["records"])
        assert sum(h.last_offset_delta + 1 for h in got) == acked
        s.close()
    finally:
        b2.stop_clean()


def faulty_broker(tmp_path, monkeypatch, *dirs, extra=()):
    rules = tmp_path / "faults.txt"
    rules.write_text("")
    monkeypatch.setenv("PYLOG_STORAGE_FAULTS", str(rules))
    args = []
    for x in dirs[1:]:
        args += ["--log-dir", str(x)]
    b = BrokerProcess(dirs[0], *args, *extra).start()
    return b, rules


def test_short_write_is_cut_back_and_appends_go_on(tmp_path, monkeypatch):
    b, rules = faulty_broker(tmp_path, monkeypatch, tmp_path / "d")
    try:
        s = connect(b)
        create_topic(s, "w")
        assert produce(s, "w", 0, build_batch([(None, b"one", None)]))["error_code"] == 0
        size = next((b.log_dir / "w-0").glob("*.log")).stat().st_size
        rules.write_text("pwrite short w-0\n")
        p = produce(s, "w", 0, build_batch([(None, os.urandom(5000), None)] * 10))
        assert p["error_code"] == STORAGE_ERROR
        assert next((b.log_dir / "w-0").glob("*.log")).stat().st_size == size  # cut back
        rules.write_text("")
        p = produce(s, "w", 0, build_batch([(None, b"two", None)]))
        assert p["error_code"] == 0 and p["base_offset"] == 1
        got = whole_batches(fetch(s, "w", 0)["records"])
        assert [h.base_offset for h in got] == [0, 1]
        assert len(error_lines(b, "is full")) == 1  # a short write then ENOSPC: a full disk
        s.close()
    finally:
        b.stop_clean()


def test_failed_fsync_takes_the_dir_offline_then_the_broker(tmp_path, monkeypatch):
    a, c = tmp_path / "a", tmp_path / "c"
    b, rules = faulty_broker(tmp_path, monkeypatch, a, c, extra=("--set", "metrics.listener=http://127.0.0.1:0"))
    s = connect(b)
    create_topic(s, "x", 2, [("flush.messages", "1")])  # every append fsyncs: x-0 in a, x-1 in c
    assert (a / "x-0").is_dir() and (c / "x-1").is_dir()
    for part in (0, 1):
        assert produce(s, "x", part, build_batch([(None, b"kept", None)]))["error_code"] == 0
    rules.write_text(f"fsync EIO {a}\n")
    assert produce(s, "x", 0, build_batch([(None, b"lost?", None)]))["error_code"] == STORAGE_ERROR
    wait_until(lambda: error_lines(b, "is offline"), 10, "the offline ERROR line")
    assert str(a) in error_lines(b, "is offline")[0]
    # a's partition answers KAFKA_STORAGE_ERROR; c's keeps serving, reads and writes
    assert produce(s, "x", 0, build_batch([(None, b"no", None)]))["error_code"] == STORAGE_ERROR
    assert fetch(s, "x", 0)["error_code"] == STORAGE_ERROR
    assert produce(s, "x", 1, build_batch([(None, b"yes", None)]))["error_code"] == 0
    assert len(whole_batches(fetch(s, "x", 1)["records"])) == 2
    # Metadata: as Kafka's controller leaves a partition whose only replica's dir failed, a's partition
    # has no leader and lists the broker as an offline replica; c's is led as before
    parts = {p["partition_index"]: p for p in call(s, 3, 9, {"topics": [{"name": "x"}]})["topics"][0]["partitions"]}
    assert (parts[0]["error_code"], parts[0]["leader_id"], parts[0]["offline_replicas"]) == \
        (ErrorCode.LEADER_NOT_AVAILABLE, -1, [1])
    assert (parts[1]["error_code"], parts[1]["leader_id"], parts[1]["offline_replicas"]) == (0, 1, [])
    url = next(x for x in b.stdout_lines if x.strip().startswith("metrics: ")).split()[1].rsplit("/", 1)[0]
    text = urllib.request.urlopen(url + "/metrics", timeout=10).read().decode()
    assert "kafka_log_logmanager_offlinelogdirectorycount 1.0" in text
    assert urllib.request.urlopen(url + "/ready", timeout=10).status == 200
    # the last dir fails too: the broker stops, uncleanly, with exit status 1
    rules.write_text("fsync EIO\n")
    produce(s, "x", 1, build_batch([(None, b"last", None)]))
    assert b.proc.wait(30) == 1
    assert "every log dir is offline" in b.stderr(None)
    s.close()
    monkeypatch.delenv("PYLOG_STORAGE_FAULTS")
    # restarted without faults: everything acknowledged is there
    b2 = BrokerProcess(a, "--log-dir", str(c)).start()
    try:
        s = connect(b2)
        assert sum(h.last_offset_delta + 1 for h in whole_batches(fetch(s, "x", 0)["records"])) >= 1
        assert sum(h.last_offset_delta + 1 for h in whole_batches(fetch(s, "x", 1)["records"])) >= 2
        s.close()
    finally:
        b2.stop_clean()


def test_read_only_unmounted_and_vanished_dirs_go_offline_while_others_serve(tmpfs, tmp_path, monkeypatch):
    # Linux refuses to remount a filesystem read-only while files on it are open for writing
    # (the broker's segments are), so "read-only" is EROFS injected at that dir's write sites;
    # the unmount and the removal are real.
    keep, ro, removed = tmp_path / "keep", tmp_path / "ro", tmp_path / "removed"
    mnt = tmpfs("mnt", "8m")
    b, rules = faulty_broker(tmp_path, monkeypatch, keep, ro, mnt, removed)
    try:
        s = connect(b)
        create_topic(s, "r", 4)  # r-0 in keep, r-1 in ro, r-2 in mnt, r-3 in removed
        assert all((d / f"r-{i}").is_dir() for i, d in enumerate((keep, ro, mnt, removed)))
        for part in range(4):
            assert produce(s, "r", part, build_batch([(None, b"v", None)]))["error_code"] == 0

        rules.write_text(f"pwrite EROFS {ro}\n")
        assert produce(s, "r", 1, build_batch([(None, b"v", None)]))["error_code"] == STORAGE_ERROR
        wait_until(lambda: error_lines(b, f"log dir {ro} is offline"), 15, "the read-only dir going offline")

        r = subprocess.run(["umount", "-l", str(mnt)], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        wait_until(lambda: error_lines(b, f"log dir {mnt} is offline"), 15, "the unmounted dir going offline")

        shutil.rmtree(removed)
        wait_until(lambda: error_lines(b, f"log dir {removed} is offline"), 15, "the removed dir going offline")

        for part in (1, 2, 3):
            assert fetch(s, "r", part)["error_code"] == STORAGE_ERROR
            assert produce(s, "r", part, build_batch([(None, b"v", None)]))["error_code"] == STORAGE_ERROR
        p = produce(s, "r", 0, build_batch([(None, b"still", None)]))
        assert p["error_code"] == 0 and p["base_offset"] == 1
        assert len(whole_batches(fetch(s, "r", 0)["records"])) == 2
        s.close()
    finally:
        b.stop_clean()


def test_checkpoint_write_error_takes_the_dir_offline(tmp_path, monkeypatch):
    a, c = tmp_path / "a", tmp_path / "c"
    b, rules = faulty_broker(tmp_path, monkeypatch, a, c,
                             extra=("--set", "log.flush.offset.checkpoint.interval.ms=200"))
    try:
        s = connect(b)
        create_topic(s, "k", 2)  # k-0 in a, k-1 in c
        for part in (0, 1):
            assert produce(s, "k", part, build_batch([(None, b"v", None)]))["error_code"] == 0
        rules.write_text(f"write EIO {a}/recovery-point-offset-checkpoint\n")
        wait_until(lambda: error_lines(b, f"log dir {a} is offline"), 15, "the checkpoint failure taking a offline")
        assert "recovery-point-offset-checkpoint" in error_lines(b, f"log dir {a} is offline")[0]
        assert produce(s, "k", 0, build_batch([(None, b"v", None)]))["error_code"] == STORAGE_ERROR
        assert produce(s, "k", 1, build_batch([(None, b"v", None)]))["error_code"] == 0
        rules.write_text("")
        s.close()
    finally:
        b.stop_clean()
