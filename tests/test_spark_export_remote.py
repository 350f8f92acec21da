"""`pylog spark-export` and the `pylog` data source on a standalone cluster whose workers' python3
has none of pylog's dependencies (the environment is shipped), and through Spark Connect (pylog's
code goes up as an artifact)."""
from __future__ import annotations

import json

import pytest

from support.export_support import rows_of, write_export_dir
from support.spark_fixtures import run_pylog
from test_spark_cluster import cluster_args


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    return write_export_dir(tmp_path_factory.mktemp("export-remote-src"))


@pytest.mark.timeout(1800)
def test_export_on_a_standalone_cluster(spark_cluster, keep_session, export_dir, tmp_path):
    import deltalake

    out = tmp_path / "delta"
    res = run_pylog("spark-export", "tx", "plain", "--from-dir", export_dir.path, "--format", "delta", "-o", out,
                    *cluster_args(spark_cluster), "--json")
    doc = json.loads(res.stdout)
    assert doc["master"] == spark_cluster.url and doc["executor_python"]["how"] == "shipped"
    got = rows_of(deltalake.DeltaTable(str(out)).to_pyarrow_table())
    assert got == sorted(export_dir.committed["tx"] + export_dir.committed["plain"])


@pytest.mark.timeout(1800)
def test_export_and_data_source_through_spark_connect(spark_connect, keep_session, export_dir, tmp_path):
    import pyarrow.dataset as pads

    out = tmp_path / "parquet"
    res = run_pylog("spark-export", "tx", "--from-dir", export_dir.path, "-o", out, "--partition-by", "partition",
                    "--remote", spark_connect.url, "--json")
    doc = json.loads(res.stdout)
    assert doc["master"] == spark_connect.url and doc["committed"]
    assert rows_of(pads.dataset(out, partitioning="hive").to_table()) == export_dir.committed["tx"]
    # the data source itself through the Connect session pylog opened
    from pylog.commands.spark import session
    from pylog.commands.spark.datasource import register

    run = session.open_session(session.SessionSettings(remote=spark_connect.url, app_name="pylog tests"))
    register(run.spark)
    df = run.spark.read.format("pylog").option("topics", "tx").option("isolation", "read_uncommitted") \
        .load(str(export_dir.path))
    assert df.where("partition = 1").count() == sum(1 for r in export_dir.uncommitted["tx"] if r[0] == 1)
