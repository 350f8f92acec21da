"""`pylog verify` on a running broker's log dir gives the stopped dir's verdict."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys

KCAT = shutil.which("kcat") or "/usr/bin/kcat"


def verify(path) -> dict:
    r = subprocess.run([sys.executable, "-m", "pylog.cli.main", "verify", "--json", str(path)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 1), r.stderr
    return json.loads(r.stdout)


def test_verify_live_equals_verify_stopped(broker_factory):
    # small segments and a dense index: inactive segments, and active ones with preallocated indexes
    b = broker_factory(None, "--set", "log.segment.bytes=300000", "--set", "log.index.interval.bytes=1024")
    lines = "".join(f"record {i:06d} " + "x" * 90 + "\n" for i in range(6000))
    for topic, codec in (("live-a", "none"), ("live-b", "lz4")):
        r = subprocess.run([KCAT, "-b", b.bootstrap, "-P", "-t", topic, "-z", codec, "-X", "linger.ms=5", "-X", "batch.size=60000"],
                           input=lines, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
    live = verify(b.log_dir)
    assert live["in_use"] == [str(b.log_dir)]
    assert b.stop() == 0
    stopped = verify(b.log_dir)
    assert stopped["in_use"] == []
    assert (live["verdict"], live["problem_count"]) == (stopped["verdict"], stopped["problem_count"]) == ("clean", 0)

    def totals(report):
        return sorted((i["path"], i["segments"], i["batches"], i["records"]) for i in report["items"])
    assert totals(live) == totals(stopped)
    assert sum(i["records"] for i in stopped["items"]) == 12000
