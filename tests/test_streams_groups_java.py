"""A Kafka Streams 4.4 word count with group.protocol=streams (KIP-1071) and exactly_once_v2 against
a `pylog broker start` and against Apache Kafka 4.4.0 in the same test: two instances with one standby
replica each (the group config streams.num.standby.replicas=1), the static instance restarted, the
broker killed -9 and restarted mid-run. The counts read back read_committed are exact on both, each
instance's active and standby tasks after every phase are the same, and so are the group epoch's moves
from phase to phase.

Listed difference: Kafka 4.4 ends the first phase (one instance, internal topics created) one group
epoch higher than pylog (3 against 2), and every later epoch stays one higher. Both bump the epoch for
the join and again when the internal topics appear; Kafka creates the repartition and the changelog
topic through its controller and a heartbeat can see them appear one at a time (two bumps), pylog
creates both before the next heartbeat (one bump). That cause is inferred, not confirmed.

The program (tests/kafka/java/StreamsWordCount.java) prints STATE lines after each phase, KILL when
it wants the broker killed (it goes on at a line on its stdin), COUNT lines and DONE.
"""
from __future__ import annotations

import queue
import re
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


def _state(out: list[str]) -> tuple[int, list[str]]:
    """(the first phase's group epoch, the STATE lines with every epoch counted from it)."""
    lines = [x for x in out if x.startswith("STATE ")]
    base = int(re.search(r"group_epoch=(\d+)", lines[0]).group(1))
    def relative(m):
        return f"{m.group(1)}{int(m.group(2)) - base:+d}"
    return base, [re.sub(r"\b((?:group_|assignment_)?epoch=)(\d+)", relative, x) for x in lines]


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
    (pylog_base, pylog_states), (kafka_base, kafka_states) = _state(on_pylog), _state(on_kafka)
    assert pylog_states == kafka_states, (on_pylog, on_kafka)
    assert kafka_base - pylog_base in (0, 1), (on_pylog, on_kafka)  # the listed difference above
