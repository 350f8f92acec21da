"""What a local Spark worker imports before its first task: Spark's archives off the daemon's path
when the installed pyspark is the same (local_daemon.trim_path), and a fused export task's Arrow
columns built without pyarrow's conversion from Python, which imports pandas (arrow_values.py)."""
from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from pylog.spark.local_daemon import spark_archives, trim_path
from support.segments import batch


def _folders() -> list[str]:
    return [p for p in sys.path if p and Path(p).is_dir()]


def _installed_version() -> bytes:
    from importlib.util import find_spec

    return (Path(find_spec("pyspark").origin).parent / "version.py").read_bytes()


def _zip(path: Path, files: dict) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return str(path)


@pytest.fixture
def archives(tmp_path):
    """Spark's three archives as PythonWorkerFactory puts them on the path, and a user's zip."""
    lib = tmp_path / "spark" / "python" / "lib"
    return {"pyspark": _zip(lib / "pyspark.zip", {"pyspark/version.py": _installed_version()}),
            "py4j": _zip(lib / "py4j-0.10.9.9-src.zip", {"py4j/__init__.py": ""}),
            "jar": _zip(tmp_path / "spark" / "jars" / "spark-core_2.13-4.3.0.jar", {"META-INF/MANIFEST.MF": ""}),
            "user": _zip(tmp_path / "user.zip", {"mine.py": ""})}


def test_sparks_archives_leave_the_path_when_the_installed_pyspark_is_the_same(archives):
    a = archives
    path = [a["py4j"], a["pyspark"], a["jar"], a["user"], *_folders()]
    assert spark_archives(path) == [a["py4j"], a["pyspark"], a["jar"]]
    assert trim_path(path) == [a["user"], *_folders()]


def test_another_pysparks_zip_keeps_the_path(archives, tmp_path):
    other = _zip(tmp_path / "other" / "pyspark.zip", {"pyspark/version.py": "__version__ = '3.5.0'\n"})
    path = [archives["py4j"], other, archives["jar"], *_folders()]
    assert trim_path(path) == path


def test_without_an_installed_pyspark_the_path_stays(archives, tmp_path):
    path = [archives["py4j"], archives["pyspark"], archives["jar"], str(tmp_path)]
    assert trim_path(path) == path


@pytest.mark.parametrize("type_name,values", [
    ("string", ["bench", "", "héllo"]), ("binary", [b"\x00\x01", b""]), ("int32", [0, -7, 2**31 - 1]),
    ("int64", [2**40, -1]), ("float64", [1.5, 1e300]), ("string", []),
])
def test_arrow_values_equal_pyarrows_own(type_name, values):
    import pyarrow as pa

    from pylog.spark.arrow_values import array, repeat

    t = getattr(pa, type_name)()
    got = array(values, t)
    got.validate(full=True)
    assert got.equals(pa.array(values, t))
    if values:
        rep = repeat(values[0], t, 5)
        rep.validate(full=True)
        assert rep.equals(pa.array([values[0]] * 5, t))
    with pytest.raises(TypeError, match="not bool"):
        array([True], pa.bool_())


_TASK = """
import json, sys
from pylog.spark.export import _cast_into
from pylog.spark.export_tables import file_writer
from pylog.spark.log_plan import ReadOptions, plan_log_dir
from pylog.spark.log_rows import arrow_schema, read_task
import pyarrow.parquet as pq
(plan,) = plan_log_dir(sys.argv[1], ReadOptions(topics=("t",)))
write = _cast_into(file_writer(sys.argv[2], "", [], False, "run"), arrow_schema())
files = [r for task in plan.tasks for b in write(read_task(task)) for r in b.to_pylist()]
pandas = "pandas" in sys.modules  # reading the file back below may import it
rows = pq.read_table(sys.argv[2] + "/" + files[0]["path"]).to_pylist()
print(json.dumps({"pandas": pandas, "files": files,
                  "rows": [[r["topic"], r["partition"], r["offset"], r["key"].decode(), len(r["headers"])] for r in rows]}))
"""


def test_a_fused_export_task_imports_no_pandas(tmp_path):
    from pylog.core.config import TOPIC_CONFIGS
    from pylog.storage.log import Log

    d = tmp_path / "logs" / "t-3"
    d.mkdir(parents=True)
    (d / "00000000000000000000.log").write_bytes(batch(0, [(b"a", b"1", []), (b"b", b"2", [])]))
    Log(d, TOPIC_CONFIGS.resolve({}), had_clean_shutdown=False, fsync=False).close()
    res = subprocess.run([sys.executable, "-c", _TASK, str(tmp_path / "logs"), str(tmp_path / "out")],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["rows"] == [["t", 3, 0, "a", 0], ["t", 3, 1, "b", 0]]
    assert [(f["rows"], f["partition_values"]) for f in doc["files"]] == [(2, "{}")]
    assert doc["pandas"] is False, "a fused task imported pandas (pyarrow's conversion from Python objects)"


@pytest.mark.parametrize("master,conf,how,expected", [
    ("local[2]", {}, "driver", "pylog.spark.local_daemon"),
    ("local-cluster[2,1,1024]", {}, "driver", "pylog.spark.local_daemon"),
    ("local[2]", {"spark.python.daemon.module": "pyspark.daemon"}, "driver", None),  # the user's wins
    ("local[2]", {}, "given", None),  # PYSPARK_PYTHON or spark.pyspark.python: may lack pylog
    ("spark://h:7077", {}, "probe", None),
])
def test_which_sessions_get_pylogs_daemon(master, conf, how, expected):
    from pylog.spark.local_daemon import session_conf

    got = session_conf(master, conf, how)
    assert got == ({"spark.python.daemon.module": expected} if expected else {})
