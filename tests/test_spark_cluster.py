"""Both Spark jobs and `spark-export` on a real standalone cluster (a Master and two
Workers from pyspark's `spark-class`, `spark_cluster`) whose workers' python3 has none
of pylog's dependencies: the executors get them from the environment pylog ships with
spark.archives (`--ship-env auto`), or from --conf spark.pyspark.python; without either
the job fails in one line naming the missing module and the fix.

The tests share one application (the cost of the cluster tests is Spark's start-up: a
driver and two executor JVMs): auto probes and ships to it; the never and given tests
then run on it with the executors' Python they choose (run alone, each starts one of its
own, with one executor: spark.cores.max=1 is enough to show what they show).
"""
from __future__ import annotations

import json
import sys

import pytest

from pylog.spark.session import live_run
from support.export_support import export_every_format
from support.spark_fixtures import run_pylog
from support.spark_rows import COLUMNS, N_ROWS, PARTITIONS, check_partitions, consume_all, make_rows, \
    read_partition_dir, write_input

# the driver and the executors talk over loopback only
LOOPBACK = ["--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
            "--conf", "spark.executor.memory=512m"]


# an application of its own for one small job: one executor instead of one per worker
ONE_EXECUTOR = ["--conf", "spark.cores.max=1"]


def cluster_args(cluster, *extra):
    own_jvm = [a for k, v in cluster.executor_conf().items() for a in ("--conf", f"{k}={v}")]
    return ["--master", cluster.url, *LOOPBACK, *own_jvm, *extra]


@pytest.mark.timeout(1800)  # three Spark jobs on a shared 2-core machine
def test_ingest_and_compaction_ship_the_environment(spark_cluster, keep_session, tmp_path, broker):
    rows = make_rows()
    src = write_input("json", rows, tmp_path)
    log_dir = tmp_path / "logs"
    # segments mode: the executors write into a folder the driver shares with them
    res = run_pylog("spark-ingest", src, "-t", "events", "--mode", "segments", "--log-dir", log_dir,
                    "--partitions", PARTITIONS, "--batch-size", "2000", *COLUMNS,
                    *cluster_args(spark_cluster), "--json")
    # auto: one probe job finds the bare workers lacking pylog's dependencies, then the same
    # application (Spark started once) takes the environment, said before any task of the job runs
    assert "probing the executors' Python" in res.stderr
    assert "shipped with spark.archives" in res.stderr and "the executors lack " in res.stderr
    assert "shared with the executors" in res.stderr
    assert res.stderr.count("starting Spark") == 1
    assert res.stderr.index("starting Spark") < res.stderr.index("probing the executors' Python") \
        < res.stderr.index("executors' Python: the driver's environment") < res.stderr.index("shared with the executors")
    doc = json.loads(res.stdout)
    assert doc["master"] == spark_cluster.url
    assert doc["executor_python"]["how"] == "shipped"
    assert "crc32c" in doc["executor_python"]["probe"] or "and " in doc["executor_python"]["probe"]
    assert doc["records"] == N_ROWS and doc["partitions_mismatched"] == 0
    by_p = {p: [r[1:] for r in read_partition_dir(log_dir / f"events-{p}")] for p in range(PARTITIONS)}
    check_partitions(by_p, rows, ordered=True)
    run_pylog("verify", log_dir)

    # produce mode, the same session
    res = run_pylog("spark-ingest", src, "-t", "produced", "-b", broker.bootstrap, "--partitions", PARTITIONS,
                    *COLUMNS, *cluster_args(spark_cluster), "--json")
    doc = json.loads(res.stdout)
    assert doc["records"] == N_ROWS and doc["partitions_mismatched"] == 0
    check_partitions(consume_all(broker.bootstrap, "produced", N_ROWS), rows, ordered=False)

    # the compaction analysis of what segments mode wrote
    res = run_pylog("spark-compaction", log_dir, *cluster_args(spark_cluster), "--json")
    doc = json.loads(res.stdout)
    assert doc["totals"]["records"] == N_ROWS
    assert {p["partition"]: p["records"] for p in doc["partitions"]} == \
        {p: len(by_p[p]) for p in range(PARTITIONS)}


