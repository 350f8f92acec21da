"""`pylog spark-compaction`: its prediction equals what `pylog compact` leaves.

Logs are generated with pylog's storage engine (keys with repeats, tombstones,
mixed codecs, an idempotent producer whose last batch gets emptied, small
segments, a second round after a first compaction), then predicted on
local[2] and local-cluster[2,1,1024] and compacted for real; the report's contents on local[2].
"""
from __future__ import annotations

import json
import random
import time
from pathlib import Path

from pylog.core.config import BROKER_CONFIGS
from pylog.core.records import CODEC_GZIP, CODEC_LZ4, CODEC_NONE, CODEC_ZSTD, BatchBuilder
from pylog.storage import LogManager
from support.spark_fixtures import LOCAL, local_only, run_pylog

TOPICS = {
    # name: (partitions, configs)
    "users": (2, {"cleanup.policy": "compact", "segment.bytes": "3000", "delete.retention.ms": "1"}),
    "orders": (1, {"cleanup.policy": "compact", "segment.bytes": "5000", "min.cleanable.dirty.ratio": "0.9"}),
    "gone": (1, {"cleanup.policy": "compact", "segment.bytes": "4000", "delete.retention.ms": "0"}),
    "plain": (1, {"segment.bytes": "3000"}),
    "idem": (1, {"cleanup.policy": "compact", "segment.bytes": "2500"}),
}


def _append(lg, rnd, n_batches, keys, *, tombstone_rate=0.15, pid=-1, seq=None, compress_tombstones=False):
    for _ in range(n_batches):
        count = rnd.randint(1, 6)
        kw = {}
        if pid >= 0:
            kw = {"producer_id": pid, "producer_epoch": 0, "base_sequence": seq[0]}
            seq[0] += count
        # an hour old: a tombstone kept with a new delete horizon (cleaning time +
        # delete.retention.ms) has its timestamp deltas re-encoded against that horizon,
        # and their varint lengths must not depend on the seconds between predicting
        # and compacting
        now = int(time.time() * 1000) - 3_600_000
        recs = [(now + rnd.randint(-5000, 0), rnd.choice(keys),
                 None if rnd.random() < tombstone_rate else ("v" * rnd.randint(1, 40)).encode())
                for _ in range(count)]
        codec = rnd.choice([CODEC_NONE, CODEC_NONE, CODEC_GZIP, CODEC_LZ4, CODEC_ZSTD])
        if not compress_tombstones and any(v is None for _, _, v in recs):
            # ... and once compressed, the size of such a batch depends on the horizon's
            # exact value: only a cleaning at the same millisecond writes the same bytes
            codec = CODEC_NONE
        b = BatchBuilder(codec=codec, **kw)
        for ts, k, v in recs:
            b.append(ts, k, v)
        lg.append_as_leader(bytearray(b.build()), 0)


# old segments go at once after a swap (the default keeps them a minute as .deleted files)
for _parts, _cfg in TOPICS.values():
    _cfg["file.delete.delay.ms"] = "0"


def generate(log_dir: Path, seed: int, round_: int) -> None:
    rnd = random.Random(seed * 10 + round_)
    lm = LogManager([str(log_dir)], BROKER_CONFIGS.resolve({}))
    lm.startup(start_cleaner=False)  # on a slow machine its backoff ends mid-generate and it compacts first
    try:
        for name, (parts, cfg) in TOPICS.items():
            if name not in lm.topics:
                lm.create_topic(name, parts, cfg)
        keys = [f"key-{i}".encode() for i in range(rnd.randint(8, 40))]
        for p in range(2):
            _append(lm.get_log("users", p), rnd, rnd.randint(20, 60), keys)
        _append(lm.get_log("orders", 0), rnd, rnd.randint(20, 50), keys[:10], tombstone_rate=0.05)
        _append(lm.get_log("gone", 0), rnd, 40, keys, tombstone_rate=0.4, compress_tombstones=True)
        _append(lm.get_log("plain", 0), rnd, 30, keys, tombstone_rate=0.0)
        idem = lm.get_log("idem", 0)
        seq = [idem.log_end_offset]  # one producer per round: sequences start at 0 in round 0
        if round_ == 0:
            _append(idem, rnd, 15, keys[:5], pid=7, seq=[0])
            # later non-idempotent writes supersede every key of producer 7's batches
            _append(idem, rnd, 40, keys[:5], tombstone_rate=0.0)
        else:
            _append(idem, rnd, 20, keys[:5], tombstone_rate=0.1)
        del seq
    finally:
        lm.shutdown()


def actual(log_dir: Path) -> dict:
    """(records, bytes) per partition folder as the files hold them."""
    from pylog.spark.compaction import _batches

    out = {}
    for d in sorted(p for p in log_dir.iterdir() if p.is_dir() and not p.name.startswith(".")):
        recs = size = 0
        for seg in sorted(d.glob("*.log")):
            size += seg.stat().st_size
            for _, _, h in _batches(str(seg)):
                recs += h.record_count
        out[d.name] = (recs, size)
    return out


def predict(log_dir: Path, master: str, *extra: str) -> dict:
    res = run_pylog("spark-compaction", log_dir, "--master", master, "--json", *extra)
    doc = json.loads(res.stdout)
    return doc, {f"{p['topic']}-{p['partition']}": (p["records_after"], p["bytes_after"]) for p in doc["partitions"]}


def test_prediction_equals_compaction(spark_master, tmp_path):
    # local-cluster (executor JVMs per job) runs seed 1's two rounds; local[2] adds seed 2 with --if-dirty
    for seed in (1, 2) if spark_master == LOCAL else (1,):
        log_dir = tmp_path / f"logs{seed}"
        for round_ in (0, 1):
            generate(log_dir, seed, round_)
            before = actual(log_dir)
            extra = ("--if-dirty",) if seed == 2 and round_ == 1 else ()
            doc, predicted = predict(log_dir, spark_master, *extra)
            assert {f"{p['topic']}-{p['partition']}": (p["records"], p["bytes"]) for p in doc["partitions"]} == before
            time.sleep(0.01)  # round 2 must see round 1's 1 ms tombstone horizons expire, as compact will
            run_pylog("compact", log_dir, "--json", *extra)
            after = actual(log_dir)
            assert predicted == after, (seed, round_)
            # the test is only worth something if compaction changed things
            assert after["plain-0"] == before["plain-0"]
            if not extra:
                assert after["users-0"][1] < before["users-0"][1]
    # the idempotent producer's last batch survives as an empty batch in round 0's log
    run_pylog("verify", log_dir)


@local_only  # the prediction itself runs on local-cluster too (above)
def test_report_contents_and_html(spark_master, tmp_path):
    log_dir = tmp_path / "logs"
    generate(log_dir, 3, 0)
    html = tmp_path / "report.html"
    doc, _ = predict(log_dir, spark_master, "--html", html, "--top-keys", "3", "--topic", "users")
    assert [p["topic"] for p in doc["partitions"]] == ["users", "users"]
    for p in doc["partitions"]:
        assert p["segments"] > 1 and p["distinct_keys"] > 0 and 0 < p["dirty_ratio"] <= 1
        assert p["records_after"] <= p["records"] and 0 <= p["saving_percent"] < 100
        assert len(p["hottest_keys"]) == 3
        counts = [k["records"] for k in p["hottest_keys"]]
        assert counts == sorted(counts, reverse=True)
    text = html.read_text()
    assert "<svg" in text and "users-0" in text and "<script src" not in text
    assert doc["key_frequency"]["users"]
