"""Apache Kafka 4.x as the reference peer: its main classes, KRaft nodes and Java programs.

The jars come from the pinned Maven project in `tests/kafka/pom.xml`; `.ci/run` resolves
them with `mvn` before the tests start (and fails loudly when it cannot). Nothing here
skips: a missing JDK or Maven is a test error, not a silent pass.

- `classpath()`: the resolved classpath (runs mvn once if `.ci/run` did not).
- `run_main(cls, *args)`: run any Kafka main class (`kafka.tools.DumpLogSegments`,
  `org.apache.kafka.tools.TopicCommand`, ...) and return the CompletedProcess.
- `KafkaNode` / `KafkaCluster`: combined broker+controller KRaft nodes on free loopback
  ports (format, start, wait until ready, stop, kill -9, restart).
- `java_program(source)`: compile a small Java program against kafka-clients and run it.
- `ToolShell`: one JVM that runs many main classes in turn (`shell.run(cls, *args)`), for
  test modules that call Kafka's tools dozens of times (a JVM start costs seconds on 2 cores).
"""
from __future__ import annotations

import atexit
import base64
import hashlib
import os
import queue
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import uuid
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from support.broker_fixtures import recv_exact

KAFKA_DIR = Path(__file__).resolve().parents[1] / "kafka"
POM = KAFKA_DIR / "pom.xml"
CLASSPATH_FILE = KAFKA_DIR / "target" / "classpath.txt"
CLASSES_DIR = KAFKA_DIR / "target" / "programs"

KAFKA_VERSION = re.search(r"<kafka.version>([^<]+)</kafka.version>", POM.read_text()).group(1)

# Small heaps: CI machines have 2 cores and run a 3-node cluster beside the tests.
JVM_OPTS = ["-Xms128m", "-Xmx768m", "-XX:+UseSerialGC", "-Djava.awt.headless=true"]
# Tests run the JVMs with C1 only (TieredStopAtLevel=1): a node is ready in about 40% of the time, and on
# 2 shared cores the C2 compiler threads were most of a start-up. bench/ measures Kafka's throughput, so
# `python -m bench` sets FULL_JIT_ENV and its Kafka nodes, tools and clients compile as Kafka's scripts do.
FULL_JIT_ENV = "PYLOG_JVM_FULL_JIT"
C1_ONLY = "-XX:TieredStopAtLevel=1"


def jvm_options() -> list[str]:
    """The JVM options of every Kafka process started from here (see FULL_JIT_ENV)."""
    return JVM_OPTS if os.environ.get(FULL_JIT_ENV) == "1" else [*JVM_OPTS, C1_ONLY]


