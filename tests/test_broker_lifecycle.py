"""The broker as a subsystem: one handler table from the protocol schemas, and a
lifecycle (Broker.open_storage, Broker.serve) that starts and stops every component."""
from __future__ import annotations

import asyncio
import socket
import sys

import pytest

from pylog.broker.node.broker import Broker
from pylog.broker.api.handlers import HANDLERS
from pylog.broker.node.settings import build_settings
from pylog.core.protocol import SCHEMAS
from pylog.storage import LogManager
from pylog.storage.log_manager import CLEAN_SHUTDOWN_FILE


def _broker(tmp_path, listen="127.0.0.1:0", **props) -> Broker:
    return Broker(build_settings({}, {k.replace("_", "."): v for k, v in props.items()},
                                 (str(tmp_path / "data"),), listen))


def test_the_table_serves_each_api_once_at_its_schema_versions(tmp_path):
    keys = [h.key for h in HANDLERS]
    assert len(keys) == len(set(keys))
    for h in HANDLERS:
        assert SCHEMAS[h.key] is h.schema
    advertised = _broker(tmp_path).api_version_ranges()
    assert [a["api_key"] for a in advertised] == sorted(keys)
    by_key = {h.key: h for h in HANDLERS}
    for a in advertised:
        s = SCHEMAS[a["api_key"]]
        # the schema's range; a handler may list an older floor (Produce from v0, as Kafka 4)
        assert a["max_version"] == s.max_version, s.name
        assert a["min_version"] == by_key[s.key].advertised_min <= s.min_version, s.name
        if by_key[s.key].advertised_min_version is None:
            assert a["min_version"] == s.min_version, s.name


def test_serve_starts_and_stops_every_component(tmp_path):
    b = _broker(tmp_path, log_cleaner_backoff_ms="50")
    b.open_storage()
    assert b.logs.started and b.producer_ids is not None
    assert getattr(b.logs, "cleaner", None) is None  # the broker starts it, in its own order
    seen = {}

    def ready(port):
        gc, tc, sc = b.group_coordinator, b.txn_coordinator, b.share_coordinator
        seen.update(port=port, coordinators=b.coordinators == [gc, tc, sc],
                    ticking=gc._ticker is not None and not gc._ticker.cancelled()
                    and tc._timers and not any(t.cancelled() for t in tc._timers)
                    and sc._ticker is not None and not sc._ticker.cancelled(),
                    cleaning=b.logs.cleaner is not None and b.logs.cleaner.running)
        b.request_stop()

    interval = sys.getswitchinterval()
    asyncio.run(b.serve(ready))
    assert sys.getswitchinterval() == interval  # shortened only while the rest of the table loads
    assert seen["port"] > 0
    assert seen["coordinators"] and seen["ticking"] and seen["cleaning"]
    gc = b.group_coordinator
    assert gc._ticker.cancelled() and gc._retention_timer.cancelled()
    assert all(t.cancelled() for t in b.txn_coordinator._timers)
    assert b.share_coordinator._ticker is None
    assert b.logs.cleaner is None and not b.logs.started
    assert (tmp_path / "data" / CLEAN_SHUTDOWN_FILE).exists()


def test_a_failed_start_still_closes_storage(tmp_path):
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        b = _broker(tmp_path, listen=f"127.0.0.1:{taken.getsockname()[1]}")
        b.open_storage()
        with pytest.raises(OSError):
            asyncio.run(b.serve(lambda port: pytest.fail("the broker should not listen")))
    finally:
        taken.close()
    assert b.group_coordinator is None  # the listener comes first: nothing after it started
    assert (tmp_path / "data" / CLEAN_SHUTDOWN_FILE).exists()
    # the log dir lock is released: another log manager can open the dir
    again = LogManager([str(tmp_path / "data")], b.config)
    again.startup()
    again.shutdown()
