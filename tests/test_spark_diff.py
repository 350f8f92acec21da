"""`pylog diff --spark` gives the streaming diff's result, by position and by key, on the same topics."""
from __future__ import annotations

import json

import pytest

from support.spark_fixtures import LOCAL, run_pylog
from support.diff_data import fill, recs

pytestmark = pytest.mark.timeout(900)


def both(broker, master, *args, expect):
    """(streaming result, Spark result) of `pylog diff ARGS --json`; the Spark one without its run facts."""
    common = ["diff", *args, "-b", broker.bootstrap, "--json"]
    plain = json.loads(run_pylog(*common, expect=expect).stdout)
    res = run_pylog(*common, "--spark", "--master", master, expect=expect)
    assert res.stdout, f"no JSON from the Spark diff; its stderr: {res.stderr}"  # exit 1 is also an error's
    spark = json.loads(res.stdout)
    info = spark.pop("spark")
    assert info["master"] == master and info["job_seconds"] > 0
    return plain, spark


def test_spark_diff_equals_streaming_diff(spark_master, pylog_broker):
    # local[2] runs every comparison; local-cluster (executor JVMs per job) the two that find
    # differences, one by position and one by key
    every = spark_master == LOCAL
    tag = spark_master.split("[")[0].replace("-", "")
    a, b, c = f"sd-{tag}-a", f"sd-{tag}-b", f"sd-{tag}-c"
    for t in (a, b, c):
        pylog_broker.create_topic(t, partitions=3)
    for t in (a, b):
        fill(pylog_broker.bootstrap, t, recs(40), 0)
        fill(pylog_broker.bootstrap, t, recs(9), 1)  # partition 2 stays empty
    if every:
        plain, spark = both(pylog_broker, spark_master, a, b, expect=0)
        assert plain == spark and spark["equal"]
        assert [p["compared"] for p in spark["partitions"]] == [40, 9, 0]

    # c: a changed value and header at position 12 of partition 0, three more records, one fewer in 1,
    # a tombstone, a key that moved, and keyless records
    fill(pylog_broker.bootstrap, c, recs(43, r12=(b"k2", b"CHANGED", [("h", b"2")]), r41=(b"k1", None, []),
                                         r42=(None, b"no key", [])), 0)
    fill(pylog_broker.bootstrap, c, recs(8) + [(b"new", b"x", [])], 1)
    plain, spark = both(pylog_broker, spark_master, a, c, expect=1)
    assert plain == spark
    p0 = spark["partitions"][0]
    assert p0["first_difference"]["offset_a"] == 12 and p0["first_difference"]["b"]["value"] == "CHANGED"
    assert (p0["only_in_a"], p0["only_in_b"]) == (0, 3)
    if every:
        plain, spark = both(pylog_broker, spark_master, a, c, "--ignore", "value", "--ignore", "headers", expect=1)
        assert plain == spark and spark["partitions"][0]["first_difference"] is None

    plain, spark = both(pylog_broker, spark_master, a, c, "--by-key", expect=1)
    assert plain == spark
    assert spark["only_in_b"] == 1 and spark["examples"]["only_in_b"] == ["new"]
    assert spark["keyless_records_b"] == 1 and spark["different"] >= 1
    if every:
        plain, spark = both(pylog_broker, spark_master, a, b, "--by-key", expect=0)
        assert plain == spark and spark["equal"]
