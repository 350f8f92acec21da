"""A Kafka Streams 4.4 word count with group.protocol=streams (KIP-1071) and exactly_once_v2 against
a `pylog broker start` and against Apache Kafka 4.4.0 in the same test: two instances with one standby
replica each (the group config streams.num.standby.replicas=1), the static instance restarted, the
broker killed -9 and restarted mid-run. The counts read back read_committed are exact on both, and
the group epochs and each instance's active and standby tasks after every phase are the same.

The program (tests/kafka/java/StreamsWordCount.java) prints STATE lines after each phase, KILL when
it wants the broker killed (it goes on at a line on its stdin), COUNT lines and DONE.
"""
from __future__ import annotations

import queue
import subprocess
import threading
from pathlib import Path

from support.broker_fixtures import BrokerProcess
from support.kafka_peer import KafkaNode, compile_java, java_command

JAVA = Path(__file__).parent / "kafka" / "java" / "StreamsWordCount.java"


def run_wordcount(bootstrap: str, app: str, state_dir: Path, kill_and_restart, timeout: float = 600) -> list[str]:
    """Run the program; at its KILL line call `kill_and_restart()`, then let it go on. Its stdout lines."""
    classes, name = compile_java(JAVA.read_text())
    proc = subprocess.Popen(java_command(name, bootstrap, app, str(state_dir), extra_cp=classes),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines: queue.Queue = queue.Queue()
    err: list = []
    threading.Thread(target=lambda: [lines.put(x.rstrip("\n")) for x in proc.stdout] + [lines.put(None)],
                     daemon=True).start()
    threading.Thread(target=lambda: err.extend(proc.stderr), daemon=True).start()
    out = []
    try:
        while True:
            line = lines.get(timeout=timeout)
            if line is None:
                break
            out.append(line)
            if line == "KILL":
                kill_and_restart()
                proc.stdin.write("go\n")
                proc.stdin.flush()
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert out and out[-1] == "DONE", "\n".join(out) + "".join(err[-200:])
    return out


def _state(out: list[str]) -> list[str]:
    return [x for x in out if x.startswith("STATE ")]


def _counts(out: list[str]) -> list[tuple[str, str, str]]:
    return [tuple(x.split()[1:]) for x in out if x.startswith("COUNT ")]


def test_streams_word_count_pylog_and_kafka(tmp_path):
    pylog = BrokerProcess(tmp_path / "pylog").start()
    try:
        on_pylog = run_wordcount(pylog.bootstrap, "wc", tmp_path / "state-pylog",
                                 lambda: (pylog.kill9(), pylog.restart()))
    finally:
        if pylog.alive():
            pylog.stop()
    node = KafkaNode(tmp_path / "kafka").format().start()
    try:
        on_kafka = run_wordcount(node.bootstrap, "wc", tmp_path / "state-kafka",
                                 lambda: (node.kill9(), node.start()))
    finally:
        node.stop()
    for out in (on_pylog, on_kafka):
        counts = _counts(out)
        assert len(counts) == 8 and all(got == want for _, got, want in counts), out
    assert _state(on_pylog) == _state(on_kafka), (on_pylog, on_kafka)
