"""`pylog spark-export` on a standalone cluster (a Master and two Workers from `spark-class`)
whose workers' python3 is bare, and through a Spark Connect server on that cluster: every
format, read back by independent readers (pyarrow, delta-rs, pyiceberg with a SQL catalog).

`--ship-env auto` probes the executors once and, finding them without pylog's
dependencies, ships this environment: with spark.archives on spark://, as a session
artifact (with the session's Python executable) through Spark Connect. The Connect
tests also run `pylog spark-compaction --remote` on those bare executors.
"""
from __future__ import annotations

import json

import pytest

from support.export_support import rows_of, table_readers, write_export_dir
from support.spark_fixtures import run_pylog

LOOPBACK = ["--conf", "spark.driver.host=127.0.0.1", "--conf", "spark.driver.bindAddress=127.0.0.1",
            "--conf", "spark.executor.memory=512m"]


# pyspark runs classic in this process even after a Spark Connect test in the same worker
pytestmark = pytest.mark.usefixtures("classic_spark")


@pytest.fixture(scope="module")
def export_dir(tmp_path_factory):
    return write_export_dir(tmp_path_factory.mktemp("export-src"))


def _every_format(export_dir, tmp_path, *spark_args) -> list[dict]:
    """Export tx and plain in each format (the second half incrementally) and check each table
    with its independent reader: exactly the rows a read_committed consumer saw."""
    want = sorted(export_dir.committed["tx"] + export_dir.committed["plain"])
    docs = []
    for fmt, read in table_readers().items():
        out = tmp_path / fmt
        for until in (["--until", "20"], []):
            res = run_pylog("spark-export", "tx", "plain", "--from-dir", export_dir.path, "--format", fmt, "-o", out,
                            "--partition-by", "topic", *until, *spark_args, "--json")
            docs.append(json.loads(res.stdout) | {"stderr": res.stderr})
            assert docs[-1]["committed"], fmt
        table = read(out)
        assert rows_of(table) == want, fmt  # each offset once, aborted records absent, values exact
        assert table.num_rows == len(want)
    return docs


@pytest.mark.timeout(2400)  # six exports on a shared 2-core machine, one restart to ship the environment
def test_every_format_on_a_standalone_cluster(spark_cluster, keep_session, export_dir, tmp_path):
    docs = _every_format(export_dir, tmp_path, "--master", spark_cluster.url, *LOOPBACK)
    first = docs[0]
    # auto probed the bare workers, found them lacking and shipped this environment
    assert "probing the executors' Python" in first["stderr"]
    assert "shipped with spark.archives" in first["stderr"] and "the executors lack " in first["stderr"]
    assert first["executor_python"]["how"] == "shipped"
    assert first["executor_python"]["probe"].startswith("the executors lack ")
    assert all(d["master"] == spark_cluster.url for d in docs)
    assert all(d["session_reused"] for d in docs[1:])  # probed and shipped once for the whole run


@pytest.mark.timeout(2400)
def test_every_format_through_spark_connect_on_bare_workers(spark_connect_bare, keep_session, export_dir,
                                                            tmp_path):
    docs = _every_format(export_dir, tmp_path, "--remote", spark_connect_bare.url)
    first = docs[0]
    assert "shipped as a Spark Connect artifact" in first["stderr"]
    assert first["executor_python"]["how"] == "shipped"
    assert first["executor_python"]["probe"].startswith("the executors lack ")
    assert all(d["master"] == spark_connect_bare.url for d in docs)


@pytest.mark.timeout(1800)
def test_compaction_through_spark_connect_on_bare_workers(spark_connect_bare, keep_session, export_dir):
    from pylog.commands.spark import session

    url = spark_connect_bare.url
    docs = {}

    def compaction(ship):
        res = run_pylog("spark-compaction", export_dir.path, "--remote", url, "--ship-env", ship, "--json")
        docs[ship] = json.loads(res.stdout)

    # auto first: when the export test above ran just before, its session (auto: probed, the
    # environment shipped) serves this job; never and always start sessions of their own
    compaction("auto")
    # never: the bare executors fail, in one line that names only what works through Connect
    session.stop_session()
    res = run_pylog("spark-compaction", export_dir.path, "--remote", url, "--ship-env", "never", expect=1)
    err = res.stderr.strip().splitlines()[-1]
    assert err.startswith("pylog: error: Spark job failed: an executor cannot import "), err
    assert "--ship-env auto or always" in err and "spark.sql.execution.pyspark.python" in err
    assert "spark.pyspark.python" not in err.replace("spark.sql.execution.pyspark.python", "")
    assert "Traceback" not in res.output
    session.stop_session()
    compaction("always")
    for ship, doc in docs.items():
        assert doc["executor_python"]["how"] == "shipped", ship
        records = sum(len(export_dir.uncommitted[t]) for t in ("tx", "plain", "users"))
        assert doc["totals"]["records"] >= records  # every record a consumer reads, and the markers
    assert docs["auto"]["executor_python"]["probe"].startswith("the executors lack ")
    assert docs["auto"]["totals"] == docs["always"]["totals"]
