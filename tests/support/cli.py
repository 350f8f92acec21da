"""The one way tests run the `pylog` command as a subprocess."""
from __future__ import annotations

import subprocess
import sys


def pylog(*args, input: str | None = None, env: dict | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run `python -m pylog.cli ARGS` (this interpreter, so the checkout under test) and return the
    CompletedProcess in text mode; arguments are passed through str()."""
    return subprocess.run([sys.executable, "-m", "pylog.cli", *map(str, args)], input=input, env=env,
                          capture_output=True, text=True, timeout=timeout)
