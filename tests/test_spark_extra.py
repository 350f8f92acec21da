"""Spark is an extra: the base install stays small, the Spark commands say in one line
how to get it, and spark-ingest checks its inputs before starting Spark."""
from __future__ import annotations

import importlib.util
import os
import py_compile
import subprocess
import sys
import zipfile

import pytest

from pylog.spark.ingest import expand_inputs
from pylog.spark.bytecode import zipped_pyc
from pylog.spark.shipenv import closure_size, dependency_closure, runtime_file
from pylog.core.errors import UsageError
from support.cli import pylog


def test_base_install_is_small_and_without_spark():
    base = dependency_closure(roots=(("pylog", ()),), skip=())
    names = {d.metadata["Name"].lower() for d in base}
    assert not names & {"pyspark", "pyarrow", "pandas", "numpy", "py4j"}, names
    assert {"click", "rich", "lz4", "zstandard", "crc32c", "cramjam"} <= names
    # what `pip install .` puts in site-packages besides pylog itself
    assert closure_size(base) < 200e6


def test_spark_extra_brings_spark():
    names = {d.metadata["Name"].lower() for d in dependency_closure(skip=())}
    assert {"pyspark", "pyarrow", "pandas"} <= names


def test_shipped_environment_leaves_out_what_no_import_reads():
    # `pack_environment` packs each distribution's files that pass runtime_file
    kept = ["pandas/core/frame.py", "pyarrow/libarrow.so.2600", "pyarrow/lib.cpython-311-x86_64-linux-gnu.so",
            "numpy/testing/__init__.py", "pyarrow/libarrow_substrait.so.2600", "pandas-2.3.3.dist-info/RECORD",
            "pyarrow/libarrow_python.so.2600", "pyarrow/libarrow_python_parquet_encryption.so.2600",
            "zstandard/backend_c.cpython-311-x86_64-linux-gnu.so", "pyarrow/_fs.cpython-311-x86_64-linux-gnu.so"]
    left = ["pandas/tests/frame/test_api.py", "numpy/_core/include/numpy/ndarrayobject.h", "pyarrow/include/arrow/api.h",
            "pyarrow/lib.pyx", "pyarrow/lib.pxd", "pyarrow/src/arrow/python/common.cc", "pandas/__pycache__/x.pyc",
            "pyarrow/libarrow_flight.so.2600", "pyarrow/libarrow_python_flight.so.2600.1.0",
            "pyarrow/_flight.cpython-311-x86_64-linux-gnu.so", "../../bin/f2py", "pyarrow/libarrow_s3.so.2600",
            "pyarrow/_s3fs.cpython-311-x86_64-linux-gnu.so", "pyarrow/libarrow_python.so",
            "pyarrow/libarrow_python.so.2600.1.0", "pyarrow/libarrow_python_parquet_encryption.so",
            "pyarrow/_pyarrow_cpp_tests.cpython-311-x86_64-linux-gnu.so", "zstandard/_cffi.cpython-311-x86_64-linux-gnu.so"]
    assert [f for f in kept if not runtime_file(f)] == []
    assert [f for f in left if runtime_file(f)] == []


def test_pylog_zip_carries_the_bytecode_zipimport_takes(tmp_path):
    # every Python worker imports pylog from the zip the session ships: with the bytecode this
    # interpreter compiled beside each source, zipimport compiles nothing (the code objects then
    # name the source they were compiled from, not the zip)
    from pylog.spark import session

    zipped = session.build_pylog_zip(tmp_path)
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import pylog.core.errors as m; "
            "print(m.__file__); print(m.error_name.__code__.co_filename)")
    out = subprocess.run([sys.executable, "-S", "-c", code, zipped], capture_output=True, text=True,
                         timeout=60, check=True).stdout.split()
    assert out[0].startswith(zipped)  # imported from the zip
    assert not out[1].startswith(zipped)  # by its bytecode
    # a source changed since it was compiled: no bytecode for it
    src = tmp_path / "m.py"
    src.write_text("x = 1\n")
    py_compile.compile(str(src), cfile=importlib.util.cache_from_source(str(src)))
    assert zipped_pyc(src, src.read_bytes())[:4] == importlib.util.MAGIC_NUMBER
    src.write_text("x = 22\n")
    assert zipped_pyc(src, src.read_bytes()) is None


