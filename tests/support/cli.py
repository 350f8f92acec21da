"""The one way tests run the `pylog` command as a subprocess."""
from __future__ import annotations

import subprocess
import sys


def pylog(*args, input: str | bytes | None = None, env: dict | None = None, timeout: float = 120,
          text: bool = True, check: bool = False) -> subprocess.CompletedProcess:
    """Run `python -m pylog.cli ARGS` (this interpreter, so the checkout under test) and return the
    CompletedProcess (text mode unless text=False); arguments are passed through str()."""
    return subprocess.run([sys.executable, "-m", "pylog.cli", *map(str, args)], input=input, env=env,
                          capture_output=True, text=text, timeout=timeout, check=check)


def pylog_in_process(*args, input: str | None = None) -> subprocess.CompletedProcess:
    """The same command run in this process with click's CliRunner (no interpreter start, ~1 s less
    per call on a loaded machine), answered as `pylog()` answers. For tests that run one command
    many times: keep at least one real subprocess per command for its exit status and stderr."""
    from click.testing import CliRunner

    from pylog.cli.main import cli
    r = CliRunner().invoke(cli, [str(a) for a in args], input=input, catch_exceptions=False)
    return subprocess.CompletedProcess(["pylog", *map(str, args)], r.exit_code, r.stdout, r.stderr)
