"""Samples over time: the broker's totals (when the broker is pylog's) turned into rates,
and every group's total lag, taken by one background thread."""
from __future__ import annotations

import json
import logging
import threading
import time
import urllib.request
from collections import deque

log = logging.getLogger("pylog.console")
POINTS = 720
RATES = ("messages_in", "bytes_in", "bytes_out", "requests")


def health_source(metrics_url: str):
    """A snapshot source reading a pylog broker's metrics listener (/health: its status JSON)."""
    url = metrics_url.rstrip("/") + "/health"

    def read() -> dict:
        with urllib.request.urlopen(url, timeout=5) as r:  # noqa: S310 - the URL the user gave
            return json.loads(r.read())
    return read


def share_source(metrics_url: str):
    """In-flight records of a group's share-partitions, from a pylog broker's metrics listener."""
    from urllib.parse import quote

    def read(group: str):
        with urllib.request.urlopen(f"{metrics_url.rstrip('/')}/share-groups/{quote(group, safe='')}",
                                    timeout=5) as r:  # noqa: S310
            return json.loads(r.read())["share_partitions"]
    return read


class BrokerHistory:
    """The broker's status snapshots over time: per-second rates of its totals, connections,
    partitions and log-dir sizes."""

    def __init__(self, source):
        self.source = source  # () -> the status dict `pylog broker status --json` prints
        self.points: deque = deque(maxlen=POINTS)
        self.last: dict | None = None
        self.lock = threading.Lock()

    def sample(self) -> None:
        snap = self.source()
        now = time.time()
        totals = snap.get("totals") or {}
        with self.lock:
            prev = self.points[-1] if self.points else None
            point = {"t": round(now, 3), "totals": totals,
                     "connections": sum(x.get("connections", 0) for x in snap.get("listeners") or []),
                     "partitions": snap.get("partitions", 0), "groups": snap.get("groups", 0)}
            for k in RATES:
                if prev is not None and now > prev["t"]:
                    point[k] = max(0.0, (totals.get(k, 0) - prev["totals"].get(k, 0)) / (now - prev["t"]))
                else:
                    point[k] = 0.0
            self.points.append(point)
            self.last = snap

    def view(self) -> dict:
        with self.lock:
            pts = list(self.points)
            last = self.last
        series = {"t": [p["t"] for p in pts]}
        for k in (*RATES, "connections", "partitions"):
            series[k] = [p[k] for p in pts]
        return {"status": last, "series": series}


class Sampler(threading.Thread):
    """Calls each job every `interval` seconds until stopped (a failing job is logged and retried)."""

    def __init__(self, jobs, interval: float):
        super().__init__(name="pylog-console-sampler", daemon=True)
        self.jobs = list(jobs)
        self.interval = interval
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.is_set():
            began = time.monotonic()
            for job in self.jobs:
                try:
                    job()
                except Exception as e:  # noqa: BLE001 - the next tick tries again
                    log.debug("console sampler: %s", e)
            # a big cluster's sample takes a while: rest at least twice as long, so that the
            # pages asked for meanwhile are not answered in its shadow
            self.stopped.wait(max(self.interval, 2 * (time.monotonic() - began)))

    def stop(self) -> None:
        self.stopped.set()
