"""One checker run: start (or reach) the cluster, create the topics, run the workloads with
faults for the duration, let the readers drain, then analyse the history and write the results.

The history is on disk from the first operation on; the analysis reads it back from there, as
`pylog check-cluster analyze DIR` does for a run that crashed.
"""
from __future__ import annotations

import json
import logging
import secrets
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from pylog.checker.analysis import analyze_dir
from pylog.checker.clients import Values
from pylog.checker.faults import Faults, load_rules
from pylog.checker.history import HistoryWriter
from pylog.checker.local import LocalKafka, LocalPylog, kafka_classpath
from pylog.checker.members import Member, ShareMember
from pylog.checker.report import write_report
from pylog.checker.workloads import Reader, Transformer, TxnWriter, Writer
from pylog.core.config import CONSUMER_CONFIGS, PRODUCER_CONFIGS

log = logging.getLogger("pylog.checker")
WORKLOADS = ("queue", "txn", "groups", "share")
RESULTS_FILE = "results.json"
IDLE_S = 3.0  # a drained reader: no record for this long


@dataclass
class RunConfig:
    workloads: list[str]
    out: Path
    duration: float = 30.0
    bootstrap: str | None = None
    local: str | None = None
    client_props: dict = field(default_factory=dict)
    faults: list[str] = field(default_factory=list)
    fault_commands: dict = field(default_factory=dict)
    heal_commands: dict = field(default_factory=dict)
    fault_rules: str | None = None
    metrics_url: str | None = None
    fault_interval: float = 5.0
    fault_hold: float = 3.0
    rate: float = 50.0
    drain: float = 60.0
    replication_factor: int = 1
    kafka_home: str | None = None
    kafka_classpath: str | None = None


