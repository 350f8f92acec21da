"""Crash and restart: kill -9 under load, clean shutdown, persistence, the log-dir lock."""
from __future__ import annotations

import subprocess
import sys
import threading
from collections import Counter, defaultdict

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from support.broker_fixtures import BrokerProcess, call, connect
from support.waiting import wait_until


def read_all(bootstrap, topic, partitions):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "assign-only", "enable.auto.commit": False,
                  "enable.partition.eof": True})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out = defaultdict(list)
    eof = set()

    def step():
        m = c.poll(1.0)
        if m is None:
            return len(eof) == partitions
        if m.error():
            if m.error().code() != KafkaError._PARTITION_EOF:
                raise AssertionError(m.error())
            eof.add(m.partition())
        else:
            out[m.partition()].append((m.offset(), m.value()))
        return len(eof) == partitions

    wait_until(step, 120, lambda: f"the end of every partition (reached {sorted(eof)})", step=0)
    c.close()
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
    def n_acked():
        with lock:
            return sum(len(v) for v in acked.values())

    try:
        wait_until(lambda: n_acked() >= 3000, 60, lambda: f"3000 acknowledged records (got {n_acked()})")
        b.kill9()
        acked_before_crash = n_acked()
        b.restart()  # same port: the producer reconnects and retries its in-flight batches
        recovered = [line for line in b.stdout_lines if "recovered: 3 " in line]  # no clean-shutdown marker
        wait_until(lambda: n_acked() > acked_before_crash + 1000, 60, "acknowledgements after the restart")
    finally:
        stop.set()
        t.join()
    assert p.flush(60) == 0
    assert not errors, errors[:3]
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


def unread_bytes(server_port: int, client_port: int) -> int | None:
    """Bytes the broker has not yet read from its end of our loopback connection (/proc/net/tcp)."""
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if int(fields[1].rsplit(":", 1)[1], 16) == server_port and \
                    int(fields[2].rsplit(":", 1)[1], 16) == client_port:
                return int(fields[4].split(":")[1], 16)
    return None


def test_sigterm_answers_a_pending_long_poll_then_exits_0(tmp_path):
    import signal

    from support.broker_fixtures import recv_frame
    from pylog.core.protocol import decode_response, encode_request

    b = BrokerProcess(tmp_path / "data").start()
    s = connect(b)
    call(s, 3, 12, {"topics": [{"name": "lp"}]})
    # a long poll that only shutdown can end early: the socket gives up well before max_wait_ms
    s.sendall(encode_request(1, 12, 42, "t", {"max_wait_ms": 600_000, "min_bytes": 1, "max_bytes": 1 << 20, "topics": [
        {"topic": "lp", "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]}))
    wait_until(lambda: unread_bytes(b.port, s.getsockname()[1]) == 0, 60, "the broker to read the fetch")
    b.proc.send_signal(signal.SIGTERM)
    s.settimeout(120)
    corr, resp = decode_response(1, 12, recv_frame(s))
    assert corr == 42 and resp["responses"][0]["partitions"][0]["error_code"] == 0
    assert b.proc.wait(120) == 0
    b.proc = None
    b._stderr.close()
    b._collect()
    assert any("stopped cleanly" in line for line in b.stdout_lines)
