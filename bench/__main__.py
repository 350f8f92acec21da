"""Dispatch `python -m bench NAME [args...]` to `bench.NAME.main(argv)`.

Generic on purpose: a new benchmark is a new module with a main(argv).
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import pkgutil
import sys

import bench


def _available() -> list[str]:
    return sorted(m.name for m in pkgutil.iter_modules(bench.__path__) if not m.name.startswith("_"))


def _bytecode_as_installed() -> None:
    """With PYTHONDONTWRITEBYTECODE set, a checkout has no .pyc and every `pylog` process a benchmark
    times compiles its ~250 modules first (0.3 s of CPU, about a whole kcat run); pip compiles them
    when it installs. Compile them once into a pycache prefix in the temp dir (the checkout stays as
    it was, as tests/conftest.py does) that every process started from here inherits."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return
    import compileall
    import tempfile

    prefix = os.environ.get("PYTHONPYCACHEPREFIX") or os.path.join(tempfile.gettempdir(),
                                                                     f"pylog-bench-pycache-{os.getuid()}")
    os.environ["PYTHONPYCACHEPREFIX"] = prefix
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    sys.pycache_prefix, sys.dont_write_bytecode = prefix, False
    for package in ("pylog.cli", "pylog.commands", "pylog.core", "pylog.storage"):
        for path in importlib.util.find_spec(package).submodule_search_locations:
            compileall.compile_dir(path, quiet=1)


def main(argv: list[str]) -> int:
    _bytecode_as_installed()
    # the JVMs of Apache Kafka and Spark run with both compilers here, as their own scripts start
    # them; the tests start them with C1 only (tests/support/kafka_peer.py FULL_JIT_ENV)
    os.environ["PYLOG_JVM_FULL_JIT"] = "1"
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: python -m bench NAME [args...]")
        print("benchmarks: " + ", ".join(_available()))
        return 0 if argv else 2
    name = argv[0].replace("-", "_")  # `spark-export` runs bench/spark_export.py
    if name not in _available():
        print(f"unknown benchmark {name!r}; available: {', '.join(_available())}", file=sys.stderr)
        return 2
    module = importlib.import_module(f"bench.{name}")
    return module.main(argv[1:]) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
