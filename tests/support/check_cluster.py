"""Running `pylog check-cluster run` from tests, and what a clean run with faults must show."""
from __future__ import annotations

import json

from support.cli import pylog

WORKLOADS = ["queue", "txn", "groups", "share"]


def check(tmp_path, *args, env=None, timeout=420):
    out = tmp_path / "run"
    r = pylog("check-cluster", "run", "--out", out, *args, env=env, timeout=timeout)
    results = json.loads((out / "results.json").read_text()) if (out / "results.json").exists() else None
    return r, results, out


def assert_clean_with_faults(r, results, out, faults):
    assert results is not None, r.stderr
    assert r.returncode == 0, f"{r.stdout}\n{r.stderr}\n{json.dumps(results['anomalies'][:3], indent=1)}"
    assert results["valid"] and results["anomaly_counts"] == {}
    assert results["run"]["faults_injected"] >= faults, results["run"]
    assert results["run"]["fault_errors"] == []
    s = results["stats"]
    assert s["acknowledged_sends"] >= 20 and s["values_read"] >= 20, s
    assert (out / "history.jsonl").stat().st_size > 0 and (out / "report.html").exists()
    assert "no anomalies" in r.stdout
