"""The share-partition family of the differential harness: sequences of raw ShareFetch /
ShareAcknowledge requests run on pylog and on Apache Kafka 4.4, their transcripts compared.

A sequence is a topic with batches of known sizes, a share group with its own group configs, one or
two members, and steps. A step's outcome goes into the transcript: every answer reduced to its error
codes and acquired ranges with delivery counts. At the end the records' states are read back the
same way on both: DescribeShareGroupOffsets, then a fresh member drains the share-partition (every
range it gets, with delivery counts, accepted) until nothing is left.

Generated sequences choose each step from a seeded generator and from what the broker answered so
far (which records each member holds): two brokers answering alike get the same next step, so
the first difference in a transcript is where they part. Scripted sequences are step lists.

Steps (a tuple each, the member index second):
  ("fetch", m, {fetch options}, acks)   ShareFetch carrying `acks` [(first, last, type or types)]
  ("ack", m, acks, renew)               ShareAcknowledge
  ("renew_fetch", m, acks)              a renew-only ShareFetch (IsRenewAck, zero fetch limits)
  ("raw_fetch", m, batches)             ShareFetch with acknowledgement batches as given (malformed)
  ("close", m, acks)                    ShareAcknowledge at the final epoch: the session closes
  ("leave", m)                          the member leaves the group; a new member takes its place
  ("expire",)                           wait until every acquisition lock has run out
  ("produce", sizes)                    more batches of these sizes
  ("aborted", n)                        n records in a transaction that aborts, then 2 committed
  ("describe",)                         DescribeShareGroupOffsets
"""
from __future__ import annotations

import random
import time

from support import share_raw as sr

TYPES = ("accept", "release", "reject", "gap")
TYPES_NO_RELEASE = ("accept", "reject", "gap")
EXPIRE_LOCK_MS = 2000  # the lock of sequences with lock expiry; "expire" waits it out and more
EXPIRE_WAIT = 3.2


class Seq:
    """One sequence: its topic, group, configs, initial batches, number of members, steps (None:
    generated from `seed`, `n_steps` of them)."""

    def __init__(self, name: str, sizes, configs: dict, members: int = 1, steps=None, seed: int = 0,
                 n_steps: int = 0, expiry: bool = False, transactional: bool = False, first: dict | None = None):
        self.name, self.sizes, self.configs, self.members = name, list(sizes), dict(configs), members
        self.first = first or {}
        self.steps, self.seed, self.n_steps, self.expiry = steps, seed, n_steps, expiry
        self.transactional = transactional
        self.topic = self.group = None


# ---- running one sequence on one broker ----------------------------------------------------