def classpath() -> str:
    """The pinned Kafka classpath, resolving it with mvn when missing or older than the pom."""
    if not CLASSPATH_FILE.exists() or CLASSPATH_FILE.stat().st_mtime < POM.stat().st_mtime:
        mvn = shutil.which("mvn")
        if mvn is None:
            raise RuntimeError("Apache Kafka reference peer: mvn is not installed (.ci/run installs it)")
        proc = subprocess.run(
            [mvn, "-q", "-B", "-f", str(POM), "dependency:build-classpath",
             f"-Dmdep.outputFile={CLASSPATH_FILE}"],
            capture_output=True, text=True, timeout=900)
        if proc.returncode != 0 or not CLASSPATH_FILE.exists():
            raise RuntimeError(f"mvn could not resolve Apache Kafka {KAFKA_VERSION}:\n"
                               f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return CLASSPATH_FILE.read_text().strip()


def java() -> str:
    path = shutil.which("java")
    if path is None:
        raise RuntimeError("Apache Kafka reference peer: java is not installed (.ci/run installs it)")
    return path


def _log_opts(level: str) -> list[str]:
    return [f"-Dorg.slf4j.simpleLogger.defaultLogLevel={level}",
            "-Dorg.slf4j.simpleLogger.logFile=System.err"]


def java_command(main_class: str, *args: str, extra_cp: str | None = None,
                 log_level: str = "warn", jvm_opts: list[str] | None = None) -> list[str]:
    """Kafka's jars and the ToolShell jar first on every class path, `extra_cp` (a program's own
    classes) after them: each JVM then maps the class-data archive made for them (kafka_cds.py)."""
    from support import kafka_cds

    shared = f"{classpath()}{os.pathsep}{toolshell_jar()}"
    cp = shared if extra_cp is None else f"{shared}{os.pathsep}{extra_cp}"
    opts = jvm_opts or jvm_options()
    return [java(), *opts, *kafka_cds.options(main_class, shared, opts, C1_ONLY), *_log_opts(log_level),
            "-cp", cp, main_class, *map(str, args)]


def run_main(main_class: str, *args: str, timeout: float = 180, check: bool = False,
             input: str | None = None, log_level: str = "warn",
             extra_cp: str | None = None) -> subprocess.CompletedProcess:
    """Run a Kafka main class with the pinned classpath; stdout/stderr captured as text."""
    proc = subprocess.run(java_command(main_class, *args, extra_cp=extra_cp, log_level=log_level),
                          capture_output=True, text=True, timeout=timeout, input=input)
    if check and proc.returncode != 0:
        raise AssertionError(f"{main_class} {' '.join(map(str, args))} exited {proc.returncode}:\n"
                             f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return proc


# --- Java programs --------------------------------------------------------------------------

# one ToolShell JVM per process compiles the tests' Java programs (ToolShell itself with javac)
_COMPILER: list = []
_COMPILER_LOCK = threading.Lock()


def compile_java(source: str) -> tuple[str, str]:
    """Compile one Java source (a public class with main) against Kafka; returns (classes dir, class name).

    Compiled classes are cached by the source's hash, so a test module compiles once per run."""
    name = re.search(r"public\s+(?:final\s+)?class\s+(\w+)", source).group(1)
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    out = CLASSES_DIR / f"{name}-{digest}"
    if not (out / f"{name}.class").exists():
        # compiled into a fresh folder and renamed into place: parallel test workers may compile
        # the same source at once, and none may load a half-written class
        CLASSES_DIR.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=CLASSES_DIR))
        src_dir = work / "src"
        src_dir.mkdir()
        (src_dir / f"{name}.java").write_text(source)
        args = ["-nowarn", "-cp", classpath(), "-d", str(work), str(src_dir / f"{name}.java")]
        if name == "ToolShell":
            javac = shutil.which("javac")
            if javac is None:
                raise RuntimeError("javac is not installed (.ci/run installs a JDK)")
            # javac's JVM with C1 only and the serial collector: half the CPU for these small sources
            proc = subprocess.run([javac, "-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC", *args],
                                  capture_output=True, text=True, timeout=300)
        else:  # the other programs in the process's compiler JVM: no JVM start per source
            with _COMPILER_LOCK:
                if not _COMPILER or _COMPILER[0].proc.poll() is not None:
                    _COMPILER[:] = [ToolShell()]
                    atexit.register(_COMPILER[0].close)
                proc = _COMPILER[0].run("javac", *args, timeout=300)
        if proc.returncode != 0:
            raise AssertionError(f"javac {name}.java failed:\n{proc.stderr[-4000:]}")
        try:
            os.rename(work, out)
        except OSError:  # another worker got there first: its classes are as good as ours
            shutil.rmtree(work, ignore_errors=True)
    return str(out), name


