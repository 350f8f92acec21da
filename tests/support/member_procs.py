"""Group members run as subprocesses that report JSON lines (assignments, records, close),
shared by the classic and KIP-848 group tests."""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import tempfile
import threading


class MemberProcess:
    """A member subprocess (`python ARGS...`) and what it reported on stdout."""

    def __init__(self, args):
        self.stderr_file = tempfile.TemporaryFile("w+")
        self.proc = subprocess.Popen([sys.executable, *args], stdout=subprocess.PIPE, stderr=self.stderr_file,
                                     text=True)
        self.assignment: list = []
        self.records: list = []
        self.closed = False
        self.ended_by_test = False
        threading.Thread(target=self._pump, daemon=True).start()

    def assigned(self, reported: list) -> list:
        """The assignment as the tests compare it (subclasses normalise the reported form)."""
        return reported

    def _pump(self):
        for line in self.proc.stdout:
            ev = json.loads(line)
            if "assign" in ev:
                self.assignment = self.assigned(ev["assign"])
            elif "rec" in ev:
                self.records.append(tuple(ev["rec"]))
            elif "closed" in ev:
                self.closed = True

    def stderr(self) -> str:
        self.stderr_file.seek(0)
        return self.stderr_file.read()[-3000:]

    def stop(self):
        """SIGTERM: the member commits, leaves the group and exits 0."""
        self.ended_by_test = True
        self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(30)
        assert rc == 0, f"group member exit code {rc}: {self.stderr()}"

    def kill(self):
        self.ended_by_test = True
        self.proc.kill()
        self.proc.wait(10)


def end_members(members):
    """Kill the members still running; fail if one died on its own (a client error in the member)."""
    died = [(m.proc.returncode, m.stderr()) for m in members if not m.ended_by_test and m.proc.poll() is not None]
    for m in members:
        if m.proc.poll() is None:
            m.kill()
    assert not died, f"group member(s) exited on their own: {died}"
