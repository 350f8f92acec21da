"""Connection limits with Kafka's names: max.connections, max.connections.per.ip, connections.max.idle.ms,
queued.max.requests; and a consumer that stops reading delays nobody else."""
from __future__ import annotations

import os
import socket
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from support.broker_fixtures import call, connect, is_closed
from support.waiting import wait_until


def api_versions(s: socket.socket, timeout: float = 10.0):
    s.settimeout(timeout)
    return call(s, 18, 3, {"client_software_name": "t", "client_software_version": "1"})


def answers(s: socket.socket, timeout: float) -> bool:
    try:
        api_versions(s, timeout)
        return True
    except (socket.timeout, TimeoutError):
        return False


def test_max_connections_per_ip_closes_the_extra_one(broker_factory):
    b = broker_factory(None, "--set", "max.connections.per.ip=3")
    held = [connect(b) for _ in range(3)]
    for s in held:
        assert api_versions(s)["error_code"] == 0
    extra = connect(b)
    assert is_closed(extra, timeout=10)
    held.pop().close()
    # the freed slot is usable again (the close reaches the broker asynchronously)
    def fresh_ok():
        s = connect(b)
        try:
            return api_versions(s, 5)["error_code"] == 0
        except (ConnectionError, OSError):
            return False
        finally:
            s.close()
    wait_until(fresh_ok, 20, "a new connection after one closed")
    assert "rejected connection from 127.0.0.1" in b.stderr()
    for s in held:
        s.close()


def test_max_connections_holds_new_clients_until_one_closes(broker_factory):
    b = broker_factory(None, "--set", "max.connections=2")
    a, c = connect(b), connect(b)
    assert api_versions(a)["error_code"] == 0 and api_versions(c)["error_code"] == 0
    waiting = connect(b)  # lands in the kernel's backlog: no answer while two are open
    assert not answers(waiting, 1.5)
    a.close()
    # the request sent while waiting is answered once the broker accepts the connection
    waiting.settimeout(20)
    from support.broker_fixtures import recv_frame

    assert recv_frame(waiting)
    assert api_versions(waiting)["error_code"] == 0
    c.close()
    waiting.close()


def test_idle_connections_are_closed(broker_factory):
    b = broker_factory(None, "--set", "connections.max.idle.ms=500")
    idle = connect(b)
    busy = connect(b)
    assert api_versions(idle)["error_code"] == 0
    t0 = time.monotonic()
    closed = False
    while time.monotonic() - t0 < 3.0:  # keep `busy` talking for 6 idle periods
        assert api_versions(busy)["error_code"] == 0
        idle.settimeout(0.1)
        try:
            if idle.recv(1) == b"":
                closed = True
        except socket.timeout:
            pass
        except ConnectionError:
            closed = True
    assert closed or is_closed(idle, timeout=5)
    assert api_versions(busy)["error_code"] == 0
    busy.close()


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_a_consumer_that_stops_reading_delays_no_one(broker_factory):
    from support.broker_fixtures import build_batch
    from pylog.core.protocol import encode_request

    b = broker_factory(None, "--set", "queued.max.requests=50", "--set", "socket.send.buffer.bytes=65536")
    p = Producer({"bootstrap.servers": b.bootstrap, "linger.ms": 10})
    for i in range(2000):
        p.produce("big", value=os.urandom(1000), partition=0)
    assert p.flush(30) == 0
    rss0 = _rss_kib(b.proc.pid)

    # a hostile consumer: pipelines fetch after fetch (1 MiB each) and never reads an answer
    hog = connect(b)
    hog.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    fetch = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
             "session_id": 0, "session_epoch": -1, "topics": [{"topic": "big", "partitions": [
                 {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0, "log_start_offset": -1,
                  "partition_max_bytes": 1 << 20}]}], "forgotten_topics_data": [], "rack_id": ""}
    hog.setblocking(False)
    sent = 0
    for i in range(400):
        try:
            hog.send(encode_request(1, 11, i, "hog", fetch))
            sent += 1
        except BlockingIOError:
            break  # the broker stopped reading us: queued.max.requests
    # meanwhile others produce and consume with no delay worth the name
    t0 = time.monotonic()
    p.produce("small", value=b"hello", partition=0)
    assert p.flush(10) == 0
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": "x", "enable.auto.commit": False})
    c.assign([TopicPartition("small", 0, 0)])
    m = None
    while m is None and time.monotonic() - t0 < 15:
        m = c.poll(0.5)
    assert m is not None and m.error() is None and m.value() == b"hello"
    assert time.monotonic() - t0 < 10
    c.close()
    assert sent >= 50
    # the hog's unread answers are file ranges: the broker's memory stays put
    assert _rss_kib(b.proc.pid) - rss0 < 64 * 1024
    hog.close()


def test_queued_max_request_bytes_bounds_memory_of_large_requests(broker_factory):
    """Eight clients each start a 16 MiB request and stall: with a 16 MiB request pool the broker
    holds one such request at a time (128 MiB without it), and still serves everyone else."""
    import struct

    b = broker_factory(None, "--set", "queued.max.request.bytes=16777216")
    assert api_versions(connect(b))["error_code"] == 0
    rss0 = _rss_kib(b.proc.pid)
    size = 16 << 20
    chunk = os.urandom(1 << 20)
    hogs = []
    for _ in range(8):
        h = connect(b)
        h.setblocking(False)
        pending = [struct.pack(">i", size)] + [chunk] * 15  # all but the last MiB: never complete
        hogs.append((h, pending))
    # send until everything is taken (without the pool the broker takes it all), or until nothing
    # more was taken for 2 s (the broker stopped reading: the kernel's buffers are full), 10 s at most
    deadline = time.monotonic() + 10
    stalled_since = time.monotonic()
    while time.monotonic() < deadline and time.monotonic() - stalled_since < 2 and any(p for _, p in hogs):
        progressed = False
        for h, pending in hogs:
            while pending:
                try:
                    n = h.send(pending[0])
                except BlockingIOError:
                    break
                progressed = True
                pending[0] = pending[0][n:]
                if not pending[0]:
                    pending.pop(0)
        if progressed:
            stalled_since = time.monotonic()
        else:
            time.sleep(0.05)
    # the broker reads one request's 15 MiB and leaves the rest in the kernel's buffers
    wait_until(lambda: _rss_kib(b.proc.pid) - rss0 > 8 * 1024, 20, "the first large request being read")
    assert _rss_kib(b.proc.pid) - rss0 < 48 * 1024
    other = connect(b)
    assert api_versions(other, 5)["error_code"] == 0
    other.close()
    for h, _ in hogs:
        h.close()
