"""Topics filled for the diff tests."""
from __future__ import annotations
from pylog.core.client import Producer


TS = 1_700_000_000_000


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
