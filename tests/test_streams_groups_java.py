"""A Kafka Streams 4.4 word count with group.protocol=streams (KIP-1071) and exactly_once_v2 against
a `pylog broker start` and against Apache Kafka 4.4.0 in the same test: two instances with one standby
replica each (the group config streams.num.standby.replicas=1), the static instance restarted, the
broker killed -9 and restarted mid-run. The counts read back read_committed are exact on both, and
each instance's active and standby tasks and the group, assignment and member epochs after every
phase are the same.

While the application still runs after the last phase, `kafka-streams-groups.sh` (Kafka 4.4's
StreamsGroupCommand) lists and describes the group (state, members and their tasks, offsets and lag)
with the same output on both, member and process ids, the coordinator's port and offsets aside.
Listed differences there: LEADER-EPOCH (Kafka's partition leader epoch moves at
each restart of its node, pylog's one node keeps epoch 0); CURRENT-OFFSET and LOG-END-OFFSET of the
repartition topic (an exactly-once run aborts a different number of transactions around the kill, and
each abort marker takes an offset), so for offsets the columns compared are the partitions, which have
a committed offset, and the lag.

The program (tests/kafka/java/StreamsWordCount.java) prints STATE lines after each phase, KILL when
it wants the broker killed (it goes on at a line on its stdin), COUNT lines, HOLD (it closes at a line
on its stdin) and DONE.
"""
from __future__ import annotations

import queue
import re
import subprocess
import threading
from pathlib import Path

from support.broker_fixtures import BrokerProcess
from support.kafka_peer import KafkaNode, ToolShell, compile_java, java_command

JAVA = Path(__file__).parent / "kafka" / "java" / "StreamsWordCount.java"
TOOL = "org.apache.kafka.tools.streams.StreamsGroupCommand"
TOOL_RUNS = (("--list",), ("--list", "--state"), ("--describe", "--group", "wc"),
             ("--describe", "--group", "wc", "--members"), ("--describe", "--group", "wc", "--offsets"),
             ("--describe", "--group", "wc", "--state"), ("--describe", "--group", "wc", "--members", "--verbose"),
             ("--describe", "--group", "wc", "--offsets", "--verbose"),
             ("--describe", "--group", "wc", "--state", "--verbose"))


def run_wordcount(bootstrap: str, app: str, state_dir: Path, kill_and_restart, held=None,
                  timeout: float = 600) -> list[str]:
    """Run the program; at its KILL line call `kill_and_restart()`, then let it go on; at HOLD call
    `held()` (the group still running). Its stdout lines."""
    classes, name = compile_java(JAVA.read_text())
    args = (bootstrap, app, str(state_dir)) + (("hold",) if held is not None else ())
    proc = subprocess.Popen(java_command(name, *args, extra_cp=classes),
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
            if line in ("KILL", "HOLD"):
                (kill_and_restart if line == "KILL" else held)()
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


def tool_outputs(shell: ToolShell, bootstrap: str) -> dict:
    """{arguments: stdout} of kafka-streams-groups.sh's list and describe runs."""
    out = {}
    for args in TOOL_RUNS:
        r = shell.run(TOOL, "--bootstrap-server", bootstrap, *args)
        assert r.returncode == 0, (args, r.stdout, r.stderr)
        out[args] = r.stdout
    return out


def normalized(text: str) -> list[list[str]]:
    """A tool's table: member and process ids and the coordinator's address blanked, offsets as "n"
    or "-" and leader epochs blanked (see the listed differences), rows sorted."""
    lines = [ln.split() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return []
    head, rows = lines[0], lines[1:]
    out = []
    for row in rows:
        cells = []
        for i, cell in enumerate(row):
            col = head[i] if i < len(head) else ""
            if re.fullmatch(r"[A-Za-z0-9_-]{22}|[0-9a-f-]{36}", cell):
                cell = "ID"
            elif re.fullmatch(r"127\.0\.0\.1:\d+", cell):
                cell = "coordinator"
            elif col in ("CURRENT-OFFSET", "LOG-END-OFFSET"):
                cell = cell if cell == "-" else "n"
            elif col == "LEADER-EPOCH":
                cell = "*"
            cells.append(cell)
        out.append(cells)
    return [head] + sorted(out)


def _counts(out: list[str]) -> list[tuple[str, str, str]]:
    return [tuple(x.split()[1:]) for x in out if x.startswith("COUNT ")]


def test_streams_word_count_pylog_and_kafka(tmp_path):
    shell = ToolShell()
    tools: dict = {}
    pylog = BrokerProcess(tmp_path / "pylog").start()
    try:
        on_pylog = run_wordcount(pylog.bootstrap, "wc", tmp_path / "state-pylog",
                                 lambda: (pylog.kill9(), pylog.restart()),
                                 lambda: tools.update(pylog=tool_outputs(shell, pylog.bootstrap)))
    finally:
        if pylog.alive():
            pylog.stop()
    node = KafkaNode(tmp_path / "kafka").format().start()
    try:
        on_kafka = run_wordcount(node.bootstrap, "wc", tmp_path / "state-kafka",
                                 lambda: (node.kill9(), node.start()),
                                 lambda: tools.update(kafka=tool_outputs(shell, node.bootstrap)))
    finally:
        node.stop()
        shell.close()
    for out in (on_pylog, on_kafka):
        counts = _counts(out)
        assert len(counts) == 8 and all(got == want for _, got, want in counts), out
    assert _state(on_pylog) == _state(on_kafka), (on_pylog, on_kafka)
    for args in TOOL_RUNS:
        mine, theirs = (normalized(tools[n][args]) for n in ("pylog", "kafka"))
        assert mine == theirs, (args, tools["pylog"][args], tools["kafka"][args])
    assert "ACTIVE: 0:[" in tools["pylog"][TOOL_RUNS[3]] and "STANDBY: 1:[" in tools["pylog"][TOOL_RUNS[3]]
