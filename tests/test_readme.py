"""README's examples, run in order in a temporary directory against `pylog broker start`:
what a newcomer types must work as written.

Every indented code block of README.md runs: shell blocks with bash (-e -o pipefail),
Python blocks with this Python. `pylog broker start` lines start the test's broker
(log dir ./pylog-data, a free port standing in for 127.0.0.1:9092, which every block
has replaced; PYLOG_BOOTSTRAP_SERVERS points at it); `pip install` is already done.
A block that cannot run here says why in README itself, in the comment
`<!-- readme-test: skip (REASON) -->` before it; `<!-- readme-test: stop the broker -->`
stops the broker before the next block, as README tells the reader to;
`<!-- readme-test: pytest -->` runs a Python block as a test file with pytest (its
tests must pass), as a reader who copies it into their suite would.

PYLOG_README_BLOCKS=shell runs the shell blocks only: the install tier (.ci/install-tier) runs
them against plain installs, which lack the Python peers some Python blocks use; the blocks it
leaves out are counted in the assertion, not skipped silently.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from support.broker_fixtures import BrokerProcess

README = Path(__file__).resolve().parents[1] / "README.md"
DIRECTIVE = re.compile(r"<!-- readme-test: (.*?) -->")


def blocks(text: str) -> list[tuple[int, str, str | None]]:
    """(line number, code, directive) for every indented code block, in order."""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        if lines[i].startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            start = i
            code = []
            while i < len(lines) and (lines[i].startswith("    ") or not lines[i].strip()):
                code.append(lines[i][4:])
                i += 1
            directive = None
            j = start - 1
            while j >= 0 and not lines[j].strip():
                j -= 1
            m = DIRECTIVE.search(lines[j]) if j >= 0 else None
            if m:
                directive = m.group(1)
            out.append((start + 1, "\n".join(code).strip("\n"), directive))
        else:
            i += 1
    return out


def kind(code: str) -> str | None:
    first = next(x for x in code.splitlines() if x.strip()).lstrip()
    if first.startswith(("from ", "import ", "def ", "with ")):
        return "python"
    if re.match(r"(pylog|printf|echo|kcat|cat|pip|for|kafka-)\b", first):
        return "shell"
    return None


BLOCK_TIMEOUT = 120  # a block still running then is an example that waits forever


@pytest.mark.timeout(900)
def test_readme_examples_run_in_order(tmp_path):
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    broker: BrokerProcess | None = None
    ran, skipped = [], []
    shell_only = os.environ.get("PYLOG_README_BLOCKS", "all") == "shell"
    not_shell = []
    try:
        for line, code, directive in blocks(README.read_text(encoding="utf-8")):
            if directive and directive.startswith("skip"):
                assert re.match(r"skip \(.+\)$", directive), f"README line {line}: a skip needs a reason"
                skipped.append(line)
                continue
            if directive == "stop the broker":
                assert broker is not None, f"README line {line}: no broker to stop"
                broker.stop_clean()
                broker = None
                env.pop("PYLOG_BOOTSTRAP_SERVERS", None)
            elif directive is not None and directive != "pytest":
                raise AssertionError(f"README line {line}: unknown directive {directive!r}")
            how = kind(code)
            assert how, f"README line {line}: neither shell nor Python; run it or mark it skip (REASON)"
            if shell_only and how != "shell":
                not_shell.append(line)
                continue
            keep = []
            for x in code.splitlines():
                if "pylog broker start" in x:
                    if broker is None:
                        broker = BrokerProcess(tmp_path / "pylog-data").start()
                        env["PYLOG_BOOTSTRAP_SERVERS"] = broker.bootstrap
                    continue
                if x.lstrip().startswith("pip install"):
                    continue
                keep.append(x)
            code = "\n".join(keep).strip()
            if not code:
                continue
            if broker is not None:
                code = code.replace("127.0.0.1:9092", broker.bootstrap)
            cmd = ["bash", "-e", "-o", "pipefail", "-c", code] if how == "shell" else [sys.executable, "-c", code]
            if directive == "pytest":
                test_file = tmp_path / f"test_readme_line{line}.py"
                test_file.write_text(code + "\n")
                cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)]
            try:
                r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=BLOCK_TIMEOUT)
            except subprocess.TimeoutExpired as e:
                raise AssertionError(f"README line {line} still running after {BLOCK_TIMEOUT} s (an example that "
                                     f"waits for input or never exits?):\n{code}\n--- stderr\n"
                                     f"{(e.stderr or b'')[-3000:]!r}") from None
            assert r.returncode == 0 and "Traceback" not in r.stderr, \
                f"README line {line} failed ({r.returncode}):\n{code}\n--- stdout\n{r.stdout[-3000:]}\n" \
                f"--- stderr\n{r.stderr[-3000:]}"
            ran.append(line)
    finally:
        if broker is not None:
            broker.stop_clean()
    assert len(ran) >= 10, (ran, skipped)
    assert not shell_only or len(not_shell) <= 6, ("README has more Python blocks than the shell-only run expects", not_shell)