class Run:
    def __init__(self, config: RunConfig):
        self.config = config
        self.out = Path(config.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.history = HistoryWriter(self.out)
        self.values = Values()
        self.prefix = f"check-{secrets.token_hex(3)}"
        self.client_props = dict(config.client_props)
        self.bootstrap = config.bootstrap
        self.draining = False
        self.workers: list = []
        self.topics: dict[str, int] = {}
        self.gap = 0.0
        self.broker = None
        self.scratch = None

    def pace(self) -> None:
        if self.gap:
            time.sleep(self.gap)

    def start_broker(self) -> None:
        cfg = self.config
        self.scratch = Path(tempfile.mkdtemp(prefix="pylog-check-"))
        if cfg.local == "pylog":
            self.broker = LocalPylog(self.scratch, faults="rules" in cfg.faults)
        else:
            self.broker = LocalKafka(self.scratch, kafka_classpath(cfg.kafka_home, cfg.kafka_classpath))
        self.broker.start()
        self.bootstrap = self.broker.bootstrap

    def plan(self) -> None:
        p = self.prefix
        for name in self.config.workloads:
            if name == "queue":
                self.topics[f"{p}-queue"] = 4
                self.workers += [Writer(self, 0, f"{p}-queue", 4), TxnWriter(self, 0, f"{p}-queue", 4),
                                 Reader(self, 0, f"{p}-queue", 4), Reader(self, 1, f"{p}-queue", 4)]
            elif name == "txn":
                self.topics.update({f"{p}-txn-in": 2, f"{p}-txn-out": 2})
                self.workers += [Writer(self, 1, f"{p}-txn-in", 2, role="txn-feeder"),
                                 Transformer(self, 0, f"{p}-txn-in", f"{p}-txn-out", 2, f"{p}-txn"),
                                 Transformer(self, 1, f"{p}-txn-in", f"{p}-txn-out", 2, f"{p}-txn"),
                                 Reader(self, 2, f"{p}-txn-out", 2, role="txn-reader")]
            elif name == "groups":
                self.topics[f"{p}-groups"] = 4
                self.workers += [Writer(self, 2, f"{p}-groups", 4, role="group-feeder")]
                self.workers += [Member(self, n, f"{p}-groups", f"{p}-groups") for n in range(3)]
            elif name == "share":
                self.topics[f"{p}-share"] = 2
                self.workers += [ShareMember(self, n, f"{p}-share", f"{p}-share") for n in range(2)]
                self.workers += [Writer(self, 3, f"{p}-share", 2, role="share-feeder")]
        writers = [w for w in self.workers if not w.reads]
        self.gap = len(writers) / self.config.rate if self.config.rate > 0 else 0.0

    def create_topics(self) -> None:
        from pylog.core.client import Admin
        common = {k: v for k, v in self.client_props.items() if k in PRODUCER_CONFIGS and k in CONSUMER_CONFIGS}
        admin = Admin({**common, "bootstrap.servers": self.bootstrap})
        try:
            for name, partitions in self.topics.items():
                admin.create_topic(name, partitions=partitions, replication_factor=self.config.replication_factor)
            for name in self.topics:
                _wait(lambda: name in admin.list_topics(), 30, f"topic {name} to be created")
            if "share" in self.config.workloads:  # the share partitions start at the first record
                admin.alter_group_configs(f"{self.prefix}-share", {"share.auto.offset.reset": "earliest"})
        finally:
            admin.close()

    def execute(self) -> dict:
        cfg = self.config
        faults = None
        try:
            if cfg.local:
                self.start_broker()
            self.plan()
            self.create_topics()
            readers = [w for w in self.workers if w.reads]
            writers = [w for w in self.workers if not w.reads]
            for w in readers:
                w.start()
            sharers = [w for w in readers if isinstance(w, ShareMember)]
            _wait(lambda: all(s.polls >= 2 for s in sharers), 60, "the share group's members to poll")
            for w in writers:
                w.start()
            faults = Faults(self.history, cfg.faults, self.broker, cfg.fault_commands, cfg.heal_commands,
                            load_rules(cfg.fault_rules) if cfg.fault_rules else None,
                            cfg.metrics_url or getattr(self.broker, "metrics_url", None),
                            cfg.fault_interval, cfg.fault_hold)
            faults.start()
            end = time.monotonic() + cfg.duration
            while time.monotonic() < end:
                time.sleep(min(0.5, max(0.0, end - time.monotonic())))
            faults.finish()
            self.stop(writers)
            self.draining = True
            for w in readers:
                w.idle_since = time.monotonic()
            deadline = time.monotonic() + cfg.drain
            while time.monotonic() < deadline and any(time.monotonic() - w.idle_since < IDLE_S for w in readers):
                time.sleep(0.2)
            self.stop(readers)
        finally:
            if faults is not None:
                faults.finish()
            self.stop(self.workers)
            self.history.close()
            if self.broker is not None:
                self.broker.stop()
            if self.scratch is not None:
                shutil.rmtree(self.scratch, ignore_errors=True)
        results = analyze_dir(self.out)
        results["run"] = {"workloads": cfg.workloads, "duration": cfg.duration, "faults": cfg.faults,
                          "faults_injected": faults.count if faults else 0,
                          "fault_errors": faults.errors if faults else [],
                          "target": f"local {cfg.local}" if cfg.local else cfg.bootstrap,
                          "client_replacements": sum(w.failures for w in self.workers),
                          "client_failures": [r for w in self.workers for r in w.reasons][:20]}
        finish(self.out, results)
        return results

    @staticmethod
    def stop(workers) -> None:
        for w in workers:
            w.stop_event.set()
        for w in workers:
            if w.is_alive():
                w.join(30)


def finish(out: Path, results: dict) -> None:
    """results.json and report.html beside the history."""
    (Path(out) / RESULTS_FILE).write_text(json.dumps(results, indent=1, default=str))
    write_report(Path(out), results)


def _wait(cond, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(0.2)


def run(config: RunConfig) -> dict:
    return Run(config).execute()


__all__ = ["RESULTS_FILE", "WORKLOADS", "RunConfig", "finish", "run"]
