"""`pylog produce`: the interrupted summary (Ctrl-C and SIGTERM) and one line per distinct
delivery error with its count, against `pylog broker start`."""
from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from support.client_fixtures import pylog_cli
from support.waiting import wait_until


@pytest.fixture(scope="module")
def bs(broker):
    return broker.bootstrap


def produce_proc(*args: str) -> subprocess.Popen:
    """`pylog produce ARGS` reading a pipe, started as from a terminal: SIGINT at its default. A worker
    process that ran Spark's tests before may have SIGINT ignored, and a child inherits that (Python then
    installs no KeyboardInterrupt handler)."""
    return subprocess.Popen([sys.executable, "-m", "pylog.cli", "produce", *args], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))


def end_offset(bs, topic):
    r = pylog_cli("topics", "describe", topic, "-b", bs, "--json")
    return json.loads(r.stdout)["partitions"][0]["end_offset"] if r.returncode == 0 else -1


@pytest.mark.parametrize("sig,code,last", [(signal.SIGINT, 130, "pylog: interrupted"),
                                           (signal.SIGTERM, 143, "pylog: terminated")])
def test_interrupt_prints_the_summary_marked_interrupted(bs, sig, code, last):
    topic = f"prod-int-{sig.name.lower()}"
    assert pylog_cli("topics", "create", topic, "-b", bs).returncode == 0
    p = produce_proc(topic, "-b", bs)
    p.stdin.write("a\nb\nc\n")
    p.stdin.flush()
    wait_until(lambda: end_offset(bs, topic) == 3, 60, "3 records stored")
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == code, err
    lines = err.strip().splitlines()
    assert lines[-1] == last
    assert lines[-2].startswith(f"interrupted: produced 3 records (3 bytes) to {topic} partitions [0]")
    assert lines[-2].endswith("; 0 failed; 0 in flight at the interrupt, 0 dropped (never acknowledged)")


def test_interrupt_summary_in_json(bs):
    assert pylog_cli("topics", "create", "prod-int-json", "-b", bs).returncode == 0
    p = produce_proc("prod-int-json", "-b", bs, "--json")
    p.stdin.write("a\nb\n")
    p.stdin.flush()
    wait_until(lambda: end_offset(bs, "prod-int-json") == 2, 60, "2 records stored")
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    doc = json.loads(out)
    assert p.returncode == 130 and doc["records"] == 2 and doc["interrupted"] is True
    assert doc["in_flight"] == 0 and doc["dropped"] == 0


def test_one_line_per_distinct_error_with_a_count(bs):
    assert pylog_cli("topics", "create", "prod-errs", "-b", bs).returncode == 0
    big = "x" * 3000
    lines = "".join(f"{big}\n" if i % 2 else f"small{i}\n" for i in range(60))  # 30 too large
    r = pylog_cli("produce", "prod-errs", "-b", bs, "-X", "max.request.size=2000", input=lines)
    assert r.returncode == 1, r.stderr
    detail = [x for x in r.stderr.splitlines() if x.startswith("  ")]
    assert len(detail) == 1, r.stderr
    assert detail[0].startswith("  30 records failed: ") and "max.request.size" in detail[0]
    assert detail[0].endswith("(lines 2, 4, 6, 8, 10 and 25 more)")
    assert "produced 30 records" in r.stderr
    r = pylog_cli("produce", "prod-errs", "-b", bs, "-X", "max.request.size=2000", "--json", input=lines)
    doc = json.loads(r.stdout)
    assert [(e["count"], e["lines"][:3]) for e in doc["errors"]] == [(30, [2, 4, 6])]
    assert len(doc["failed"]) == 30


def test_batch_size_is_kcats_from_a_file_or_pipe_and_kafkas_from_a_terminal(monkeypatch):
    from pylog.commands import produce as cmd

    monkeypatch.setattr(cmd.sys.stdin, "isatty", lambda: False, raising=False)
    assert cmd._batch_size(None, "in.txt", {}) == cmd._batch_size(None, "-", {}) == 1_000_000
    assert cmd._batch_size(16384, "in.txt", {}) == 16384  # --batch-size wins
    assert cmd._batch_size(None, "in.txt", {"batch.size": "20000"}) is None  # so does -X batch.size
    monkeypatch.setattr(cmd.sys.stdin, "isatty", lambda: True, raising=False)
    assert cmd._batch_size(None, "-", {}) is None  # the producer's 16384
    assert cmd._batch_size(None, "in.txt", {}) == 1_000_000