class Run:
    """A sequence on one broker: the members' sessions, what each holds, the transcript."""

    def __init__(self, bs: str, seq: Seq):
        self.bs, self.seq = bs, seq
        self.sessions = [sr.Session(bs, seq.group, seq.topic) for _ in range(seq.members)]
        for s in self.sessions:
            s.join()
        self.held: list[dict] = [{} for _ in self.sessions]  # offset -> delivery count
        self.log: list = []
        self.rng = random.Random(seq.seed)

    def close(self) -> None:
        for s in self.sessions:
            s.close()

    # ---- the steps ---------------------------------------------------------------------
    def first_fetch(self, opts: dict, wait: float = 60) -> None:
        """The first fetch of member 0, repeated until records come (Kafka loads a new
        share-partition's state first): only the answer with records goes in the transcript."""
        deadline = time.monotonic() + wait
        while True:
            a = self.sessions[0].fetch(**opts)
            if sr.parts_of(a).get(0, (0, 0, []))[2] or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        self.took(0, a)
        self.log.append(("fetch", sr.summary(a)))

    def step(self, st) -> None:
        kind = st[0]
        if kind == "fetch":
            _, m, opts, acks = st
            self.log.append(("options", opts))
            opts = dict(opts)
            if any(_releases(a) for a in acks or []):
                opts.setdefault("max_wait_ms", 300)
            a = self.sessions[m].fetch(acks=acks, **opts)
            self.acked(m, acks, sr.parts_of(a).get(0, (0, 0, []))[1], a["error_code"])
            self.took(m, a)
            self.log.append((kind, m, acks, sr.summary(a)))
        elif kind == "ack":
            _, m, acks, renew = st
            a = self.sessions[m].acknowledge(acks, renew=renew)
            self.acked(m, acks, sr.parts_of(a).get(0, (0, 0, []))[0], a["error_code"])
            self.log.append((kind, m, acks, renew, sr.summary(a)))
        elif kind == "renew_fetch":
            _, m, acks = st
            a = self.sessions[m].fetch(acks=acks, renew=True, max_wait_ms=0, min_bytes=0, max_bytes=0,
                                       max_records=0, batch_size=0)
            self.log.append((kind, m, acks, sr.summary(a)))
        elif kind == "raw_fetch":
            _, m, batches = st
            a = self.sessions[m].fetch(raw_acks=batches, max_records=1, batch_size=1)
            self.took(m, a)
            self.log.append((kind, m, [(b["first_offset"], b["last_offset"], b["acknowledge_types"]) for b in batches],
                             sr.summary(a)))
        elif kind == "close":
            _, m, acks = st
            a = self.sessions[m].close_session(acks)
            self.held[m].clear()
            time.sleep(0.3)  # Kafka writes the release of the closed session's records after answering
            self.log.append((kind, m, acks, sr.summary(a)))
        elif kind == "leave":
            m = st[1]
            self.sessions[m].leave()
            self.sessions[m].close()
            # Kafka releases the records of a closed connection's share session a moment later
            time.sleep(1.0)
            self.sessions[m] = sr.Session(self.bs, self.seq.group, self.seq.topic).join()
            self.held[m].clear()
            # after the last member left, Kafka loads the share-partition again at the next fetch
            # (a fetch not waiting answers nothing meanwhile): the new member fetches until records
            # come or 3 s passed
            deadline = time.monotonic() + 3
            while True:
                a = self.sessions[m].fetch()
                got = sr.parts_of(a).get(0, (0, 0, []))[2]
                if got or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            self.took(m, a)
            self.log.append((kind, m, got))
        elif kind == "expire":
            time.sleep(EXPIRE_WAIT)
            for h in self.held:
                h.clear()
            self.log.append((kind,))
        elif kind == "produce":
            sr.produce_batches(self.sessions[0].s, self.seq.topic, st[1])
            self.log.append((kind, tuple(st[1])))
        elif kind == "aborted":
            sr.produce_aborted(self.bs, self.seq.topic, st[1], commit_after=2)
            sr.wait_stable(self.sessions[0].s, self.seq.topic)
            self.log.append((kind, st[1]))
        elif kind == "describe":
            self.log.append((kind, sr.describe_offsets(self.bs, self.seq.group, self.seq.topic)))
        else:
            raise ValueError(kind)

    def took(self, m: int, answer: dict) -> None:
        for f, la, c in sr.parts_of(answer).get(0, (0, 0, []))[2]:
            for o in range(f, la + 1):
                self.held[m][o] = c

    def acked(self, m: int, acks, code: int, top: int) -> None:
        if code or top or not acks:
            return
        for f, la, kind in acks:
            kinds = [kind] * (la - f + 1) if isinstance(kind, str) else list(kind)
            for o, k in zip(range(f, la + 1), kinds):
                if k != "renew":
                    self.held[m].pop(o, None)

    def final_state(self, describe: bool = True) -> None:
        """Describe, close every session, then drain with a fresh member (accepting all)."""
        if describe:
            self.log.append(("describe", sr.describe_offsets(self.bs, self.seq.group, self.seq.topic)))
        for m, s in enumerate(self.sessions):
            if s.session_epoch:
                s.close_session()
        time.sleep(0.5)  # Kafka writes the release of closed sessions' records after answering
        d = sr.Session(self.bs, self.seq.group, self.seq.topic).join(wait=120)
        got = []
        try:
            acks = None
            for _ in range(60):
                a = d.fetch(acks=acks, max_wait_ms=300)
                ranges = sr.parts_of(a).get(0, (0, 0, []))[2]
                if not ranges and not acks:
                    break
                got.append(ranges)
                acks = [(f, la, "accept") for f, la, _ in ranges]
            d.close_session(acks) if acks else d.close_session()
        finally:
            d.close()
        self.log.append(("drain", got))
        self.log.append(("described", self._settled_offsets()))

    def _settled_offsets(self, deadline_s: float = 10.0):
        """DescribeShareGroupOffsets once two reads 0.5 s apart agree: Kafka answers a ShareFetch or
        a session's close before its share coordinator has written the acknowledgements' state,
        and describes what was written (g106 once read a start offset from before the drain)."""
        last = sr.describe_offsets(self.bs, self.seq.group, self.seq.topic)
        end = time.monotonic() + deadline_s
        while time.monotonic() < end:
            time.sleep(0.5)
            now = sr.describe_offsets(self.bs, self.seq.group, self.seq.topic)
            if now == last:
                break
            last = now
        return last

    # ---- generated steps -------------------------------------------------------------------
    def next_step(self, i: int):
        r, seq = self.rng, self.seq
        m = r.randrange(len(self.sessions))
        held = sorted(self.held[m])
        kinds = ["fetch"] * 6 + ["ack"] * 3 + ["bad"] * 2 + ["renew"] + ["close", "produce"]
        if seq.expiry:
            # no DescribeShareGroupOffsets before the drain: Kafka writes each acquired batch's lock
            # timeout on its own, and which start offset a write carries depends on their timing
            kinds += ["expire"] * 2
        else:
            kinds.append("describe")
        if seq.transactional:
            kinds += ["aborted"] * 2
        if len(self.sessions) > 1 or r.random() < 0.3:
            kinds.append("leave")
        kind = r.choice(kinds)
        if kind in ("ack", "renew", "close", "bad") and not held:
            kind = "fetch"
        if kind == "fetch":
            opts = {"max_records": r.choice((1, 2, 3, 5, 10, 500)), "mode": 1 if r.random() < 0.2 else 0}
            opts["batch_size"] = r.choice((1, 2, 5, opts["max_records"]))
            if r.random() < 0.15:
                opts["max_bytes"] = r.choice((1, 100, 200))
            # no RELEASE in a fetch's acknowledgements: whether Kafka's acquisition in that same fetch
            # sees the released records depends on its state write finishing first (the parity
            # tests cover the cases where it does not race)
            # nor any acknowledgement at all in a fetch of a share-partition with an in-flight cap:
            # whether that fetch's acquisition counts the cap from the start offset its
            # acknowledgements moved depends on Kafka's state write finishing first too
            capped = "share_partition_max_record_locks" in seq.configs
            with_acks = held and r.random() < 0.6 and not capped
            return ("fetch", m, opts, self.gen_acks(held, TYPES_NO_RELEASE) if with_acks else None)
        if kind == "ack":
            return ("ack", m, self.gen_acks(held), False)
        if kind == "renew":
            acks = [(f, la, "renew") for f, la in _runs(held)][: r.randint(1, 2)]
            if seq.configs.get("share_renew_acknowledge_enable") == "false" or r.random() < 0.5:
                return ("ack", m, acks, True)
            return ("renew_fetch", m, acks)
        if kind == "close":
            return ("close", m, self.gen_acks(held) if r.random() < 0.5 else None)
        if kind == "produce":
            return ("produce", [r.choice((1, 2, 3, 5))])
        if kind == "aborted":
            return ("aborted", r.choice((1, 3)))
        if kind == "bad":
            return ("raw_fetch", m, self.gen_bad(held))
        return (kind, m) if kind == "leave" else (kind,)

    def gen_acks(self, held: list, types=TYPES) -> list:
        r = self.rng
        runs = _runs(held)
        picked = sorted(r.sample(runs, r.randint(1, len(runs))))
        out = []
        for f, la in picked:
            if r.random() < 0.5 and la > f:
                cut = r.randint(f, la)  # a part of the run only
                f, la = (f, cut) if r.random() < 0.5 else (cut, la)
            if r.random() < 0.35 and la > f:
                out.append((f, la, [r.choice(types) for _ in range(la - f + 1)]))
            else:
                out.append((f, la, r.choice(types)))
        return out

    def gen_bad(self, held: list) -> list:
        r = self.rng
        f, la = r.choice(_runs(held))
        b = lambda a, z, t=1: {"first_offset": a, "last_offset": z, "acknowledge_types": [t]}  # noqa: E731
        choice = r.randrange(6)
        if choice == 0:
            return [b(f, la), b(max(f, la - 1), la + 1)]  # overlapping
        if choice == 1:
            return [b(la, la), b(f, f)]  # backwards
        if choice == 2:
            return [b(f, la + r.randint(1, 5))]  # past the acquired records
        if choice == 3:
            return [b(f, la, 7)]  # unknown type
        if choice == 4:
            return [b(f, la), b(la, la)]  # the same offset twice
        return [{"first_offset": f, "last_offset": la, "acknowledge_types": [1, 2] * (la - f + 2)}]


