"""pylog diff: two topics compared by position and by key, on one broker or two (embedded brokers)."""
from __future__ import annotations

import json
import time

import pytest

from support.client_fixtures import pylog_cli
from pylog.core.client import Producer
from support.diff_data import TS, fill, recs  # noqa: F401
from support.waiting import wait_until


def run(broker, *args):
    r = pylog_cli("diff", *args, "-b", broker.bootstrap, "--json")
    assert r.returncode in (0, 1), r.stderr
    return r.returncode, json.loads(r.stdout)


def test_identical_topics_are_equal(pylog_broker):
    for t in ("same-a", "same-b"):
        pylog_broker.create_topic(t, partitions=2)
        fill(pylog_broker.bootstrap, t, recs(30), 0)
        fill(pylog_broker.bootstrap, t, recs(7), 1)
    rc, res = run(pylog_broker, "same-a", "same-b")
    assert rc == 0 and res["equal"]
    assert [(p["partition"], p["compared"]) for p in res["partitions"]] == [(0, 30), (1, 7)]
    human = pylog_cli("diff", "same-a", "same-b", "-b", pylog_broker.bootstrap)
    assert human.returncode == 0
    assert "partition 1: equal (7 records)" in human.stdout


def test_first_difference_and_records_only_on_one_side(pylog_broker):
    for t in ("d-a", "d-b"):
        pylog_broker.create_topic(t)
    fill(pylog_broker.bootstrap, "d-a", recs(20))
    fill(pylog_broker.bootstrap, "d-b", recs(23, r12=(b"k2", b"CHANGED", [("h", b"2")])))
    rc, res = run(pylog_broker, "d-a", "d-b")
    assert rc == 1 and not res["equal"]
    p = res["partitions"][0]
    assert p["first_difference"]["offset_a"] == 12 and p["first_difference"]["offset_b"] == 12
    assert p["first_difference"]["fields"] == ["value", "headers"]
    assert p["first_difference"]["b"]["value"] == "CHANGED"
    assert (p["only_in_a"], p["only_in_b"]) == (0, 3)
    # ignoring the fields that differ leaves only the extra records
    rc, res = run(pylog_broker, "d-a", "d-b", "--ignore", "value", "--ignore", "headers")
    assert rc == 1 and res["partitions"][0]["first_difference"] is None
    human = pylog_cli("diff", "d-a", "d-b", "-b", pylog_broker.bootstrap)
    assert "first difference at offset 12 (A) / 12 (B) in value, headers; 3 records only in B" in human.stdout


def test_by_key_equal_after_compaction_like_rewrite(pylog_broker):
    pylog_broker.create_topic("k-log")
    pylog_broker.create_topic("k-latest", partitions=3)  # other partitioning: only keys matter
    history = recs(40)
    fill(pylog_broker.bootstrap, "k-log", history + [(b"gone", b"x", []), (b"gone", None, [])])
    latest = {k: (k, v, h) for k, v, h in history}
    with Producer({"bootstrap.servers": pylog_broker.bootstrap}) as p:
        for k, v, h in latest.values():
            p.send("k-latest", v, key=k, headers=h)
        p.flush(30)
    rc, res = run(pylog_broker, "k-log", "k-latest", "--by-key")
    assert rc == 0 and res["equal"] and res["keys_a"] == res["keys_b"] == 10
    rc, res = run(pylog_broker, "k-log", "k-latest")
    assert rc == 1  # record by record they differ
    with Producer({"bootstrap.servers": pylog_broker.bootstrap}) as p:
        p.send("k-latest", b"new", key=b"k3", headers=[("h", b"1")])
        p.send("k-latest", b"only", key=b"extra")
        p.flush(30)
    rc, res = run(pylog_broker, "k-log", "k-latest", "--by-key")
    assert rc == 1
    assert (res["only_in_a"], res["only_in_b"], res["different"]) == (0, 1, 1)
    assert res["examples"]["different"] == ["k3"] and res["examples"]["only_in_b"] == ["extra"]


def test_two_clusters(pylog_broker, pylog_broker_function):
    pylog_broker.create_topic("mig")
    pylog_broker_function.create_topic("mig")
    fill(pylog_broker.bootstrap, "mig", recs(15))
    fill(pylog_broker_function.bootstrap, "mig", recs(15))
    r = pylog_cli("diff", "mig", "mig", "-b", pylog_broker.bootstrap, "--bootstrap-b",
                  pylog_broker_function.bootstrap)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "mig vs mig: equal" in r.stdout


def test_missing_topic_is_one_line_error(pylog_broker):
    pylog_broker.create_topic("exists")
    r = pylog_cli("diff", "exists", "no-such-topic", "-b", pylog_broker.bootstrap,
                  "-X", "allow.auto.create.topics=false")
    assert r.returncode == 1
    assert "no-such-topic" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.pylog_broker(settings={"log.retention.check.interval.ms": "100"})
def test_records_deleted_under_the_diff_are_an_error_at_once(pylog_broker_function):
    # retention deletes the records after the diff took its offsets [0, 20): both readers (the streaming
    # diff's and the Spark task's) say so at once instead of waiting 60 s for records that are gone
    from pylog.commands.diff import Side
    from pylog.spark.diff import read_partition
    from pylog.core.client import Admin
    from pylog.core.errors import DataError

    b = pylog_broker_function
    props = {"bootstrap.servers": b.bootstrap}
    b.create_topic("expiring", config={"retention.ms": "1000"})
    fill(b.bootstrap, "expiring", recs(20))  # a minute old: past retention.ms at the next check
    with Admin(props) as admin:
        wait_until(lambda: admin.offsets("expiring", [0])[0][0] == 20, what="retention to delete the records")
    side = Side("A", "expiring", props)
    side.start, side.end = {0: 0}, {0: 20}  # as the diff took them before the deletion
    for read in (lambda: list(side.records([0])), lambda: list(read_partition(props, "expiring", 0, 0, 20))):
        t0 = time.monotonic()
        with pytest.raises(DataError, match=r"records of offsets \[0, 20\) were deleted while the diff ran"):
            read()
        assert time.monotonic() - t0 < 30
