"""`pylog spark-export` of a log dir written by Apache Kafka 4.x: offline equals through the Kafka node.

support/kafka_log_dirs.py has a Kafka node write every codec (idempotent
producers, headers), a transaction that commits, aborts and commits, and a
compacted topic its own cleaner cleaned. The topics are exported through that
node (-b, Kafka's own Fetch and ListOffsets answers), then the node is stopped
and its dir exported offline (--from-dir): the two tables hold the same rows,
every column equal.
"""
from __future__ import annotations

import json

import pytest

from support.kafka_log_dirs import CODECS, write_kafka_log_dirs
from support.spark_fixtures import LOCAL, ON_THE_LOCAL_SESSION, run_pylog

MASTER = LOCAL
ORDER = [("topic", "ascending"), ("partition", "ascending"), ("offset", "ascending")]
CASES = {
    "committed": ("codecs", "txn", "compacted"),
    "uncommitted": ("txn", "--isolation", "read_uncommitted"),
    "range": ("codecs", "compacted", "--from", "5", "--until", "100"),
    "latest": ("compacted", "--compacted"),
}


pytestmark = ON_THE_LOCAL_SESSION


@pytest.fixture(scope="module")
def kdirs(tmp_path_factory):
    # the node stays up after its cleaner's run: the test exports through it, then stops it
    dirs = write_kafka_log_dirs(tmp_path_factory.mktemp("kafka-export"), keep_running=True, before=False)
    yield dirs
    dirs.node.stop()


def _export(*args) -> dict:
    return json.loads(run_pylog("spark-export", *args, "--master", MASTER, "--json").stdout)


def _table(path):
    import pyarrow.dataset as pads

    return pads.dataset(path).to_table().sort_by(ORDER)


@pytest.mark.timeout(2400)
def test_kafka_dir_offline_equals_export_through_kafka(kdirs, keep_session, tmp_path):
    node = kdirs.node
    # through the node its cleaner ran on (it has cleaned `compacted` and nothing is written
    # since, so it changes no file of these topics), then offline from the files it leaves
    try:
        for name, args in CASES.items():
            doc = _export(*args, "-b", node.bootstrap, "-o", tmp_path / f"{name}-kafka")
            assert doc["committed"], name
    finally:
        node.stop()
    for name, args in CASES.items():
        _export(*args, "--from-dir", kdirs.data, "-o", tmp_path / f"{name}-dir")
    for name in CASES:
        offline, through = _table(tmp_path / f"{name}-dir"), _table(tmp_path / f"{name}-kafka")
        assert offline.num_rows > 0 and offline.equals(through), name
    # and what they hold is what Kafka's producers wrote, as a consumer reads it
    t = _table(tmp_path / "committed-dir").to_pylist()
    codecs = [r for r in t if r["topic"] == "codecs"]
    assert sorted(r["value"].decode() for r in codecs) == sorted(f"{c}-v{i}" for c in CODECS for i in range(30))
    assert all(dict((h["key"], h["value"]) for h in r["headers"])["codec"] == r["value"].split(b"-")[0]
               for r in codecs)
    txn = [r["value"].decode() for r in t if r["topic"] == "txn"]
    assert sorted(txn) == sorted([f"commit-{i}" for i in range(4)] * 2)
    assert not any(v.startswith("abort") for v in txn)
    uncommitted = [r["value"].decode() for r in _table(tmp_path / "uncommitted-dir").to_pylist()]
    assert sum(v.startswith("abort") for v in uncommitted) == 4
    latest = {r["key"].decode(): r["value"].decode() for r in _table(tmp_path / "latest-dir").to_pylist()}
    assert latest["user0"] == "last" and len(latest) == 10
