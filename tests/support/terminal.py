"""Run `pylog` with its stdout on a pseudo-terminal, for tests of what a terminal shows."""
from __future__ import annotations

import os
import pty
import select
import subprocess
import sys


def pylog_on_terminal(*args, columns: int = 80, timeout: float = 60) -> tuple[int, bytes]:
    """(exit status, bytes written to a terminal `columns` wide) of `pylog ARGS`."""
    master, slave = pty.openpty()
    env = dict(os.environ, COLUMNS=str(columns), LINES="50", TERM="xterm")
    p = subprocess.Popen([sys.executable, "-m", "pylog.cli", *map(str, args)], stdout=slave,
                         stderr=subprocess.PIPE, env=env)
    os.close(slave)
    data = b""
    while True:
        ready, _, _ = select.select([master], [], [], timeout)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        data += chunk
    p.wait(timeout)
    os.close(master)
    return p.returncode, data
