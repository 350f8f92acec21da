"""Brokers the checker starts itself (`--local pylog|kafka`) on a temporary directory, and kills,
pauses and restarts as faults.

Apache Kafka comes from KAFKA_HOME (an unpacked Kafka 4.4 distribution: its libs/*.jar) or
KAFKA_CLASSPATH (a class path, or a file holding one, such as Maven's dependency:build-classpath
writes); `java` must be on PATH. One combined broker and controller KRaft node.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from pylog.core.errors import PylogError, UsageError
from pylog.core.records.kafka_types import random_uuid, uuid_text

LISTENING = "pylog broker listening on "


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LocalBroker:
    """A broker process on a port that stays the same across restarts."""

    name = "broker"

    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.log_path = self.root / f"{self.name}.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        raise NotImplementedError

    def start(self, timeout: float = 120.0) -> None:
        with open(self.log_path, "ab") as log:
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        self.wait_ready(timeout)

    def wait_ready(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise PylogError(f"{self.name} exited with {self.proc.returncode}: {self.log_tail()}")
            if self.ready():
                return
            time.sleep(0.2)
        raise PylogError(f"{self.name} not ready in {timeout:.0f} s: {self.log_tail()}")

    def ready(self) -> bool:
        from pylog.core.client import Admin
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                pass
            admin = Admin({"bootstrap.servers": self.bootstrap, "request.timeout.ms": "3000",
                           "default.api.timeout.ms": "3000"})
        except Exception:  # noqa: BLE001 - not listening yet
            return False
        try:
            admin.list_topics()
            return True
        except Exception:  # noqa: BLE001 - listening, not serving yet
            return False
        finally:
            admin.close()

    def log_tail(self, n: int = 600) -> str:
        try:
            return " ".join(self.log_path.read_text(errors="replace")[-n:].split())
        except OSError:
            return ""

    def signal(self, sig: int) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(sig)

    def kill(self) -> None:
        """kill -9, and wait for the process to be gone."""
        self.signal(signal.SIGKILL)
        if self.proc is not None:
            self.proc.wait(30)

    def pause(self) -> None:
        self.signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        self.resume()
        self.signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.kill()


class LocalPylog(LocalBroker):
    name = "pylog broker"

    def __init__(self, root: Path, faults: bool = False):
        super().__init__(root)
        self.metrics_port = free_port() if faults else None

    @property
    def metrics_url(self) -> str | None:
        return f"http://127.0.0.1:{self.metrics_port}" if self.metrics_port else None

    def command(self) -> list[str]:
        cmd = [sys.executable, "-m", "pylog.cli", "broker", "start", "--listen", self.bootstrap,
               "--log-dir", str(self.root / "data")]
        if self.metrics_port:
            cmd += ["--allow-faults", "--set", f"metrics.listener={self.metrics_url}"]
        return cmd


def kafka_classpath(kafka_home: str | None, classpath: str | None) -> str:
    """The class path of Apache Kafka's jars, or a one-line UsageError saying what is missing."""
    if classpath:
        path = Path(classpath)
        if path.is_file():
            return path.read_text().strip()
        return classpath
    if kafka_home:
        jars = sorted(Path(kafka_home, "libs").glob("*.jar"))
        if not jars:
            raise UsageError(f"--local kafka: no jars in {kafka_home}/libs (KAFKA_HOME must be an unpacked "
                             "Apache Kafka distribution)")
        return os.pathsep.join(map(str, jars))
    raise UsageError("--local kafka needs Apache Kafka's jars: set KAFKA_HOME (an unpacked Kafka 4.4.0) or "
                     "KAFKA_CLASSPATH (a class path or a file holding one)")


class LocalKafka(LocalBroker):
    name = "Apache Kafka"

    def __init__(self, root: Path, classpath: str):
        super().__init__(root)
        self.java = shutil.which("java")
        if self.java is None:
            raise UsageError("--local kafka needs java on PATH")
        self.classpath = classpath
        self.controller_port = free_port()
        self.config = self.root / "server.properties"
        props = {
            "process.roles": "broker,controller", "node.id": 1,
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER", "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.root / "data"), "metadata.log.dir": str(self.root / "metadata"),
            "offsets.topic.replication.factor": 1, "offsets.topic.num.partitions": 10,
            "transaction.state.log.replication.factor": 1, "transaction.state.log.min.isr": 1,
            "transaction.state.log.num.partitions": 10, "group.initial.rebalance.delay.ms": 0,
            "share.coordinator.state.topic.replication.factor": 1, "share.coordinator.state.topic.min.isr": 1,
        }
        self.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()))
        cluster_id = uuid_text(random_uuid())  # never a leading '-': kafka-storage would take it for an option
        fmt = subprocess.run(self.java_command("kafka.tools.StorageTool", "format", "-t", cluster_id, "-c",
                                               str(self.config), "--ignore-formatted"),
                             capture_output=True, text=True, timeout=300)
        if fmt.returncode != 0:
            raise PylogError(f"kafka-storage format failed: {' '.join(fmt.stderr.split())[-400:]}")

    def java_command(self, main: str, *args: str) -> list[str]:
        return [self.java, "-Xms128m", "-Xmx768m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Djava.awt.headless=true", "-cp", self.classpath, main, *args]

    def command(self) -> list[str]:
        return self.java_command("kafka.Kafka", str(self.config))