def test_spark_home_python_zips_carry_bytecode(tmp_path):
    # Spark's python/lib/*.zip, which the workers of an executor import pyspark from: pylog's Spark
    # home holds copies with each module's bytecode (checked against the zipped source's hash)
    from pylog.spark.bytecode import python_dir_with_bytecode

    src = tmp_path / "src" / "python"
    (src / "lib").mkdir(parents=True)
    (src / "pyspark").mkdir()
    (src / "pyspark" / "shell.py").write_text("")
    with zipfile.ZipFile(src / "lib" / "fake.zip", "w") as zf:
        zf.writestr("fakepkg/__init__.py", "")
        zf.writestr("fakepkg/mod.py", "def f():\n    return 42\n")
        zf.writestr("fakepkg/tests/test_mod.py", "x = 1\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / "python").symlink_to(src)  # a Spark home made before: its python/ swapped in place
    assert python_dir_with_bytecode(home, src) and python_dir_with_bytecode(home, src)
    assert os.readlink(home / "python") == f"python-{sys.implementation.cache_tag}"
    assert (home / "python" / "pyspark" / "shell.py").is_file()
    with zipfile.ZipFile(home / "python" / "lib" / "fake.zip") as zf:
        names = set(zf.namelist())
        pyc, source = zf.read("fakepkg/mod.pyc"), zf.read("fakepkg/mod.py")
    assert "fakepkg/tests/test_mod.pyc" not in names and "fakepkg/__init__.pyc" in names
    assert pyc[:4] == importlib.util.MAGIC_NUMBER and pyc[4:8] == (0b11).to_bytes(4, "little")
    assert pyc[8:16] == importlib.util.source_hash(source)
    code = "import sys; sys.path.insert(0, sys.argv[1]); import fakepkg.mod as m; print(m.f(), m.__file__)"
    out = subprocess.run([sys.executable, "-S", "-c", code, str(home / "python" / "lib" / "fake.zip")],
                         capture_output=True, text=True, timeout=60, check=True).stdout.split()
    assert out[0] == "42" and "fake.zip" in out[1]


def _pylog_without(modules: list[str], *args: str) -> subprocess.CompletedProcess:
    # an interpreter where these imports fail, as in an install without the extra
    code = ("import sys\n" + "".join(f"sys.modules[{m!r}] = None\n" for m in modules)
            + "from pylog.cli.main import main\nmain(sys.argv[1:])\n")
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("command", [["spark-ingest", "x.jsonl", "-t", "t"], ["spark-compaction", "."]])
def test_without_the_extra_one_line(command):
    res = _pylog_without(["pyspark", "pyarrow"], *command)
    assert res.returncode == 1, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "pip install 'pylog[spark]'" in lines[0], res.stderr
    # the rest of pylog works without it
    assert _pylog_without(["pyspark", "pyarrow"], "--help").returncode == 0


def test_globs_expanded_here(tmp_path):
    for name in ("b.jsonl", "a.jsonl", "c.csv"):
        (tmp_path / name).write_text("{}\n")
    got = expand_inputs([str(tmp_path / "*.jsonl"), "s3a://bucket/*.json"])
    assert got == [str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "s3a://bucket/*.json"]
    with pytest.raises(UsageError, match="matches no file"):
        expand_inputs([str(tmp_path / "*.parquet")])


def test_inputs_and_target_checked_before_spark(tmp_path):
    run = pylog

    res = run("spark-ingest", tmp_path / "none-*.jsonl", "-t", "t", "--mode", "segments", "--log-dir", tmp_path)
    assert res.returncode == 2 and "matches no file" in res.stderr and "starting Spark" not in res.stderr
    (tmp_path / "a.jsonl").write_text('{"k": 1}\n')
    # a topic that is not there and no --partitions: said without starting Spark
    res = run("spark-ingest", tmp_path / "a.jsonl", "-t", "t", "--mode", "segments", "--log-dir", tmp_path / "l")
    assert res.returncode == 2 and "give --partitions N" in res.stderr and "starting Spark" not in res.stderr
    # no Java: said before the topic is created
    env = dict(os.environ, JAVA_HOME="/nonexistent", PATH=os.path.dirname(sys.executable))
    res = run("spark-ingest", tmp_path / "a.jsonl", "-t", "t", "--mode", "segments", "--log-dir", tmp_path / "m",
              "--partitions", 1, env=env)
    assert res.returncode == 1 and "needs Java 17" in res.stderr and "starting Spark" not in res.stderr
    assert not (tmp_path / "m").exists()
