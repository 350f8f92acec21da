"""Rules of the test suite itself: shared helpers in tests/support, one pylog() helper, tiers."""
from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _modules():
    for path in sorted(TESTS.rglob("*.py")):
        if "node_modules" in path.parts or "fixtures" in path.parts:
            continue
        yield path, ast.parse(path.read_text())


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


def _collected(*args: str) -> int:
    r = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider",
                        *args], capture_output=True, text=True, cwd=TESTS.parent, timeout=300)
    last = r.stdout.strip().splitlines()[-1]
    assert "collected" in last or "no tests" in last, r.stdout[-2000:] + r.stderr[-2000:]
    return 0 if "no tests" in last else int(last.split()[0].split("/")[0])


def test_tiers_follow_what_a_test_uses():
    # a test that starts Apache Kafka is jvm and not fast; a pure codec test is fast
    assert _collected("-m", "jvm", "tests/test_kafka_harness.py") > 0
    assert _collected("-m", "fast", "tests/test_kafka_harness.py") == 0
    n = _collected("tests/test_records_batch.py")
    assert n > 0 and _collected("-m", "fast", "tests/test_records_batch.py") == n
    # a test that starts `pylog broker start` is broker_process
    assert _collected("-m", "broker_process", "tests/test_broker_kafka_python.py") > 0
    assert _collected("-m", "fast", "tests/test_broker_kafka_python.py") == 0


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