def toolshell_jar() -> str:
    """tests/kafka/ToolShell.java compiled into a jar (made once, named by the source's hash): on
    every Kafka JVM's class path, so that the ToolShell JVMs map the same class-data archive as
    the others (an archive dump refuses a class dir that is not empty)."""
    classes, _ = compile_java((KAFKA_DIR / "ToolShell.java").read_text())
    jar = Path(f"{classes}.jar")
    if not jar.exists():
        tmp = jar.with_name(f".{jar.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        with zipfile.ZipFile(tmp, "w") as z:
            for f in sorted(Path(classes).glob("*.class")):
                z.write(f, f.name)
        try:  # linked, not replaced: a jar never changes once there (archives note its mtime)
            os.link(tmp, jar)
        except FileExistsError:
            pass
        finally:
            tmp.unlink()
    return str(jar)


def java_program(source: str, *args: str, timeout: float = 180, check: bool = True,
                 input: str | None = None, log_level: str = "warn") -> subprocess.CompletedProcess:
    """Compile (cached) and run a small Java program against kafka-clients/streams."""
    classes, name = compile_java(source)
    return run_main(name, *args, timeout=timeout, check=check, input=input, log_level=log_level,
                    extra_cp=classes)


def java_named_bytes(source: str) -> dict:
    """{(name, version): bytes} from a Java program printing `NAME VERSION HEX` lines (Kafka's
    own serialization of the messages a golden test compares with)."""
    out = {}
    for line in java_program(source).stdout.splitlines():
        name, v, hexed = line.split()
        out[(name, int(v))] = bytes.fromhex(hexed)
    return out


# Kafka's command-line tools by script name (kafka-NAME.sh): their main classes
TOOLS = {
    "topics": "org.apache.kafka.tools.TopicCommand",
    "console-producer": "org.apache.kafka.tools.ConsoleProducer",
    "console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "configs": "org.apache.kafka.tools.ConfigCommand",
    "delete-records": "org.apache.kafka.tools.DeleteRecordsCommand",
    "log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "broker-api-versions": "org.apache.kafka.tools.BrokerApiVersionsCommand",
    "leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
}


@pytest.fixture(scope="module")
def shell():
    """One ToolShell JVM for the test module."""
    sh = ToolShell()
    yield sh
    sh.close()


class ToolShell:
    """Kafka main classes run one after another in one JVM (tests/kafka/ToolShell.java).

    `run()` answers like `run_main()` (a CompletedProcess with the tool's exit code, stdout and
    stderr); the JVM turns Kafka's Exit.exit into that exit code instead of exiting."""

    def __init__(self, log_level: str = "warn", programs: tuple[str, ...] = ()):
        """`programs`: Java sources (see java_program) whose main classes `run()` may call too."""
        classes = os.pathsep.join(compile_java(src)[0] for src in programs) or None
        self.proc = subprocess.Popen(java_command("ToolShell", extra_cp=classes, log_level=log_level),
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, bufsize=1)
        self._answers: queue.Queue = queue.Queue()
        threading.Thread(target=self._pump, daemon=True).start()

    def _pump(self) -> None:
        for line in self.proc.stdout:
            self._answers.put(line)
        self._answers.put(None)

    def run(self, main_class: str, *args, input: str | None = None, timeout: float = 180,
            check: bool = False) -> subprocess.CompletedProcess:
        def b64(text: str) -> str:
            return base64.b64encode(text.encode()).decode()
        args = [str(a) for a in args]
        self.proc.stdin.write("\t".join([b64(input or ""), b64(main_class), *map(b64, args)]) + "\n")
        self.proc.stdin.flush()
        try:
            line = self._answers.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"{main_class} {' '.join(args)}: no answer in {timeout}s") from None
        if line is None:
            raise AssertionError(f"the tool JVM exited {self.proc.wait()}: {self.proc.stderr.read()[-4000:]}")
        code, out, err = line.rstrip("\n").split("\t")
        proc = subprocess.CompletedProcess([main_class, *args], int(code),
                                           base64.b64decode(out).decode(errors="replace"),
                                           base64.b64decode(err).decode(errors="replace"))
        if check and proc.returncode != 0:
            raise AssertionError(f"{main_class} {' '.join(args)} exited {proc.returncode}:\n"
                                 f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
        return proc

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


# --- KRaft nodes ---------------------------------------------------------------------------

def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


_PORTS = random.Random()  # not the tests' seeded generators: workers must not draw the same ports


def free_port() -> int:
    """A port free now, for a Kafka node to listen on.

    Drawn from below the kernel's ephemeral range: a Kafka JVM binds its ports seconds after they
    are chosen, and a port from that range (what bind(0) gives) can meanwhile become the local end
    of some test client's outgoing connection (Kafka then dies: Address already in use)."""
    low = _ephemeral_low()
    for _ in range(100):
        port = _PORTS.randrange(10000, low) if low > 11000 else 0
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return s.getsockname()[1]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def random_cluster_id() -> str:
    """A KRaft cluster id: a random UUID in Kafka's URL-safe base64 form.

    Like Kafka's Uuid.randomUuid, never one starting with '-': kafka-storage's argument parser
    would take it for an option (1 id in 64)."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not text.startswith("-"):
            return text


def _metadata_broker_ids(host: str, port: int, timeout: float = 2.0) -> set[int]:
    """Raw Metadata v0 (no topics): the ids of the brokers the node reports. No client library needed."""
    client_id = b"pylog-harness"
    body = struct.pack(">i", 0)  # topics: empty array
    header = struct.pack(">hhih", 3, 0, 1, len(client_id)) + client_id
    frame = header + body
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(struct.pack(">i", len(frame)) + frame)
        size = struct.unpack(">i", recv_exact(s, 4))[0]
        resp = recv_exact(s, size)
    count = struct.unpack_from(">i", resp, 4)[0]
    ids, pos = set(), 8
    for _ in range(count):
        node_id, host_len = struct.unpack_from(">ih", resp, pos)
        ids.add(node_id)
        pos += 6 + host_len + 4
    return ids


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it when the test process dies, so that a killed or
    timed-out pytest run leaves no Kafka JVM behind (Linux prctl PR_SET_PDEATHSIG)."""
    import ctypes

    ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGKILL)


