"""Rules of the test suite itself: shared helpers in tests/support, one pylog() helper, tiers."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from support.source_ast import parse_file

pytestmark = pytest.mark.source  # the checkout's text only (tests/support/tiers.py)

TESTS = Path(__file__).resolve().parent


def _modules():
    for path in sorted(TESTS.rglob("*.py")):
        if "node_modules" in path.parts or "fixtures" in path.parts:
            continue
        yield path, parse_file(path)


def test_no_test_module_imports_another():
    bad = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            bad += [f"{path.relative_to(TESTS)}: {n}" for n in names if n.split(".")[-1].startswith("test_")]
    assert not bad, "shared test code belongs in tests/support/:\n" + "\n".join(bad)


def test_source_tests_import_no_pylog():
    """A module marked `source` checks the checkout's text: pylog imported in it would be the
    installed package, which the install tier's runs (that leave such modules out) must test."""
    bad = []
    for path, tree in _modules():
        marked = any(isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "pytestmark" for t in n.targets)
                     and "mark.source" in ast.unparse(n.value) for n in tree.body)
        if not marked:
            continue
        for node in ast.walk(tree):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            bad += [f"{path.relative_to(TESTS)}: {n}" for n in names if n.split(".")[0] == "pylog"]
    assert not bad, "a `source` test imports pylog:\n" + "\n".join(bad)


def test_pylog_subprocesses_go_through_support_cli():
    """Only tests/support/cli.py runs the `pylog` command line as a subprocess (brokers aside)."""
    bad = []
    for path, tree in _modules():
        if path == TESTS / "support" / "cli.py":
            continue
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("run", "check_output") and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "subprocess"):
                continue
            consts = [c.value for c in ast.walk(node) if isinstance(c, ast.Constant) and isinstance(c.value, str)]
            if "pylog.cli" in consts and "broker" not in consts:
                bad.append(f"{path.relative_to(TESTS)}:{node.lineno}")
    assert not bad, "use support.cli.pylog():\n" + "\n".join(bad)


# one `pytest --collect-only` run that prints each collected test's node id and tier marks
_LIST_MARKS = """
import sys, pytest
class ListMarks:
    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items):
        for item in items:
            print("MARKS", item.nodeid, ",".join(sorted({m.name for m in item.iter_markers()})))
sys.exit(pytest.main(sys.argv[1:], plugins=[ListMarks()]))
"""


def _collect_start(*args: str, marks: bool = False) -> subprocess.Popen:
    head = ["-c", _LIST_MARKS] if marks else ["-m", "pytest"]
    return subprocess.Popen([sys.executable, *head, "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider",
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=TESTS.parent)


def _collect_end(p: subprocess.Popen) -> list[str]:
    """The node ids a `--collect-only -q` run listed (or the MARKS lines of a marks=True run)."""
    out, err = p.communicate(timeout=300)
    last = out.strip().splitlines()[-1]
    assert "collected" in last or "no tests" in last, out[-2000:] + err[-2000:]
    if "MARKS " in out:
        return [line for line in out.splitlines() if line.startswith("MARKS ")]
    return [line for line in out.splitlines() if "::" in line]


def test_tiers_follow_what_a_test_uses():
    files = ["tests/test_kafka_harness.py", "tests/test_records_batch.py", "tests/test_broker_kafka_python.py"]
    # two collections at once: the fast tier (`-m fast`, as README runs it), and every test with its marks
    fast_run, all_run = _collect_start("-m", "fast", *files), _collect_start(*files, marks=True)
    fast = _collect_end(fast_run)
    marks: dict[str, list[set[str]]] = {}
    for line in _collect_end(all_run):
        nodeid, names = line.removeprefix("MARKS ").rsplit(" ", 1)
        marks.setdefault(nodeid.split("::")[0], []).append(set(names.split(",")))
    in_fast = {f: sum(1 for n in fast if n.startswith(f + "::")) for f in files}
    # a test that starts Apache Kafka is jvm and not fast; a pure codec test is fast
    harness = marks["tests/test_kafka_harness.py"]
    assert harness and all("jvm" in m and "fast" not in m for m in harness), harness
    assert in_fast["tests/test_kafka_harness.py"] == 0
    n = len(marks["tests/test_records_batch.py"])
    assert n > 0 and in_fast["tests/test_records_batch.py"] == n
    # a test that starts `pylog broker start` is broker_process
    brokers = marks["tests/test_broker_kafka_python.py"]
    assert brokers and all("broker_process" in m and "fast" not in m for m in brokers), brokers
    assert in_fast["tests/test_broker_kafka_python.py"] == 0


def test_xdist_keeps_a_module_on_one_worker():
    """Under README's `--dist loadgroup` every test id carries its group and a module's tests all
    run on one worker, so its module-scoped brokers and Kafka nodes start once."""
    import re
    r = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-v", "-p", "no:cacheprovider",
                        "tests/test_config.py", "tests/test_batch_walker.py"],
                       capture_output=True, text=True, cwd=TESTS.parent, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    workers: dict[str, set[str]] = {}
    for worker, nodeid in re.findall(r"^\[(gw\d+)\] \[ *\d+%\] PASSED (\S.*?) *$", r.stdout, re.M):
        module = nodeid.split("::")[0].rsplit("/", 1)[-1].removesuffix(".py")
        assert nodeid.endswith("@" + module), nodeid
        workers.setdefault(module, set()).add(worker)
    assert set(workers) == {"test_config", "test_batch_walker"}, r.stdout[-3000:]
    assert all(len(w) == 1 for w in workers.values()), workers


def test_subprocesses_reuse_pylog_compiled():
    """A Python subprocess of the suite (a `pylog` command, a broker, a member) loads pylog's compiled
    bytecode instead of compiling the sources again, also where PYTHONDONTWRITEBYTECODE is set
    (conftest.py then keeps it under a pycache prefix in the temp dir)."""
    code = ("import importlib.util, os, pylog.broker.node.broker as m; "
            "print(os.path.exists(importlib.util.cache_from_source(m.__file__)))")
    for _ in range(2):  # the first may be the one that writes it
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.strip() == "True", r.stdout