@pytest.mark.timeout(2400)  # six exports on a shared 2-core machine
def test_every_format_on_a_standalone_cluster(spark_cluster, keep_session, classic_spark, standalone_export_dir,
                                              tmp_path):
    docs = export_every_format(standalone_export_dir, tmp_path, *cluster_args(spark_cluster))
    first = docs[0]
    # auto found the bare workers lacking pylog's dependencies and shipped this environment
    assert first["executor_python"]["how"] == "shipped"
    assert first["executor_python"]["probe"].startswith("the executors lack ")
    if not first["session_reused"]:  # run on its own: this export probed and shipped, as the ingest above says
        assert "probing the executors' Python" in first["stderr"]
        assert "shipped with spark.archives" in first["stderr"] and "the executors lack " in first["stderr"]
    assert all(d["master"] == spark_cluster.url for d in docs)
    assert all(d["session_reused"] for d in docs[1:])  # probed and shipped once for the whole run


def test_archive_is_cached():
    from pylog.spark.shipenv import pack_environment

    first = pack_environment()
    again = pack_environment()
    assert again.cached and again.path == first.path


@pytest.mark.timeout(900)  # the application above (a minute on a quiet machine when it starts one of its own)
def test_workers_without_dependencies_one_line(spark_cluster, keep_session, tmp_path):
    (tmp_path / "a.jsonl").write_text('{"k": "a"}\n{"k": "b"}\n')
    # run alone, one failed task is enough to show; on the shared application Spark retries it (its conf)
    res = run_pylog("spark-ingest", tmp_path / "a.jsonl", "-t", "t", "--mode", "segments", "--log-dir",
                    tmp_path / "l", "--partitions", 1, *cluster_args(spark_cluster, "--ship-env", "never"),
                    "--conf", "spark.task.maxFailures=1", *ONE_EXECUTOR, expect=1)
    # on the application auto shipped to, the executors still have the environment: only its
    # Python's change to the workers' own makes this job fail
    assert "the workers' own python3 (--ship-env never)" in res.stderr
    err = res.stderr.strip().splitlines()[-1]
    assert err.startswith("pylog: error: Spark job failed: an executor cannot import ")
    assert "--ship-env auto or always" in err and "--conf spark.pyspark.python=" in err
    assert "Traceback" not in res.output


@pytest.mark.timeout(900)
def test_conf_python_wins(spark_cluster, keep_session, tmp_path):
    # workers that already have the dependencies: name their Python, nothing is shipped
    (tmp_path / "a.jsonl").write_text("".join(json.dumps({"k": f"k{i}"}) + "\n" for i in range(50)))
    res = run_pylog("spark-ingest", tmp_path / "a.jsonl", "-t", "t", "--mode", "segments", "--log-dir",
                    tmp_path / "l", "--partitions", 2, "--key-column", "k",
                    *cluster_args(spark_cluster, "--conf", f"spark.pyspark.python={sys.executable}", *ONE_EXECUTOR),
                    "--json")
    doc = json.loads(res.stdout)
    assert doc["executor_python"] == {"how": "given", "python": sys.executable}
    assert doc["records"] == 50 and doc["partitions_mismatched"] == 0
    assert f"executors' Python: {sys.executable}" in res.stderr
    assert ran_by(live_run().spark) == {sys.executable}  # not the environment shipped before


def ran_by(spark) -> set:
    """The interpreters an RDD's and a DataFrame's Python tasks run with (their two settings)."""
    from pyspark.sql.functions import udf

    def where(_=None):  # defined here, so it travels by value
        import sys as s

        return s.executable

    rdd = spark.sparkContext.parallelize([0, 1], 2).map(where).collect()
    df = spark.range(0, 2, 1, 2).select(udf(where, "string", useArrow=False)("id").alias("p")).collect()
    return set(rdd) | {r.p for r in df}
