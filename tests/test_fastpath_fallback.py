"""The pure-Python fallback: forced with PYLOG_PURE_PYTHON=1, and what an install
without a C compiler gets (the build warns, the install succeeds, pylog runs and
says which implementation is active)."""
from __future__ import annotations

import importlib.util
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from support.cli import pylog
from support.extensions import declared

ROOT = Path(__file__).resolve().parents[1]


def run_py(code: str, **env):
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **env})


def test_pure_python_forced_by_the_environment():
    r = run_py("from pylog.cli.main import implementation; from pylog.core.records import batch, framing, varint;"
               "from pylog.core.client import runs; from pylog.storage import log_validator;"
               "from pylog.commands import produce_input;"
               "print(implementation());"
               "print(batch.decode_records is batch.decode_records_py,"
               " framing.check_records is framing.check_records_py,"
               " varint.decode_varint is varint.decode_varint_py, runs.encode_run is runs.encode_run_py,"
               " log_validator.validate_batches is log_validator.validate_batches_py,"
               " produce_input.split_key_value is produce_input.split_key_value_py)", PYLOG_PURE_PYTHON="1")
    assert r.returncode == 0, r.stderr
    first, second = r.stdout.splitlines()
    assert first == "pure Python (forced by PYLOG_PURE_PYTHON)"
    assert second == "True True True True True True"


def test_version_names_the_implementation():
    r = pylog("--version", env={**os.environ, "PYLOG_PURE_PYTHON": "1"})
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[1] == "implementation: pure Python (forced by PYLOG_PURE_PYTHON)"
    r = pylog("--version", env={**os.environ, "PYLOG_PURE_PYTHON": "0"})
    assert r.returncode == 0, r.stderr
    line = r.stdout.splitlines()[1]
    every = ", ".join(declared())
    assert line == f"implementation: compiled (C extensions {every})" or line.startswith(
        "implementation: pure Python (the compiled extension is not installed"), line


def test_debug_says_it_once(tmp_path):
    seg = tmp_path / "00000000000000000000.log"
    seg.write_bytes(b"")
    r = pylog("--debug", "dump-segment", seg, env={**os.environ, "PYLOG_PURE_PYTHON": "1"})
    assert r.stderr.count("implementation: pure Python (forced by PYLOG_PURE_PYTHON)") == 1, r.stderr


def test_records_round_trip_in_pure_python():
    r = run_py("from pylog.core.records import build_batch, RecordBatch;"
               "raw = build_batch([(1000, b'k', b'v', [('h', b'x')]), (1001, None, b'w')]);"
               "print([tuple(r) for r in RecordBatch(raw, verify_crc=True)])", PYLOG_PURE_PYTHON="1")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[(0, 1000, b'k', b'v', (('h', b'x'),)), (1, 1001, None, b'w', ())]"


@pytest.mark.slow
def test_install_without_a_compiler_falls_back(tmp_path):
    """Build a wheel with a C compiler that does not exist: the build warns and succeeds,
    the wheel has no extension, and pylog from it runs in pure Python."""
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
        ".venv", ".git", "tests", "*.so", "build", "*.egg-info", "__pycache__", ".hypothesis", "bench", "man"))
    (src / "man").mkdir()
    env = {**os.environ, "CC": "/nonexistent/cc", "LDSHARED": "/nonexistent/cc -shared", "PIP_NO_INPUT": "1"}
    # the build runs pylog's setup.py the same way in this venv's setuptools: an isolated build
    # environment asked the package index for setuptools first (~10 s, most of this test)
    isolation = ["--no-build-isolation"] if importlib.util.find_spec("setuptools") else []
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", *isolation, "-w", str(tmp_path / "dist"),
                        str(src)],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    wheel, = (tmp_path / "dist").glob("pylog-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.endswith((".so", ".pyd"))], names
    target = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--target", str(target), str(wheel)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    code = ("import pylog.core.fastpath as f, pylog.core.records as r; from pylog.core.records import fastpath as a;"
            "from pylog.core.client import fastpath as b; from pylog.storage import fastpath as c;"
            "from pylog.commands import fastpath as d; assert f.__file__.startswith(%r), f.__file__;"
            "print(f.implementation([m.extension for m in (a, b, c, d)])); print(len(r.build_batch([(1, b'k', b'v')])))"
            % str(target))
    # -S: no site (so no editable install of this checkout); the dependencies from this venv
    # (and the base Python's, which a venv made with --system-site-packages reads its dependencies from)
    deps = os.pathsep.join(dict.fromkeys([*(sysconfig.get_paths()[k] for k in ("purelib", "platlib")),
                                          *site.getsitepackages()]))
    r = subprocess.run([sys.executable, "-S", "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, "PYTHONPATH": str(target) + os.pathsep + deps, "PYLOG_PURE_PYTHON": ""})
    assert r.returncode == 0, r.stderr
    impl, size = r.stdout.splitlines()
    assert impl.startswith("pure Python (the compiled extension is not installed"), impl
    assert int(size) > 61
