"""`python -m bench checker_soak`: a long `pylog check-cluster run` against pylog's own broker.

All four workloads (queue, txn, groups, share) at once for --minutes (default 10, so each
workload runs that long), against `--local pylog` with kill -9 and SIGSTOP/SIGCONT in turn
every --interval seconds. Prints the figures for bench/RESULTS.md: operations by kind, faults
injected, clients replaced, values sent and read, anomalies, and the time the analysis took.
Exit 1 when the checker found anomalies.

Options: --minutes N, --interval S, --rate N (writes per second), --out DIR (kept).
"""
from __future__ import annotations

import argparse
import collections
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench checker_soak")
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--interval", type=float, default=15)
    ap.add_argument("--rate", type=float, default=50)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args(argv)
    out = args.out or Path(tempfile.mkdtemp(prefix="check-soak-"))
    cmd = [sys.executable, "-m", "pylog.cli", "check-cluster", "run", "-w", "queue", "-w", "txn", "-w", "groups",
           "-w", "share", "--local", "pylog", "--duration", str(args.minutes * 60), "--fault", "kill", "--fault",
           "pause", "--fault-interval", str(args.interval), "--fault-hold", "3", "--rate", str(args.rate),
           "--out", str(out)]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    results_path = out / "results.json"
    if not results_path.exists():
        print(proc.stdout, proc.stderr, file=sys.stderr)
        return 2
    results = json.loads(results_path.read_text())
    kinds = collections.Counter()
    with open(out / "history.jsonl", "rb") as fh:
        for line in fh:
            if b'"type":"invoke"' not in line:
                e = json.loads(line)
                kinds[f"{e['process'].rsplit('-', 1)[0]} {e['f']} {e['type']}"] += 1
    run, s = results["run"], results["stats"]
    print(f"{' '.join(cmd[1:])}")
    print(f"wall {wall:.0f} s, exit {proc.returncode}; history {out / 'history.jsonl'}")
    print(f"faults injected {run['faults_injected']} ({', '.join(run['faults'])}), failed {len(run['fault_errors'])}, "
          f"clients replaced {run['client_replacements']}")
    print(f"operations {s['operations']:,}, acknowledged sends {s['acknowledged_sends']:,}, values read "
          f"{s['values_read']:,}, unseen {s['unseen']:,}; analysis {s['seconds']:.1f} s")
    print(f"anomalies: {results['anomaly_counts'] or 'none'}")
    for k, n in sorted(kinds.items()):
        print(f"  {k:40} {n:>9,}")
    return 0 if results["valid"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
