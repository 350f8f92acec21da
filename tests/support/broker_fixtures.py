"""A real `pylog broker start` subprocess for tests, plus small wire helpers.

`broker` (module scope) starts one broker per test module on a free port and
stops it with SIGTERM at the end, asserting it was still running and exits 0
(`stop_clean()`). `BrokerProcess` also offers `kill9()` and `restart()` for
crash tests.
"""
from __future__ import annotations


import os
import queue
import shlex
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from support.waiting import wait_until

LISTENING = "pylog broker listening on "


class BrokerProcess:
    def __init__(self, log_dir: Path, *extra: str):
        self.log_dir = Path(log_dir)
        self.extra = list(extra)
        self.proc: subprocess.Popen | None = None
        self.host = "127.0.0.1"
        self.port = 0
        self.stdout_lines: list[str] = []
        self._lines: queue.Queue = queue.Queue()
        self.stderr_path = self.log_dir.parent / f"{self.log_dir.name}.broker-stderr.txt"

    @property
    def bootstrap(self) -> str:
        return f"{self.host}:{self.port}"

    def start(self, port: int | None = None, timeout: float = 20.0) -> "BrokerProcess":
        listen = f"127.0.0.1:{port if port is not None else 0}"
        cmd = [sys.executable, "-m", "pylog.cli", "broker", "start", "--listen", listen,
               "--log-dir", str(self.log_dir), *self.extra,
               # e.g. "--faults tests/faults_never_match.json": an interop suite run against
               # a broker whose fault rules never match
               *shlex.split(os.environ.get("PYLOG_TEST_BROKER_ARGS", ""))]
        self._stderr = open(self.stderr_path, "ab")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=self._stderr, text=True)
        self._lines = queue.Queue()
        self._pump_thread = threading.Thread(target=self._pump, args=(self.proc, self._lines), daemon=True)
        self._pump_thread.start()
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                self.proc.kill()
                raise AssertionError(f"broker did not start in {timeout}s: {self.stderr()}")
            try:
                line = self._lines.get(timeout=left)
            except queue.Empty:
                continue
            if line is None:
                raise AssertionError(f"broker exited with {self.proc.wait()}: {self.stderr()}")
            self.stdout_lines.append(line)
            if line.startswith(LISTENING):
                self.port = int(line.rsplit(":", 1)[1])
                return self

    @staticmethod
    def _pump(proc, q):
        for line in proc.stdout:
            q.put(line.rstrip("\n"))
        q.put(None)

    def _collect(self) -> None:
        """After exit: keep the rest of stdout in stdout_lines."""
        self._pump_thread.join(5)
        while True:
            try:
                line = self._lines.get_nowait()
            except queue.Empty:
                return
            if line is not None:
                self.stdout_lines.append(line)

    def stderr(self, tail: int | None = 4000) -> str:
        """The broker's stderr so far (its log), the last `tail` characters or all of it."""
        try:
            text = self.stderr_path.read_text(errors="replace")
        except OSError:
            return ""
        return text[-tail:] if tail else text

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM and wait; returns the exit code."""
        if self.proc is None:
            return 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"broker did not stop on SIGTERM within {timeout}s: {self.stderr()}")
        self.proc = None
        self._collect()
        self._stderr.close()
        return rc

    def stop_clean(self) -> None:
        """End of a test: the broker must not have died under it, and SIGTERM must exit 0.

        A broker the test itself stopped or killed (`stop()`, `kill9()`) is left alone."""
        if self.proc is None:
            return
        died = self.proc.poll()
        assert died is None, f"broker died during the test (exit code {died}): {self.stderr()}"
        rc = self.stop()
        assert rc == 0, f"broker exit code {rc} on SIGTERM: {self.stderr()}"

    def kill9(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.proc = None
        self._collect()
        self._stderr.close()

    def restart(self, same_port: bool = True) -> "BrokerProcess":
        return self.start(port=self.port if same_port else None)

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


@pytest.fixture(scope="module")
def broker(tmp_path_factory):
    """A running broker: yields a BrokerProcess (host, port, log_dir, bootstrap). Kafka's defaults,
    group.initial.rebalance.delay.ms (3 s) included: tests count on a group's first generation
    holding every member that joined within it."""
    d = tmp_path_factory.mktemp("broker") / "data"
    b = BrokerProcess(d).start()
    yield b
    b.stop_clean()


def module_broker(name: str, *extra: str):
    """A module-scoped fixture of one broker started with `extra` options (e.g. `--set k=v`),
    stopped cleanly after the module: `gbroker = module_broker("groups", "--set", ...)`."""

    @pytest.fixture(scope="module")
    def fixture(tmp_path_factory):
        b = BrokerProcess(tmp_path_factory.mktemp(name) / "data", *extra).start()
        yield b
        b.stop_clean()

    return fixture


@pytest.fixture
def broker_factory(tmp_path):
    """Start brokers on demand (own dirs or shared); at the end each must still be running
    (unless the test stopped it) and stop with exit 0."""
    started: list[BrokerProcess] = []

    def make(log_dir: Path | None = None, *extra: str, port: int | None = None) -> BrokerProcess:
        b = BrokerProcess(log_dir or (tmp_path / f"data{len(started)}"), *extra)
        started.append(b)
        return b.start(port=port)

    yield make
    for b in started:
        b.stop_clean()


def read_to_end(b, topic: str, partitions, isolation: str, timeout: float = 20.0, strict: bool = True) -> list:
    """confluent-kafka messages of `partitions` from offset 0 up to their end (for read_committed:
    the LSO), in arrival order. strict: fail on a consumer error or on no EOF within `timeout`;
    otherwise skip errors and return what arrived by then (for polling while a broker restarts)."""
    from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

    partitions = set(partitions)
    c = Consumer({"bootstrap.servers": b.bootstrap, "group.id": f"reader-{time.monotonic_ns()}",
                  "isolation.level": isolation, "enable.partition.eof": True, "enable.auto.commit": False})
    c.assign([TopicPartition(topic, p, 0) for p in sorted(partitions)])
    out, eof = [], set()
    deadline = time.monotonic() + timeout
    try:
        while eof != partitions:
            if time.monotonic() >= deadline:
                assert not strict, f"no EOF on {partitions - eof} of {topic} in {timeout}s"
                break
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                elif strict:
                    raise KafkaException(m.error())
                continue
            eof.discard(m.partition())
            out.append(m)
    finally:
        c.close()
    return out


# ---- raw wire helpers (pylog's codec over a plain socket) ----------------

def connect(b: BrokerProcess, timeout: float = 10.0) -> socket.socket:
    s = socket.create_connection((b.host, b.port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def recv_exact(s: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = s.recv(n - len(out))
        if not chunk:
            raise ConnectionError(f"closed after {len(out)} of {n} bytes")
        out += chunk
    return bytes(out)


def recv_frame(s: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", recv_exact(s, 4))
    return recv_exact(s, size)


def call(s: socket.socket, api_key: int, version: int, body: dict, correlation_id: int = 1,
         client_id: str | None = "pylog-test"):
    from pylog.core.protocol import decode_response, encode_request

    s.sendall(encode_request(api_key, version, correlation_id, client_id, body))
    corr, resp = decode_response(api_key, version, recv_frame(s))
    assert corr == correlation_id
    return resp


def is_closed(s: socket.socket, timeout: float = 5.0) -> bool:
    """True when the peer closed the connection (EOF or reset) within timeout."""
    s.settimeout(timeout)
    try:
        while True:
            data = s.recv(65536)
            if not data:
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def build_batch(records, *, base_timestamp: int | None = None, codec: int = 0, producer_id: int = -1,
                producer_epoch: int = -1, base_sequence: int = -1) -> bytearray:
    """A v2 record batch of (key, value, headers) tuples, built with pylog's builder."""
    from pylog.core.records import BatchBuilder

    ts = int(time.time() * 1000) if base_timestamp is None else base_timestamp
    b = BatchBuilder(codec=codec, producer_id=producer_id, producer_epoch=producer_epoch,
                     base_sequence=base_sequence)
    for i, (k, v, h) in enumerate(records):
        b.append(ts + i, k, v, list(h or []))
    return bytearray(b.build())


def stored_batches(broker: BrokerProcess, topic: str, partition: int) -> list:
    """Batch headers of the partition's log files, as the broker wrote them."""
    from pylog.core.records.header import iter_headers

    out = []
    for seg in sorted((broker.log_dir / f"{topic}-{partition}").glob("*.log")):
        buf = seg.read_bytes()
        out.extend(h for _, h in iter_headers(buf, 0, len(buf)))
    return out


def wait_for(cond, timeout: float = 10.0, step: float = 0.05):
    """The condition's first truthy value, or its last (falsy) value after `timeout`.

    Older spelling kept for callers that assert on the result; new tests use
    `waiting.wait_until`, which fails with a message."""
    try:
        return wait_until(cond, timeout, step=step)
    except AssertionError:
        return cond()



