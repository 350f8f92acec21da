"""The fault scheduler: after each quiet interval, the next fault kind in turn, held for a while
and then healed, each written to the history as an operation of the process "nemesis" (its
invoke when the fault begins, its completion when the cluster is whole again).

Kinds: `kill` (kill -9 the local broker, then restart it), `pause` (SIGSTOP, then SIGCONT),
`rules` (pylog's fault rules from a JSON file, added to a pylog broker's /faults endpoint and
cleared after), and any kind given a user command (`--fault-command KIND=CMD`, healed by
`--heal-command KIND=CMD`), which also replaces the built-in action of kill or pause: so a
Kubernetes or SSH command can kill a remote node.
"""
from __future__ import annotations

import json
import logging
import subprocess
import threading
import urllib.request

from pylog.checker.history import INFO, OK
from pylog.core.errors import UsageError

log = logging.getLogger("pylog.checker")
BUILT_IN = ("kill", "pause", "rules")
NEMESIS = "nemesis"


def check_kinds(kinds, local, commands, rules_file, metrics_url) -> None:
    """A one-line UsageError for a fault the run could not inject."""
    for kind in kinds:
        if kind in commands:
            continue
        if kind in ("kill", "pause") and local is None:
            raise UsageError(f"--fault {kind} needs --local, or --fault-command {kind}=CMD for a cluster given by -b")
        if kind == "rules" and (rules_file is None or (metrics_url is None and local != "pylog")):
            raise UsageError("--fault rules needs --fault-rules FILE and a pylog broker: --local pylog, or "
                             "--metrics-url of a broker started with --allow-faults")
        if kind not in BUILT_IN:
            raise UsageError(f"--fault {kind}: not one of {', '.join(BUILT_IN)} and no --fault-command {kind}=CMD")


class Faults(threading.Thread):
    def __init__(self, history, kinds, broker=None, commands=None, heals=None, rules=None, metrics_url=None,
                 interval=5.0, hold=3.0):
        super().__init__(name="check-faults", daemon=True)
        self.history, self.kinds, self.broker = history, list(kinds), broker
        self.commands, self.heals = dict(commands or {}), dict(heals or {})
        self.rules, self.metrics_url = rules or [], metrics_url
        self.interval, self.hold = interval, hold
        self.stop_event = threading.Event()
        self.errors: list[str] = []
        self.count = 0

    def run(self) -> None:
        n = 0
        while self.kinds and not self.stop_event.wait(self.interval):
            kind = self.kinds[n % len(self.kinds)]
            n += 1
            self.history.invoke(NEMESIS, kind, {"fault": kind})
            try:
                self.inject(kind)
                self.count += 1
                self.history.complete(NEMESIS, OK)
            except Exception as e:  # noqa: BLE001 - a fault that failed is recorded, and the run goes on
                self.errors.append(f"{kind}: {e}")
                log.warning("fault %s failed: %s", kind, e)
                self.history.complete(NEMESIS, INFO, {"fault": kind, "error": str(e)})

    def inject(self, kind: str) -> None:
        if kind in self.commands:
            _shell(self.commands[kind])
            self.stop_event.wait(self.hold)
            if kind in self.heals:
                _shell(self.heals[kind])
        elif kind == "kill":
            self.broker.kill()
            self.stop_event.wait(min(self.hold, 1.0))
            self.broker.start()
        elif kind == "pause":
            self.broker.pause()
            try:
                self.stop_event.wait(self.hold)
            finally:
                self.broker.resume()
        elif kind == "rules":
            ids = [self.call("POST", "/faults", rule)["id"] for rule in self.rules]
            try:
                self.stop_event.wait(self.hold)
            finally:
                for i in ids:
                    self.call("DELETE", f"/faults/{i}")

    def call(self, method: str, path: str, payload=None):
        data = json.dumps(payload).encode() if payload is not None else None
        req = urllib.request.Request(self.metrics_url.rstrip("/") + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"} if data else {})
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def finish(self) -> None:
        """Stop scheduling and wait for the fault in progress to heal."""
        self.stop_event.set()
        self.join(180)


def _shell(command: str) -> None:
    proc = subprocess.run(command, shell=True, capture_output=True, text=True, timeout=120)
    if proc.returncode != 0:
        raise RuntimeError(f"{command!r} exited {proc.returncode}: {' '.join(proc.stderr.split())[-300:]}")


def load_rules(path) -> list[dict]:
    try:
        with open(path) as fh:
            rules = json.load(fh)
    except (OSError, ValueError) as e:
        raise UsageError(f"--fault-rules {path}: {e}") from None
    if not isinstance(rules, list):
        raise UsageError(f"--fault-rules {path}: expected a JSON list of rules")
    return rules
