"""Crash and restart: kill -9 under load, clean shutdown, persistence, the log-dir lock."""
from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections import Counter, defaultdict

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from broker_fixtures import BrokerProcess, call, connect


def read_all(bootstrap, topic, partitions):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "assign-only", "enable.auto.commit": False,
                  "enable.partition.eof": True})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out = defaultdict(list)
    eof = set()
    deadline = time.monotonic() + 30
    while len(eof) < partitions and time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:
                eof.add(m.partition())
                continue
            raise AssertionError(m.error())
        out[m.partition()].append((m.offset(), m.value()))
    c.close()
    assert len(eof) == partitions, "did not reach the end of every partition"
    return out


def test_kill9_during_idempotent_stream_keeps_every_ack_exactly_once(tmp_path):
    b = BrokerProcess(tmp_path / "data").start()
    topic, parts = "crash", 3
    admin = AdminClient({"bootstrap.servers": b.bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=parts, replication_factor=1)])[topic].result(10)
    del admin
    acked: dict[int, list[tuple[int, bytes]]] = defaultdict(list)
    errors = []
    lock = threading.Lock()

    def on_delivery(err, m):
        with lock:
            if err is None:
                acked[m.partition()].append((m.offset(), m.value()))
            else:
                errors.append(err)

    p = Producer({"bootstrap.servers": b.bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 2,
                  "batch.num.messages": 200, "message.timeout.ms": 60000, "retry.backoff.ms": 50,
                  "reconnect.backoff.ms": 50, "reconnect.backoff.max.ms": 200})
    stop = threading.Event()

    def stream():
        n = 0
        while not stop.is_set():
            for _ in range(100):
                try:
                    p.produce(topic, value=f"{n % parts}-{n:08d}".encode(), partition=n % parts,
                              on_delivery=on_delivery)
                except BufferError:
                    p.poll(0.05)
                    continue
                n += 1
            p.poll(0.005)

    t = threading.Thread(target=stream)
    t.start()
    try:
        deadline = time.monotonic() + 10
        while sum(len(v) for v in acked.values()) < 3000 and time.monotonic() < deadline:
            time.sleep(0.05)
        b.kill9()
        acked_before_crash = sum(len(v) for v in acked.values())
        assert acked_before_crash > 0
        time.sleep(0.5)
        b.restart()  # same port: the producer reconnects and retries its in-flight batches
        recovered = [line for line in b.stdout_lines if "recovered: 3 " in line]  # no clean-shutdown marker
        time.sleep(1.5)
    finally:
        stop.set()
        t.join()
    assert p.flush(60) == 0
    assert not errors, errors[:3]
    assert sum(len(v) for v in acked.values()) > acked_before_crash, "nothing was acknowledged after the restart"
    assert recovered, b.stdout_lines

    stored = read_all(b.bootstrap, topic, parts)
    for part in range(parts):
        values = [v for _, v in stored[part]]
        dupes = [v for v, c in Counter(values).items() if c > 1]
        assert not dupes, f"partition {part}: duplicated {dupes[:3]}"
        assert values == sorted(values), f"partition {part}: out of produce order"
        offsets = [o for o, _ in stored[part]]
        assert offsets == list(range(len(offsets)))
        by_offset = dict(stored[part])
        for off, val in acked[part]:
            assert by_offset.get(off) == val, f"acked {val!r} at {part}/{off} but the log has {by_offset.get(off)!r}"
    assert b.stop() == 0


def test_clean_shutdown_persists_topics_ids_and_producer_ids(tmp_path):
    b = BrokerProcess(tmp_path / "data").start()
    s = connect(b)
    created = call(s, 19, 7, {"topics": [{"name": "keep", "num_partitions": 2, "replication_factor": 1,
                                          "configs": [{"name": "retention.ms", "value": "12345"}]}],
                              "timeout_ms": 5000})
    topic_id = created["topics"][0]["topic_id"]
    pids = [call(s, 22, 4, {"transactional_id": None, "transaction_timeout_ms": 1000, "producer_id": -1,
                            "producer_epoch": -1}, correlation_id=i + 2)["producer_id"] for i in range(3)]
    s.close()
    assert b.stop() == 0
    assert any("stopped cleanly" in line for line in b.stdout_lines)
    assert (tmp_path / "data" / ".kafka_cleanshutdown").exists()

    b.start()
    assert any("topics: 1, partitions loaded: 2, recovered: 0" in line for line in b.stdout_lines), b.stdout_lines
    s = connect(b)
    md = call(s, 3, 12, {"topics": None})
    assert [(t["name"], t["topic_id"], len(t["partitions"])) for t in md["topics"]] == [("keep", topic_id, 2)]
    conf = call(s, 32, 4, {"resources": [{"resource_type": 2, "resource_name": "keep",
                                          "configuration_keys": ["retention.ms"]}]})
    assert conf["results"][0]["configs"][0]["value"] == "12345"
    new_pid = call(s, 22, 4, {"transactional_id": None, "transaction_timeout_ms": 1000, "producer_id": -1,
                              "producer_epoch": -1})["producer_id"]
    assert new_pid > max(pids), "a producer id was reused after a restart"
    s.close()
    b.kill9()
    b.start()  # after kill -9: recovery, and still no reuse
    s = connect(b)
    pid3 = call(s, 22, 4, {"transactional_id": None, "transaction_timeout_ms": 1000, "producer_id": -1,
                           "producer_epoch": -1})["producer_id"]
    assert pid3 > new_pid
    s.close()
    assert b.stop() == 0


def test_second_broker_on_same_log_dir_refuses(broker):
    r = subprocess.run([sys.executable, "-m", "pylog.cli", "broker", "start", "--listen", "127.0.0.1:0",
                        "--log-dir", str(broker.log_dir)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 1
    lines = [x for x in r.stderr.strip().splitlines() if x]
    assert len(lines) == 1 and "locked" in lines[0], r.stderr
    assert "Traceback" not in r.stderr


def test_bad_command_line_is_a_usage_error(tmp_path):
    r = subprocess.run([sys.executable, "-m", "pylog.cli", "broker", "start", "--listen", "nope",
                        "--log-dir", str(tmp_path)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "HOST:PORT" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "pylog.cli", "broker", "start", "--set", "no.such.key=1",
                        "--log-dir", str(tmp_path)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "no.such.key" in r.stderr


def test_sigterm_answers_a_pending_long_poll_then_exits_0(tmp_path):
    import signal

    from broker_fixtures import recv_frame
    from pylog.core.protocol import decode_response, encode_request

    b = BrokerProcess(tmp_path / "data").start()
    s = connect(b)
    call(s, 3, 12, {"topics": [{"name": "lp"}]})
    s.sendall(encode_request(1, 12, 42, "t", {"max_wait_ms": 20000, "min_bytes": 1, "max_bytes": 1 << 20, "topics": [
        {"topic": "lp", "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}))
    time.sleep(0.3)
    t0 = time.monotonic()
    b.proc.send_signal(signal.SIGTERM)
    corr, resp = decode_response(1, 12, recv_frame(s))
    assert corr == 42 and resp["responses"][0]["partitions"][0]["error_code"] == 0
    assert b.proc.wait(15) == 0
    assert time.monotonic() - t0 < 10
    b.proc = None
    b._stderr.close()
    b._collect()
    assert any("stopped cleanly" in line for line in b.stdout_lines)
