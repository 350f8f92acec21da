"""Comparing pylog's dump-segment output with Kafka's DumpLogSegments.

Kafka's DumpLogSegments runs in one ToolShell JVM per test process (started on first use, closed at
exit): a JVM start per comparison was most of these tests' time on 2 cores."""
from __future__ import annotations
import atexit
import difflib
import subprocess
import threading
from pathlib import Path
from support.kafka_peer import ToolShell
from support.cli import pylog


DUMP = "org.apache.kafka.tools.DumpLogSegments"
_SHELL: list[ToolShell] = []
_LOCK = threading.Lock()


def kafka_dump(*args, timeout: float = 300, check: bool = False) -> subprocess.CompletedProcess:
    """DumpLogSegments with these arguments, in the process's tool JVM."""
    with _LOCK:
        if not _SHELL or _SHELL[0].proc.poll() is not None:
            _SHELL[:] = [ToolShell()]
            atexit.register(_SHELL[0].close)
        return _SHELL[0].run(DUMP, *map(str, args), timeout=timeout, check=check)


def pylog_dump(*args) -> subprocess.CompletedProcess:
    return pylog("dump-segment", *args, timeout=300)


def assert_same_dump(files: list[Path], *options: str) -> str:
    """Kafka's and pylog's dump of the files with the options: the same stdout, exit status 0."""
    kafka = kafka_dump(*options, "--files", ",".join(map(str, files)))
    mine = pylog_dump(*options, *files)
    assert kafka.returncode == 0, kafka.stderr[-3000:]
    assert mine.returncode == 0, mine.stderr[-3000:]
    if kafka.stdout != mine.stdout:
        diff = "".join(list(difflib.unified_diff(kafka.stdout.splitlines(True), mine.stdout.splitlines(True),
                                                 "DumpLogSegments", "pylog dump-segment"))[:60])
        raise AssertionError(f"dump of {[f.name for f in files]} {options} differs:\n{diff}")
    return kafka.stdout
