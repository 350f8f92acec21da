"""groups describe: lag in time, rates and catch-up estimate (embedded broker + a librdkafka group)."""
from __future__ import annotations

import json
import re
import time

from support.client_fixtures import pylog_cli
from pylog.commands.group_lag import add_lag_figures, human_duration, summary_line
from pylog.core.client import Producer


def test_time_lag_is_age_of_next_record_and_idle_group_is_not_catching_up(pylog_broker):
    from confluent_kafka import Consumer, TopicPartition

    pylog_broker.create_topic("lagging", partitions=2)
    now = int(time.time() * 1000)
    with Producer({"bootstrap.servers": pylog_broker.bootstrap}) as p:
        for i in range(10):  # partition 0: records 10 minutes old, one second apart
            p.send("lagging", b"x", partition=0, timestamp=now - 600_000 + i * 1000)
        for i in range(4):
            p.send("lagging", b"y", partition=1, timestamp=now)
        p.flush(30)
    c = Consumer({"bootstrap.servers": pylog_broker.bootstrap, "group.id": "slow"})
    c.commit(offsets=[TopicPartition("lagging", 0, 5), TopicPartition("lagging", 1, 4)], asynchronous=False)
    c.close()
    r = pylog_cli("groups", "describe", "slow", "-b", pylog_broker.bootstrap, "--json", "--rate-window", "0.5")
    assert r.returncode == 0, r.stderr
    g = json.loads(r.stdout)[0]
    rows = {row["partition"]: row for row in g["offsets"]}
    checked_at = int(time.time() * 1000)
    # next record to consume on partition 0 is offset 5, stamped now-600s+5s
    assert rows[0]["lag"] == 5
    assert checked_at - (now - 595_000) - 60_000 <= rows[0]["lag_ms"] <= checked_at - (now - 595_000)
    assert rows[1]["lag"] == 0 and rows[1]["lag_ms"] == 0
    assert rows[0]["consume_rate"] == 0 and g["lag"]["catch_up_s"] is None
    assert g["lag"]["lag"] == 5 and g["lag"]["max_lag_ms"] == rows[0]["lag_ms"]
    human = pylog_cli("groups", "describe", "slow", "-b", pylog_broker.bootstrap, "--rate-window", "0.5")
    assert human.returncode == 0
    assert "TIME-LAG" in human.stdout and "not catching up" in human.stdout
    # ten minutes minus five seconds, plus however long the test took so far
    assert re.search(r"^lag 5 records, (9m5\d|1\dm\d\d)s behind; consuming 0\.0/s, produced 0\.0/s \(over 0\.5s\); "
                     r"not catching up$", human.stdout, re.M), human.stdout


def test_rates_and_catch_up_estimate():
    before = [{"topic": "t", "partition": 0, "current_offset": 100, "log_end_offset": 1000, "lag": 900}]
    after = [{"topic": "t", "partition": 0, "current_offset": 300, "log_end_offset": 1100, "lag": 800}]
    totals = add_lag_figures(before, after, 2.0, {("t", 0): 1_000}, 61_000)
    assert after[0]["consume_rate"] == 100 and after[0]["produce_rate"] == 50
    assert after[0]["lag_ms"] == 60_000
    assert totals["catch_up_s"] == 800 / (100 - 50)
    assert summary_line(totals) == ("lag 800 records, 1m00s behind; consuming 100.0/s, produced 50.0/s (over 2.0s); "
                                    "caught up in about 16.0s")
    assert human_duration(3_723_000) == "1h02m" and human_duration(90_000_000) == "1d01h"
