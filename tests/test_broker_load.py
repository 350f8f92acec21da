"""A bounded mixed load in CI: producers, consumers, a churning group and admin calls against one broker
for 20 s (bench/soak.py's workload; `python -m bench soak` runs it longer). No errors, every acknowledged
record read back, and the broker's resident memory within a stated bound."""
from __future__ import annotations

import sys
import urllib.request
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root, for bench/

from bench.soak import request_total, run  # noqa: E402

RSS_BOUND_MIB = 160  # the broker starts at ~40 MiB; the whole run must stay under this
SECONDS = 20  # every check shows in this: several churn cycles and admin rounds, 40,000+ records


@pytest.mark.slow
@pytest.mark.timeout(SECONDS + 240)
def test_mixed_load_has_no_errors_and_bounded_memory(broker_factory):
    b = broker_factory(None, "--set", "metrics.listener=http://127.0.0.1:0",
                       "--set", "group.initial.rebalance.delay.ms=0")
    url = next(x for x in b.stdout_lines if x.strip().startswith("metrics: ")).split()[1].rsplit("/", 1)[0]
    res = run(b.bootstrap, SECONDS, broker_pid=b.proc.pid, producers=2, consumers=2, rate=1500, size=200)
    assert res["errors"] == [], res["errors"]
    assert res["produce_errors"] == res["consume_errors"] == res["admin_errors"] == 0
    assert res["acked"] >= SECONDS * 1000, res  # the load really ran (2 x 1500/s offered)
    assert res["consumed_unique"] == res["acked"]
    assert res["admin_ops"] > 0 and res["churn_cycles"] > 0
    assert res["rss_max_kib"] < RSS_BOUND_MIB * 1024, res
    assert b.alive()
    assert urllib.request.urlopen(url + "/health", timeout=10).status == 200
    assert request_total(url)["requests"] > res["acked"] / 1000
    assert "Traceback" not in b.stderr(None)
