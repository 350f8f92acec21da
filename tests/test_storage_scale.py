"""Many partitions on one broker: created, written, read, restarted clean and after kill -9, with the
broker holding under two descriptors per partition (its `.log`s; the indexes are mapped and
closed), a start after kill -9 that logs one summary line instead of a warning per partition, a
creation past the descriptor limit refused with POLICY_VIOLATION and nothing half made, and a start
on a dir the limit cannot open stopped with one line naming the limit. 1,000 partitions here;
10,000 in the slow tier.
"""
from __future__ import annotations

import os
import subprocess
import sys
from collections import defaultdict

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from support.broker_fixtures import LISTENING, BrokerProcess
from support.waiting import wait_until

TOPIC = "wide"


def descriptors(b: BrokerProcess) -> int:
    return len(os.listdir(f"/proc/{b.proc.pid}/fd"))


def create(bootstrap: str, topic: str, n: int, timeout: float = 600):
    # librdkafka waits socket.timeout.ms (60 s) for an answer: thousands of partitions may take longer
    admin = AdminClient({"bootstrap.servers": bootstrap, "socket.timeout.ms": min(int(timeout * 1000), 300_000)})
    fut = admin.create_topics([NewTopic(topic, num_partitions=n, replication_factor=1)],
                              operation_timeout=timeout, request_timeout=timeout)[topic]
    return fut.result(timeout)


def write_round(bootstrap: str, n: int, round_no: int) -> None:
    # idempotent: a retry after a slow answer must not write a record twice
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20, "acks": "all", "enable.idempotence": True,
                  "queue.buffering.max.messages": 200_000, "message.timeout.ms": 300_000})
    errors = []
    for part in range(n):
        p.produce(TOPIC, key=f"k{part}".encode(), value=f"{part}-{round_no}".encode(), partition=part,
                  on_delivery=lambda err, m: errors.append(err) if err else None)
        if part % 1000 == 999:
            p.poll(0)
    left = p.flush(300)
    assert left == 0 and not errors, (left, errors[:3])


def read_all(bootstrap: str, n: int, timeout: float = 300) -> dict[int, list[bytes]]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "scale-assign-only", "enable.auto.commit": False,
                  "enable.partition.eof": True, "fetch.wait.max.ms": 50})
    c.assign([TopicPartition(TOPIC, p, 0) for p in range(n)])
    out: dict[int, list[bytes]] = defaultdict(list)
    eof: set[int] = set()

    def step():
        for m in c.consume(1000, 1.0):
            if m.error():
                if m.error().code() != KafkaError._PARTITION_EOF:
                    raise AssertionError(m.error())
                eof.add(m.partition())
            else:
                out[m.partition()].append(m.value())
        return len(eof) == n

    wait_until(step, timeout, lambda: f"the end of every partition (reached {len(eof)} of {n})", step=0)
    c.close()
    return out


def expect(out: dict[int, list[bytes]], n: int, rounds: int) -> None:
    want = {p: [f"{p}-{r}".encode() for r in range(rounds)] for p in range(n)}
    assert dict(out) == want


def warnings_of(b: BrokerProcess) -> list[str]:
    return [line for line in b.stdout_lines if line.strip().startswith("warning:")]


def run_scale(tmp_path, n: int) -> None:
    b = BrokerProcess(tmp_path / "data").start(timeout=120)
    try:
        create(b.bootstrap, TOPIC, n)
        write_round(b.bootstrap, n, 0)
        expect(read_all(b.bootstrap, n), n, 1)
        assert descriptors(b) < 2 * n
        assert b.stop(timeout=600) == 0
        b.stdout_lines.clear()
        b.start(port=b.port, timeout=600)
        assert warnings_of(b) == []
        assert descriptors(b) < 2 * n
        write_round(b.bootstrap, n, 1)
        expect(read_all(b.bootstrap, n), n, 2)
        b.kill9()
        b.stdout_lines.clear()
        b.start(port=b.port, timeout=600)
        warned = warnings_of(b)
        assert len(warned) == 1 and "recovered" in warned[0] and "unclean shutdown" in warned[0], warned
        assert not any("corrupt" in line for line in b.stdout_lines + [b.stderr(None)])
        assert descriptors(b) < 2 * n
        write_round(b.bootstrap, n, 2)
        expect(read_all(b.bootstrap, n), n, 3)
    finally:
        if b.alive():
            assert b.stop(timeout=600) == 0


@pytest.mark.timeout(1200)
def test_a_thousand_partitions_created_written_read_and_restarted(tmp_path):
    run_scale(tmp_path, 1000)


@pytest.mark.slow
@pytest.mark.timeout(5400)
def test_ten_thousand_partitions_created_written_read_and_restarted(tmp_path):
    run_scale(tmp_path, 10_000)


def start_limited(log_dir, limit: int) -> subprocess.Popen:
    """`pylog broker start` under an open-files limit of `limit` (soft and hard)."""
    cmd = (f"ulimit -n {limit} && exec {sys.executable} -m pylog.cli broker start --listen 127.0.0.1:0 "
           f"--log-dir {log_dir}")
    return subprocess.Popen(["bash", "-c", cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_partitions_past_the_descriptor_limit_are_refused_and_nothing_is_half_made(tmp_path):
    data = tmp_path / "data"
    proc = start_limited(data, 800)
    try:
        port = None
        for line in proc.stdout:
            if line.startswith(LISTENING):
                port = int(line.rsplit(":", 1)[1])
                break
        assert port, proc.stderr.read()
        bootstrap = f"127.0.0.1:{port}"
        with pytest.raises(KafkaException) as e:
            create(bootstrap, "toomany", 1000, timeout=60)
        err = e.value.args[0]
        assert err.name() == "POLICY_VIOLATION" and "ulimit -n" in err.str(), err
        admin = AdminClient({"bootstrap.servers": bootstrap})
        assert "toomany" not in admin.list_topics(timeout=30).topics
        assert not [p for p in os.listdir(data) if p.startswith("toomany-")]
        create(bootstrap, "fits", 100, timeout=60)
        assert len([p for p in os.listdir(data) if p.startswith("fits-")]) == 100
    finally:
        proc.terminate()
        proc.wait(60)


def test_a_start_the_limit_cannot_hold_says_which_limit_to_raise(tmp_path):
    b = BrokerProcess(tmp_path / "data").start()
    create(b.bootstrap, TOPIC, 1000)
    b.stop_clean()
    proc = start_limited(tmp_path / "data", 600)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode != 0
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "ulimit -n" in lines[0] and "1000 partitions" in lines[0], err
    assert "Traceback" not in err
    # nothing was changed: the broker starts with its limit and every partition is there
    b.stdout_lines.clear()
    b.start(port=b.port, timeout=120)
    assert warnings_of(b) == []
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    assert len(admin.list_topics(TOPIC, timeout=30).topics[TOPIC].partitions) == 1000
    b.stop_clean()
