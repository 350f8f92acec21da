"""Class-data sharing archives for the Apache Kafka JVMs the tests start (nodes, tools, programs).

Every Kafka JVM of a run loads and verifies thousands of classes from Kafka's jars before it does
anything: on 2 shared cores that was most of a node's start (2.6 s of CPU until it answers) and
of a tool's or Java program's run (1.6 s). Java's AppCDS (JDK 13+: a dynamic archive written with
-XX:ArchiveClassesAtExit) keeps those classes parsed and verified in a file the JVM maps at start:
measured here a node starts on 1.5 s of CPU, a client program runs on 0.8 s, kafka-storage format
on 0.6 s instead of 1.0 s. Like tests/support/spark_cds.py does for Spark.

Two archives under the temp dir, named by the java binary, the class path and the JVM options,
made once per machine in a thread beside the tests (from the first Kafka JVM a process asks for;
JVMs started before they exist, or while another xdist worker makes them, run without them, and
no test waits): "node" (kafka.Kafka and kafka-storage) dumped by a node that serves a few
clients, and "client" (every other main class) dumped by a ToolShell JVM that creates,
describes, produces to and consumes from a topic with a group through Kafka's tools. A JVM maps
an archive only if its class path starts with the archive's: kafka_peer.java_command puts
Kafka's jars and the ToolShell jar first on every class path, a program's own class dir after
them (a dump refuses class dirs that are not empty). A JVM that cannot map one runs as without
it (-Xshare:auto; its cds warnings, printed on stdout, are turned off). Only the C1-only test
JVMs use them (bench/ runs Kafka as its scripts do); PYLOG_KAFKA_CDS=0 turns them off.
"""
from __future__ import annotations

import atexit
import fcntl
import functools
import hashlib
import os
import shutil
import tempfile
import threading
from pathlib import Path

NODE_CLASSES = ("kafka.Kafka", "kafka.tools.StorageTool")
# a JVM that cannot map an archive says so on stdout, which tools' output parsers would read
QUIET = "-Xlog:cds*=off"

_lock = threading.Lock()
_tried = False
# kind -> the archive the JVM this thread starts now writes (while _make runs, in its thread only)
_dumping = threading.local()


@functools.lru_cache(maxsize=None)
def _stamp(cp: str, opts: tuple[str, ...]) -> str:
    """The archives' key: the java binary, the class path's files and their mtimes (a JVM maps an
    archive only if they are the same as when it was written), the JVM options."""
    parts = [os.path.realpath(shutil.which("java") or "java"), *cp.split(os.pathsep)]
    for p in parts[:]:
        try:
            parts.append(str(os.stat(p).st_mtime_ns))
        except OSError:
            pass
    return hashlib.sha256("|".join([*parts, *opts]).encode()).hexdigest()[:12]


def _archive(kind: str, cp: str, opts: list[str]) -> Path:
    digest = _stamp(cp, tuple(opts))
    return Path(tempfile.gettempdir()) / f"pylog-kafka-cds-{os.getuid()}-{digest}-{kind}.jsa"


def options(main_class: str, cp: str, opts: list[str], c1_only: str) -> list[str]:
    """The JVM options that map (or, while one is being made, write) the archive for this JVM."""
    global _tried
    if c1_only not in opts or os.environ.get("PYLOG_KAFKA_CDS") == "0":
        return []
    kind = "node" if main_class in NODE_CLASSES else "client"
    dump_to = getattr(_dumping, "paths", {})
    if kind in dump_to:
        return [f"-XX:ArchiveClassesAtExit={dump_to[kind]}", QUIET]
    paths = {k: _archive(k, cp, opts) for k in ("node", "client")}
    if not paths[kind].exists() and not _tried:
        with _lock:
            if not _tried:
                _tried = True  # one attempt per process: a failed dump is not paid for again
                # made beside the tests, not before this JVM: no test waits for it
                maker = threading.Thread(target=_make, args=(paths,), name="kafka-cds", daemon=True)
                maker.start()
                # a short run ends after the archives are written, not in the middle (once per machine)
                atexit.register(maker.join, 300)
    return [f"-XX:SharedArchiveFile={paths[kind]}", QUIET] if paths[kind].exists() else []


def _make(paths: dict[str, Path]) -> None:
    """Write both archives (unless another process is writing them): a node that serves a
    ToolShell's topic, produce, consume and group calls, then both exit."""
    from support.kafka_peer import TOOLS, KafkaNode, ToolShell

    with open(f"{paths['node']}.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return
        if all(p.exists() for p in paths.values()):
            return
        for p in paths.values():  # left by a process that ended while it made them (we hold the lock)
            for stale in p.parent.glob(f".{p.name}.*.tmp"):
                stale.unlink(missing_ok=True)
        tmp = {k: p.with_name(f".{p.name}.{os.getpid()}.tmp") for k, p in paths.items()}
        root = paths["node"].with_name(f".{paths['node'].name}.node")
        shutil.rmtree(root, ignore_errors=True)  # a node dir left like the temp files
        node = None
        _dumping.paths = dump_to = {}
        try:
            node = KafkaNode(root).format()
            dump_to["node"] = tmp["node"]
            node.start(timeout=180)
            dump_to["client"] = tmp["client"]
            shell = ToolShell()
            b, topic = node.bootstrap, "cds"
            try:
                shell.run(TOOLS["topics"], "--bootstrap-server", b, "--create", "--topic", topic,
                          "--partitions", "2", timeout=180)
                shell.run(TOOLS["topics"], "--bootstrap-server", b, "--describe", "--topic", topic)
                shell.run(TOOLS["console-producer"], "--bootstrap-server", b, "--topic", topic, input="a\nb\n")
                shell.run(TOOLS["console-consumer"], "--bootstrap-server", b, "--topic", topic,
                          "--from-beginning", "--max-messages", "2", "--group", "cds", "--timeout-ms", "60000")
                shell.run(TOOLS["consumer-groups"], "--bootstrap-server", b, "--describe", "--group", "cds")
            finally:
                shell.close()  # the client archive is written as the JVM exits
            node.stop(timeout=120)
            for kind, path in paths.items():
                if tmp[kind].exists() and tmp[kind].stat().st_size > 0:
                    os.replace(tmp[kind], path)
        except Exception:  # noqa: BLE001 - best effort: without archives the JVMs start as before
            pass
        finally:
            dump_to.clear()
            if node is not None:
                node.kill9()
            for t in tmp.values():
                t.unlink(missing_ok=True)
            shutil.rmtree(root, ignore_errors=True)
