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
