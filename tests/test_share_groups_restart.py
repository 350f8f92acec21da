"""Share-partition state survives kill -9 of the broker: it is in `__share_group_state`.

A consumer process accepts some records and holds the others acquired; both it and the
broker are killed with SIGKILL. After the restart nothing accepted is delivered again, and
every record that was acquired but not acknowledged is delivered again with its delivery
count kept (2). The state records are Kafka's: with
`share.coordinator.snapshot.update.records.per.snapshot=3` the run writes ShareSnapshot records
with ShareUpdate records between them, the pruning job (every 200 ms here) deletes the records
before the last snapshot needed, and the replay of what is left gives the state back."""
from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from support import share_scenarios as sc
from support.broker_fixtures import BrokerProcess
from support.waiting import wait_until
from support.segments import logged_records
from pylog.core.protocol import share_state_records as ssr

HOLDER = textwrap.dedent("""
    import sys
    from confluent_kafka import AcknowledgeType, ShareConsumer
    bootstrap, topic, group, n, accept_below = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group,
                       "share.acknowledgement.mode": "explicit"})
    c.subscribe([topic])
    got = []
    while not got:
        got = [m for m in c.poll(1.0) if m.error() is None]
    for m in got:
        if m.offset() < accept_below:
            c.acknowledge(m, AcknowledgeType.ACCEPT)
    c.commit_sync(30)
    print(" ".join(f"{m.offset()}:{m.delivery_count()}" for m in got), flush=True)
    sys.stdin.read()  # hold the rest until killed
""")


STATE_SETTINGS = ("--set", "share.coordinator.snapshot.update.records.per.snapshot=3",
                  "--set", "share.coordinator.state.topic.prune.interval.ms=200")


def test_kill9_keeps_acknowledged_and_delivery_counts(tmp_path):
    b = BrokerProcess(tmp_path / "data", *STATE_SETTINGS).start(timeout=120)
    try:
        topic, group, n = sc.name("share-k9"), sc.name("share-k9g"), 30
        sc.create_topic(b.bootstrap, topic)
        sc.set_group_configs(b.bootstrap, group, share_auto_offset_reset="earliest")
        sc.produce(b.bootstrap, topic, n)
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, b.bootstrap, topic, group, str(n), "10"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = holder.stdout.readline()
        first = [tuple(map(int, x.split(":"))) for x in line.split()]
        assert first == [(o, 1) for o in range(n)], line
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        b.kill9()
        b.start(port=b.port, timeout=120)
        seen = sc.accept_all(b.bootstrap, topic, group, n - 10, consumers=2)
        again = sorted((o, c) for recs in seen.values() for _, o, c in recs)
        assert again == [(o, 2) for o in range(10, n)]
        # nothing else is left: the next record is the only one delivered
        sc.produce(b.bootstrap, topic, 1)
        later = sc.explicit_run(b.bootstrap, topic, group, 1, lambda o, c: sc.AcknowledgeType.ACCEPT,
                                lambda log: len(log) >= 1)
        assert [(o, c) for o, c, _ in later] == [(n, 1)]
        wait_until(lambda: _state_log_start(b.bootstrap) > 0, 30, step=0.5)  # the pruning job ran
    finally:
        b.stop_clean()
    _state_records_are_kafkas(Path(tmp_path / "data"), group)


def _state_log_start(bootstrap: str) -> int:
    """The highest log start offset among the partitions of __share_group_state (0: nothing pruned)."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": sc.name("wm")})
    try:
        return max(c.get_watermark_offsets(TopicPartition(ssr.TOPIC, p), timeout=10)[0] for p in range(50))
    finally:
        c.close()


def _state_records_are_kafkas(log_dir: Path, group: str) -> None:
    """The share-partition's records in __share_group_state are ShareSnapshot records with ShareUpdate
    records between them (at most 3 after a snapshot, each with that snapshot's epoch); the latest
    one's start offset is past everything delivered and nothing is left in flight."""
    found = []
    for key, value in logged_records(log_dir, ssr.TOPIC):
        rtype, k, v = ssr.decode(key, value)
        if k["group_id"] == group:
            found.append((rtype, v))
    types = [t for t, _ in found]
    assert ssr.SNAPSHOT in types and ssr.UPDATE in types, types
    run, epoch = 0, None
    for rtype, v in found:
        if rtype == ssr.SNAPSHOT:
            run, epoch = 0, v["snapshot_epoch"]
        elif epoch is not None:
            run += 1
            assert run <= 3 and v["snapshot_epoch"] == epoch, (run, v, epoch)
    assert found[-1][1]["start_offset"] == 31
    assert found[-1][1]["state_batches"] == [] or found[-1][0] == ssr.UPDATE
