"""The one way tests run the `pylog` command as a subprocess."""
from __future__ import annotations

import subprocess
import sys


def pylog(*args, input: str | bytes | None = None, env: dict | None = None, timeout: float = 120,
          text: bool = True, check: bool = False, python_args: tuple = ()) -> subprocess.CompletedProcess:
    """Run `python [PYTHON_ARGS] -m pylog.cli ARGS` (this interpreter, so the checkout under test) and
    return the CompletedProcess (text mode unless text=False); arguments are passed through str()."""
    return subprocess.run([sys.executable, *python_args, "-m", "pylog.cli", *map(str, args)], input=input,
                          env=env, capture_output=True, text=text, timeout=timeout, check=check)



def pylog_in_process(*args, input: str | None = None) -> subprocess.CompletedProcess:
    """The same command run in this process (pylog's own entry point, with click's CliRunner
    holding stdin, stdout and stderr): no interpreter start, ~1 s less per call on a loaded
    machine; answered as `pylog()` answers, errors formatted and exit codes as the process's.
    For tests that run one command many times: keep at least one real subprocess per command
    for its exit status and stderr."""
    import signal

    from click.testing import CliRunner

    from pylog.cli.main import main
    sigterm = signal.getsignal(signal.SIGTERM)  # main() installs its own handler: this process keeps its
    code = 0
    with CliRunner().isolation(input=input) as (out, err, _):
        try:
            main([str(a) for a in args])
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        finally:
            signal.signal(signal.SIGTERM, sigterm)
            sys.stdout.flush()  # the isolation's text streams over `out` and `err`
            sys.stderr.flush()
        stdout, stderr = out.getvalue().decode(errors="replace"), err.getvalue().decode(errors="replace")
    return subprocess.CompletedProcess(["pylog", *map(str, args)], code, stdout, stderr)
