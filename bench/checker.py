"""`python -m bench checker`: how long the cluster checker takes over a history of N operations.

The history is simulated (`simulate`): a correct Kafka in memory, 16 partitions, 32 clients
doing plain sends, transactions (one in ten aborted; each commit or abort puts a control
record in the log, so offsets have gaps), polls by assigned consumers and by group members
that rebalance and commit, and a share group that accepts and releases records. Every
operation is an invoke line and a completion line, as `pylog check-cluster run` writes them.
The clock covers reading the file and the whole analysis; a clean history must stay clean.

Options: --ops N (default 1,000,000), --keep FILE (write the history there and keep it).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

KEYS = 16
CLIENTS = 32


class _Sim:
    def __init__(self, out, seed):
        self.out, self.rng = out, random.Random(seed)
        self.t = self.index = 0
        self.next_value = 0
        self.logs = {f"q/{p}": [] for p in range(KEYS)}      # key -> [(offset, value)] committed
        self.ends = {k: 0 for k in self.logs}
        self.share = {"s/0": []}
        self.share_end = 0
        self.share_state = {}                               # offset -> [value, count, state]

    def emit(self, process, f, value, type="ok", final=None, **extra):
        t0, self.t = self.t, self.t + 2
        dumps = json.dumps
        self.out.write(dumps({"index": self.index, "process": process, "type": "invoke", "f": f, "time": t0,
                              "value": value}, separators=(",", ":")) + "\n")
        e = {"index": self.index + 1, "process": process, "type": type, "f": f, "time": t0 + 1, "start": t0,
             "value": final if final is not None else value}
        e.update(extra)
        self.out.write(dumps(e, separators=(",", ":")) + "\n")
        self.index += 2

    def value(self):
        self.next_value += 1
        return self.next_value

    def append(self, key, n, visible=True):
        out = []
        for _ in range(n):
            v, o = self.value(), self.ends[key]
            self.ends[key] += 1
            out.append((o, v))
        if visible:
            self.logs[key].extend(out)
        return out

    def send(self, p):
        key = f"q/{self.rng.randrange(KEYS)}"
        recs = self.append(key, self.rng.randint(1, 3))
        self.emit(p, "send", [["send", key, v, None] for _o, v in recs],
                  final=[["send", key, v, o] for o, v in recs])

    def txn(self, p):
        key = f"q/{self.rng.randrange(KEYS)}"
        commit = self.rng.random() > 0.1
        recs = self.append(key, self.rng.randint(1, 3), visible=commit)
        self.ends[key] += 1  # the commit or abort marker
        mops = [["send", key, v, o] for o, v in recs]
        if commit:
            self.emit(p, "txn", [["send", key, v, None] for _o, v in recs], final=mops, commit_at=self.t + 1)
        else:
            self.emit(p, "txn", [["send", key, v, None] for _o, v in recs], type="fail", final=mops)


def _consumer(sim, p, positions, group=None, commits=None):
    """One poll of up to 5 records per key from each assigned position."""
    got = {}
    for key, pos in positions.items():
        log = sim.logs[key]
        recs = log[pos:pos + 5]
        positions[key] = pos + len(recs)
        if recs:
            got[key] = [[o, v] for o, v in recs]
    sim.emit(p, "poll", [["poll"]], final=[["poll", got]])
    if group is not None and sim.rng.random() < 0.3:
        offs = {k: (sim.logs[k][pos - 1][0] + 1 if pos else 0) for k, pos in positions.items()}
        commits.update({k: (offs[k], positions[k]) for k in offs})
        sim.emit(p, "commit", {"group": group, "offsets": offs})


def simulate(path: Path, n_ops: int, seed: int = 1) -> None:
    """Write a clean history of about n_ops operations to `path`."""
    with open(path, "w") as out:
        sim = _Sim(out, seed)
        rng = sim.rng
        readers = {f"reader-{i}.0": {} for i in range(8)}
        members = [f"member-{i}.0" for i in range(4)]
        owned = {m: {} for m in members}
        commits: dict = {}
        for p, pos in readers.items():
            keys = rng.sample(sorted(sim.logs), 4)
            sim.emit(p, "assign", keys)
            pos.update({k: 0 for k in keys})
        ops = 0
        writers = [f"writer-{i}.0" for i in range(CLIENTS - 12)]
        while ops < n_ops:
            r = rng.random()
            if r < 0.3:
                sim.send(rng.choice(writers))
            elif r < 0.45:
                sim.txn(rng.choice(writers))
            elif r < 0.75:
                p = rng.choice(sorted(readers))
                _consumer(sim, p, readers[p])
            elif r < 0.95:
                m = rng.choice(members)
                if rng.random() < 0.01:
                    _rebalance(sim, members, owned, commits)
                _consumer(sim, m, owned[m], "g", commits)
            else:
                _share(sim, f"sharer-{rng.randrange(4)}.0")
            ops += 1


def _rebalance(sim, members, owned, commits):
    keys = sorted(sim.logs)
    sim.rng.shuffle(keys)
    for n, m in enumerate(members):
        mine = keys[n::len(members)]
        old = owned[m]
        owned[m] = {k: commits.get(k, (0, 0))[1] for k in mine}
        sim.emit(m, "rebalance", {"group": "g", "assigned": mine, "revoked": sorted(old)}, final=None)


def _share(sim, p):
    rng = sim.rng
    for _ in range(3):
        v, o = sim.value(), sim.share_end
        sim.share_end += 1
        sim.share_state[o] = [v, 0, "available"]
        sim.emit("share-writer.0", "send", [["send", "s/0", v, None]], final=[["send", "s/0", v, o]])
    got = []
    for o, st in sorted(sim.share_state.items())[:5]:
        if st[2] == "available":
            st[1] += 1
            st[2] = "acquired"
            got.append([o, st[0], st[1]])
    sim.emit(p, "share-poll", {"group": "s"}, final={"group": "s", "records": {"s/0": got}})
    accept = [r[0] for r in got if rng.random() < 0.9]
    release = [r[0] for r in got if r[0] not in accept]
    for o in accept:
        del sim.share_state[o]
    for o in release:
        sim.share_state[o][2] = "available"
    sim.emit(p, "share-ack", {"group": "s", "accept": {"s/0": accept}, "release": {"s/0": release}})


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench checker")
    ap.add_argument("--ops", type=int, default=1_000_000)
    ap.add_argument("--keep", type=Path)
    args = ap.parse_args(argv)
    from pylog.checker.analysis import analyze
    from pylog.checker.history import read_history

    with tempfile.TemporaryDirectory() as tmp:
        path = args.keep or Path(tmp) / "history.jsonl"
        t0 = time.monotonic()
        simulate(path, args.ops)
        made = time.monotonic() - t0
        t0, c0 = time.monotonic(), time.process_time()
        ops = read_history(path)
        read = time.monotonic() - t0
        results = analyze(ops)
        total, cpu = time.monotonic() - t0, time.process_time() - c0
        size = path.stat().st_size
    print(f"history: {len(ops):,} operations ({size / 1e6:.0f} MB, simulated in {made:.1f} s)")
    print(f"read {read:.1f} s, analysis {results['stats']['seconds']:.1f} s, total {total:.1f} s "
          f"(CPU {cpu:.1f} s; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)")
    print(f"anomalies: {results['anomaly_counts'] or 'none'}")
    return 0 if results["valid"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