def _runs(offsets: list) -> list:
    """Consecutive runs [(first, last)] of sorted offsets."""
    out: list = []
    for o in offsets:
        if out and out[-1][1] == o - 1:
            out[-1][1] = o
        else:
            out.append([o, o])
    return [tuple(x) for x in out]


def _releases(ack) -> bool:
    kind = ack[2]
    return kind == "release" if isinstance(kind, str) else "release" in kind


def run_sequence(bs: str, seq: Seq, part: int = 0) -> list:
    """Run `seq` on the broker at `bs`: its transcript (an exception ends it as its last entry).
    `part` 1: only the first fetch and the steps (the broker restarts next); 2: new members run the
    steps and then the final state is read."""
    try:
        run = Run(bs, seq)
    except Exception as e:  # noqa: BLE001 - compared with the other broker's transcript
        return [("error", type(e).__name__, str(e)[:300])]
    try:
        run.first_fetch(seq.first, 60 if part != 2 else 8)  # after a restart Kafka loads the state first
        steps = seq.steps if seq.steps is not None else None
        if steps is None:
            for i in range(seq.n_steps):
                run.step(run.next_step(i))
        else:
            for st in steps:
                run.step(st)
        if part != 1:
            # after a restart, until the next write, pylog describes the start offset it stored (its
            # current one) where Kafka describes the one its last write began with (README)
            run.final_state(describe=part != 2 and not seq.expiry)
    except Exception as e:  # noqa: BLE001 - compared with the other broker's transcript
        run.log.append(("error", type(e).__name__, str(e)[:300]))
    finally:
        run.close()
    return run.log


