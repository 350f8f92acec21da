"""The embedded broker and the pytest fixture serve share groups with no setting."""
from __future__ import annotations

import time

from confluent_kafka import ShareConsumer

from pylog.core.client.share_consumer import ShareConsumer as PylogShareConsumer
from support import share_scenarios as sc


def test_pylog_broker_fixture_serves_share_groups(pylog_broker):
    bs = pylog_broker.bootstrap
    topic, group = sc.fresh(bs, 20)
    got = []
    c = ShareConsumer(pylog_broker.client_config(**{"group.id": group}))
    c.subscribe([topic])
    deadline = time.monotonic() + 60
    try:
        while len(got) < 10 and time.monotonic() < deadline:
            got += [m.offset() for m in c.poll(0.5) if m.error() is None]
    finally:
        c.close()
    p = PylogShareConsumer({"bootstrap.servers": bs, "group.id": group})
    p.subscribe([topic])
    try:
        while len(got) < 20 and time.monotonic() < deadline:
            got += [r.offset for r in p.poll(0.5)]
    finally:
        p.close()
    assert sorted(got) == list(range(20))
