"""`pylog spark-export` through a Spark Connect server on the standalone cluster (a Master and
two Workers from `spark-class`; the run's one server, `connect_server`), its executors running
the workers' bare python3 for this module: every format, read back by
independent readers (pyarrow, delta-rs, pyiceberg with a SQL catalog). The same export on the
cluster itself (spark://, the environment shipped with spark.archives) is in test_spark_cluster.

`--ship-env auto` probes the executors once and, finding them without pylog's dependencies,
ships this environment as a session artifact (with the session's Python executable). The
module also runs `pylog spark-compaction --remote` on those bare executors.
"""
from __future__ import annotations

import json

import pytest

from support.export_support import export_every_format
from support.spark_fixtures import run_pylog


@pytest.mark.timeout(2400)
def test_every_format_through_spark_connect_on_bare_workers(spark_connect_bare, keep_session,
                                                            standalone_export_dir, tmp_path):
    docs = export_every_format(standalone_export_dir, tmp_path, "--remote", spark_connect_bare.url)
    first = docs[0]
    assert "shipped as a Spark Connect artifact" in first["stderr"]
    assert first["executor_python"]["how"] == "shipped"
    assert first["executor_python"]["probe"].startswith("the executors lack ")
    assert all(d["master"] == spark_connect_bare.url for d in docs)


@pytest.mark.timeout(1800)
def test_compaction_through_spark_connect_on_bare_workers(spark_connect_bare, keep_session, standalone_export_dir):
    from pylog.spark import session

    export_dir = standalone_export_dir
    url = spark_connect_bare.url
    docs = {}

    # the three topics (the dir's 100 partitions of __consumer_offsets and __transaction_state
    # would make each run's two jobs a hundred tasks each)
    topics = ["--topic", "tx", "--topic", "plain", "--topic", "users"]

    def compaction(ship):
        res = run_pylog("spark-compaction", export_dir.path, *topics, "--remote", url, "--ship-env", ship, "--json")
        docs[ship] = json.loads(res.stdout)

    # auto first: when the export test above ran just before, its session (auto: probed, the
    # environment shipped) serves this job; never and always start sessions of their own
    compaction("auto")
    # never: the bare executors fail, in one line that names only what works through Connect
    session.stop_session()
    res = run_pylog("spark-compaction", export_dir.path, *topics, "--remote", url, "--ship-env", "never", expect=1)
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