class KafkaNode:
    """One combined broker+controller Apache Kafka KRaft node in a directory of its own."""

    def __init__(self, root: Path, node_id: int = 1, *, port: int | None = None,
                 controller_port: int | None = None, overrides: dict | None = None,
                 roles: str = "broker,controller", format_args: tuple[str, ...] = ()):
        self.format_args = tuple(format_args)  # extra kafka-storage format options, e.g. --add-scram
        self.root = Path(root)
        self.node_id = node_id
        self.roles = roles
        self.port = port or free_port()
        self.controller_port = controller_port or free_port()
        self.overrides = dict(overrides or {})
        self.log_dir = self.root / "data"
        self.metadata_dir = self.root / "metadata"
        self.config_path = self.root / "server.properties"
        self.stderr_path = self.root / "kafka.log"
        self.proc: subprocess.Popen | None = None
        self.voters = f"{node_id}@127.0.0.1:{self.controller_port}"
        self.expected_brokers = 1

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def is_broker(self) -> bool:
        return "broker" in self.roles

    def properties(self) -> dict:
        listeners = []
        if self.is_broker:
            listeners.append(f"PLAINTEXT://127.0.0.1:{self.port}")
        if "controller" in self.roles:
            listeners.append(f"CONTROLLER://127.0.0.1:{self.controller_port}")
        props = {
            "process.roles": self.roles,
            "node.id": self.node_id,
            "controller.quorum.voters": self.voters,
            "listeners": ",".join(listeners),
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
            "log.dirs": str(self.log_dir),
            "metadata.log.dir": str(self.metadata_dir),
            "num.partitions": 1,
            "offsets.topic.replication.factor": min(3, self.expected_brokers),
            "offsets.topic.num.partitions": 50,
            "transaction.state.log.replication.factor": min(3, self.expected_brokers),
            "transaction.state.log.min.isr": 1,
            "group.initial.rebalance.delay.ms": 0,
            "share.coordinator.state.topic.replication.factor": min(3, self.expected_brokers),
            "share.coordinator.state.topic.min.isr": 1,
        }
        if self.is_broker:
            props["advertised.listeners"] = f"PLAINTEXT://127.0.0.1:{self.port}"
            props["inter.broker.listener.name"] = "PLAINTEXT"
        props.update(self.overrides)
        return props

    def write_config(self) -> "KafkaNode":
        """Write server.properties (a formatted node restarts with the new settings)."""
        self.root.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in self.properties().items()))
        return self

    def format(self, cluster_id: str | None = None) -> "KafkaNode":
        """Write server.properties and format the log dirs (kafka-storage format)."""
        self.write_config()
        run_main("kafka.tools.StorageTool", "format", "-t", cluster_id or random_cluster_id(),
                 "-c", str(self.config_path), "--ignore-formatted", *self.format_args, check=True)
        return self

    def start(self, wait: bool = True, timeout: float = 120) -> "KafkaNode":
        log = open(self.stderr_path, "ab")
        self.proc = subprocess.Popen(java_command("kafka.Kafka", str(self.config_path), log_level="info"),
                                     stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                     preexec_fn=_die_with_parent)
        log.close()
        if wait:
            self.wait_ready(timeout)
        return self

    def wait_ready(self, timeout: float = 120, all_brokers: bool = False) -> None:
        """Until the node answers Metadata listing itself (and, with all_brokers, every broker of its cluster)."""
        deadline = time.monotonic() + timeout
        last = None
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise AssertionError(f"Kafka node {self.node_id} exited {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if not self.is_broker:  # a controller is ready once its quorum listener accepts
                    socket.create_connection(("127.0.0.1", self.controller_port), timeout=2).close()
                    return
                ids = _metadata_broker_ids("127.0.0.1", self.port)
                if self.node_id in ids and (not all_brokers or len(ids) >= self.expected_brokers):
                    return
            except OSError as exc:
                last = exc
            time.sleep(0.2)
        raise AssertionError(f"Kafka node {self.node_id} not ready in {timeout}s ({last}):\n{self.log_tail()}")

    def log_tail(self, n: int = 4000) -> str:
        try:
            return self.stderr_path.read_text(errors="replace")[-n:]
        except OSError:
            return ""

    def stop(self, timeout: float = 60) -> int | None:
        """SIGTERM (controlled shutdown) and wait; returns the exit code."""
        if self.proc is None or self.proc.poll() is not None:
            return None if self.proc is None else self.proc.returncode
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait(10)

    def kill9(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(30)

    def restart(self, wait: bool = True, timeout: float = 120) -> "KafkaNode":
        self.stop()
        return self.start(wait=wait, timeout=timeout)


class KafkaCluster:
    """KRaft nodes forming one cluster on loopback.

    By default `size` combined broker+controller nodes (ids 1..size). With
    `dedicated_controller=True`, `size` broker-only nodes (ids 1..size) and one controller-only
    node (id 100), so that brokers can die without the cluster losing its metadata quorum.
    """

    def __init__(self, root: Path, size: int = 3, overrides: dict | None = None,
                 dedicated_controller: bool = False):
        self.root = Path(root)
        roles = "broker" if dedicated_controller else "broker,controller"
        self.nodes = [KafkaNode(self.root / f"node{i}", i, overrides=overrides, roles=roles)
                      for i in range(1, size + 1)]
        self.controllers = ([KafkaNode(self.root / "controller", 100, overrides=overrides, roles="controller")]
                            if dedicated_controller else [])
        voters = ",".join(n.voters for n in (self.controllers or self.nodes))
        for n in self.nodes + self.controllers:
            n.voters = voters
            n.expected_brokers = size
        self.cluster_id = random_cluster_id()

    @property
    def bootstrap(self) -> str:
        return ",".join(n.bootstrap for n in self.nodes)

    def node(self, node_id: int) -> KafkaNode:
        """The broker with this node id (1..size)."""
        return self.nodes[node_id - 1]

    def start(self, timeout: float = 180) -> "KafkaCluster":
        everyone = self.controllers + self.nodes
        # the nodes' kafka-storage format JVMs run side by side: one after another they were a
        # third of a cluster's start on 2 cores
        with ThreadPoolExecutor(len(everyone)) as pool:
            list(pool.map(lambda n: n.format(self.cluster_id), everyone))
        for n in everyone:
            n.start(wait=False)
        for n in everyone:
            n.wait_ready(timeout, all_brokers=True)
        return self

    def ensure_up(self, timeout: float = 180) -> "KafkaCluster":
        """Start every broker a test stopped or killed, and wait until each is ready."""
        down = [n for n in self.nodes if n.proc is None or n.proc.poll() is not None]
        for n in down:
            n.start(wait=False)
        for n in self.nodes:
            n.wait_ready(timeout)
        return self

    def stop(self, timeout: float = 60) -> None:
        """SIGTERM to every node at once (dedicated controllers after the brokers), then wait. One
        after another, the last combined node's controlled shutdown waited out its whole timeout:
        its quorum had already left."""
        for group in (self.nodes, self.controllers):
            live = [n for n in group if n.proc is not None and n.proc.poll() is None]
            for n in live:
                n.proc.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + timeout
            for n in live:
                try:
                    n.proc.wait(max(0.1, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    n.kill9()