def run_all(brokers: dict, seqs: list, tag: str, workers: int = 24, part: int = 0) -> dict:
    """Every sequence on every broker of {name: bootstrap}: {sequence name: {broker: transcript}}.
    Part 2 of restart sequences reuses the topics and groups part 1 made."""
    import uuid
    from concurrent.futures import ThreadPoolExecutor

    if part != 2:
        stamp = uuid.uuid4().hex[:6]
        for s in seqs:
            s.topic, s.group = f"spf-{tag}-{s.name}-{stamp}", f"spf-g-{tag}-{s.name}-{stamp}"
        with ThreadPoolExecutor(len(brokers)) as pool:
            for f in [pool.submit(prepare, bs, seqs) for bs in brokers.values()]:
                f.result()
    with ThreadPoolExecutor(workers) as pool:
        futures = {(s.name, b): pool.submit(run_sequence, bs, s, part) for s in seqs for b, bs in brokers.items()}
        out: dict = {}
        for (name, b), f in futures.items():
            out.setdefault(name, {})[b] = f.result()
    return out


def differences(results: dict) -> dict:
    """The sequences whose transcripts differ: {name: (first differing step, {broker: entry})}."""
    out = {}
    for name, by in results.items():
        p, k = by["pylog"], by["kafka"]
        if p != k:
            i = next((j for j, (a, b) in enumerate(zip(p, k)) if a != b), min(len(p), len(k)))
            out[name] = (i, {"pylog": p[i:i + 2], "kafka": k[i:i + 2], "before": p[max(0, i - 3):i]})
    return out


# ---- preparing many sequences at once --------------------------------------------------------

def prepare(bs: str, seqs: list) -> None:
    """Topics, group configs and initial batches of every sequence, in a few requests."""
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic, \
        ResourceType

    admin = AdminClient({"bootstrap.servers": bs})
    for i in range(0, len(seqs), 100):
        chunk = seqs[i:i + 100]
        for f in admin.create_topics([NewTopic(s.topic, 1, 1) for s in chunk]).values():
            f.result(120)
        resources = [ConfigResource(ResourceType.GROUP, s.group, incremental_configs=[
            ConfigEntry(k.replace("_", "."), str(v), incremental_operation=AlterConfigOpType.SET)
            for k, v in {"share_auto_offset_reset": "earliest", **s.configs}.items()]) for s in chunk]
        for f in admin.incremental_alter_configs(resources).values():
            f.result(120)
    conn = sr.connect(bs)
    try:
        for s in seqs:
            sr.topic_id(conn, s.topic)
            sr.produce_batches(conn, s.topic, s.sizes)
    finally:
        conn.close()


def generated(n: int, seed: int = 4404) -> list:
    """`n` generated sequences: batch sizes, group configs, members and steps from the seed."""
    r = random.Random(seed)
    out = []
    for i in range(n):
        expiry = r.random() < 0.2
        txn = r.random() < 0.1
        configs = {"share_delivery_count_limit": r.choice((2, 3, 4, 5, 6))}
        if expiry:
            configs["share_record_lock_duration_ms"] = EXPIRE_LOCK_MS
        if r.random() < 0.1:
            configs["share_renew_acknowledge_enable"] = "false"
        if txn:
            configs["share_isolation_level"] = "read_committed"
        sizes = r.choice(([10], [5, 5], [1] * 6, [3, 7, 2], [4, 4, 4, 4], [20], [2, 9]))
        if r.random() < 0.08:
            configs["share_partition_max_record_locks"] = 100
            sizes = [10] * 11
        mr = r.choice((1, 3, 5, 10, 500))
        first = {"max_records": mr, "batch_size": r.choice((1, 2, 5, mr)), "mode": 1 if r.random() < 0.2 else 0}
        out.append(Seq(f"g{i}", sizes, configs, members=2 if r.random() < 0.3 else 1, seed=seed * 1000 + i,
                       n_steps=r.randint(5, 12), expiry=expiry, transactional=txn, first=first))
    return out
