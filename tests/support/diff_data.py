"""Topics filled for the diff tests."""
from __future__ import annotations

import time

from pylog.core.client import Producer


# A minute ago, fixed for the run. Not a fixed date: records older than the broker's retention.ms (7
# days) go at its next retention check (every 5 minutes), under a diff that is reading them.
TS = int(time.time()) * 1000 - 60_000


def fill(bootstrap, topic, records, partition=0):
    """(key, value, headers) records with fixed timestamps, so two fills are identical."""
    with Producer({"bootstrap.servers": bootstrap, "linger.ms": 0}) as p:
        for i, (k, v, h) in enumerate(records):
            p.send(topic, v, key=k, partition=partition, timestamp=TS + i, headers=h)
        p.flush(30)


def recs(n, **changes):
    out = [(f"k{i % 10}".encode(), f"v{i}".encode(), [("h", b"1")]) for i in range(n)]
    for i, r in changes.items():
        out[int(i[1:])] = r
    return out
