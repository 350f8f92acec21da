"""Comparing pylog's dump-segment output with Kafka's DumpLogSegments."""
from __future__ import annotations
import difflib
import subprocess
from pathlib import Path
from support.kafka_peer import run_main
from support.cli import pylog


DUMP = "org.apache.kafka.tools.DumpLogSegments"


def pylog_dump(*args) -> subprocess.CompletedProcess:
    return pylog("dump-segment", *args, timeout=300)


def assert_same_dump(files: list[Path], *options: str) -> str:
    """Kafka's and pylog's dump of the files with the options: the same stdout, exit status 0."""
    kafka = run_main(DUMP, *options, "--files", ",".join(map(str, files)), timeout=300)
    mine = pylog_dump(*options, *files)
    assert kafka.returncode == 0, kafka.stderr[-3000:]
    assert mine.returncode == 0, mine.stderr[-3000:]
    if kafka.stdout != mine.stdout:
        diff = "".join(list(difflib.unified_diff(kafka.stdout.splitlines(True), mine.stdout.splitlines(True),
                                                 "DumpLogSegments", "pylog dump-segment"))[:60])
        raise AssertionError(f"dump of {[f.name for f in files]} {options} differs:\n{diff}")
    return kafka.stdout
