"""`pylog consume` with kcat's and Kafka's habits, against `pylog broker start`:
-J checked against kcat itself, --property print.*, -o s@/e@/stored, --filter,
binary-safe output, and SIGTERM making a group member leave and commit."""
from __future__ import annotations

import base64
import json
import shutil
import signal
import subprocess
import sys
import time

import pytest

from support.broker_fixtures import module_broker
from support.client_fixtures import pylog_cli
from support.terminal import pylog_on_terminal
from support.cli import pylog

KCAT = shutil.which("kcat") or "/usr/bin/kcat"


# a group's first join is not held back group.initial.rebalance.delay.ms (3 s by default)
gbroker = module_broker("cmd", "--set", "group.initial.rebalance.delay.ms=0")


@pytest.fixture(scope="module")
def bs(gbroker):
    return gbroker.bootstrap


def send(bs, topic, records, partitions=1):
    """records: (key, value, headers, timestamp) with bytes or None; written with pylog's producer."""
    from pylog.core.client import Producer

    r = pylog_cli("topics", "create", topic, "-b", bs, "-p", partitions)
    assert r.returncode == 0, r.stderr
    with Producer({"bootstrap.servers": bs, "linger.ms": "0"}) as p:
        for key, value, headers, ts in records:
            p.send(topic, value, key=key, headers=headers or None, partition=0, timestamp=ts).get(20)


def consume(bs, topic, *args):
    r = pylog_cli("consume", topic, "-b", bs, "-e", *args)
    assert r.returncode == 0, r.stderr
    return r.stdout


# an hour old, whole seconds: older than `s@-10m`, and the broker's retention check (7 days) keeps them
T0 = (int(time.time()) - 3600) * 1000
RECS = [(b"k0", b"v0", [("h1", b"one"), ("h2", b"two")], T0), (None, b"v1", [], T0 + 1000),
        (b"k2", None, [("h1", None)], T0 + 2000), (b"k3", b'{"a": 1}', [("h3", b"x")], T0 + 3000)]


@pytest.fixture(scope="module")
def habits_j(bs):
    send(bs, "habits-j", RECS)
    return "habits-j"


def test_kcat_json_envelope_matches_kcat(bs, habits_j):
    ours = [json.loads(x) for x in consume(bs, "habits-j", "-o", "beginning", "-J").splitlines()]
    r = subprocess.run([KCAT, "-b", bs, "-C", "-t", "habits-j", "-o", "beginning", "-e", "-J", "-q"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    theirs = [json.loads(x) for x in r.stdout.splitlines() if x.startswith("{")]
    assert len(theirs) == 4
    assert ours == theirs


def test_kafka_console_consumer_properties(bs, habits_j):
    out = consume(bs, "habits-j", "--from-beginning", "--property", "print.key=true",
                  "--property", "print.offset=true", "--property", "print.headers=true",
                  "--property", "print.timestamp=true", "--property", "key.separator= | ")
    assert out.splitlines() == [
        f"CreateTime:{T0} | Offset:0 | h1:one,h2:two | k0 | v0",
        f"CreateTime:{T0 + 1000} | Offset:1 | NO_HEADERS | null | v1",
        f"CreateTime:{T0 + 2000} | Offset:2 | h1:null | k2 | null",
        f"CreateTime:{T0 + 3000} | Offset:3 | h3:x | k3 | {{\"a\": 1}}",
    ]
    r = pylog_cli("consume", "habits-j", "-b", bs, "-e", "--property", "print.key=yes")
    assert r.returncode == 2 and "print.key=yes: expected true or false" in r.stderr


def test_console_consumer_properties_print_what_kafkas_tool_prints(bs, habits_j):
    # the same topic and --property settings through Kafka 4.3.1's ConsoleConsumer: identical text
    from support.kafka_peer import run_main

    props = ["print.key=true", "print.offset=true", "print.partition=true", "print.headers=true",
             "print.timestamp=true", "key.separator=|", "headers.separator=;", "null.literal=<nil>"]
    flags = [x for p in props for x in ("--formatter-property", p)]  # Kafka 4's name; --property is deprecated
    theirs = run_main("org.apache.kafka.tools.consumer.ConsoleConsumer", "--bootstrap-server", bs, "--topic",
                      "habits-j", "--from-beginning", "--max-messages", "4", *flags, check=True)
    ours = consume(bs, "habits-j", "--from-beginning", *flags)
    assert ours == theirs.stdout
    assert ours.count("\n") == 4
    assert consume(bs, "habits-j", "--from-beginning", *[x for p in props for x in ("--property", p)]) == ours
    r = pylog_cli("consume", "habits-j", "-b", bs, "-e", "--formatter-property", "print.nothing=true")
    assert r.returncode == 2 and "--formatter-property 'print.nothing=true'" in r.stderr


def test_start_and_end_times(bs, habits_j):
    assert consume(bs, "habits-j", "-o", f"s@{T0 + 1000}", "-f", "%o\\n").split() == ["1", "2", "3"]
    assert consume(bs, "habits-j", "-o", f"s@{T0 + 1000}", "-o", f"e@{T0 + 3000}", "-f", "%o\\n").split() == \
        ["1", "2"]
    # an end time alone stops the partition there without -e
    r = pylog_cli("consume", "habits-j", "-b", bs, "-o", "beginning", "-o", f"e@{T0 + 1500}", "-f", "%o\\n")
    assert r.returncode == 0 and r.stdout.split() == ["0", "1"], r.stderr
    # relative: everything is older than ten minutes before now... and newer than 5000 days ago
    assert consume(bs, "habits-j", "-o", "s@-10m", "-f", "%o\\n").split() == []
    assert consume(bs, "habits-j", "-o", "s@-5000d", "-f", "%o\\n").split() == ["0", "1", "2", "3"]


def test_filters_on_key_and_headers(bs, habits_j):
    def offsets(*f):
        return consume(bs, "habits-j", "-o", "beginning", "-f", "%o\\n", *[x for e in f for x in ("--filter", e)]).split()
    assert offsets("key=k0") == ["0"]
    assert offsets("key~^k[23]$") == ["2", "3"]
    assert offsets("header.h1") == ["0", "2"]
    assert offsets("header.h1=one") == ["0"]
    assert offsets("header.h1", "key=k2") == ["2"]
    # -c counts printed records
    r = pylog_cli("consume", "habits-j", "-b", bs, "-o", "beginning", "--filter", "key~k", "-c", "2", "-f", "%o\n")
    assert r.returncode == 0 and r.stdout.split() == ["0", "2"]


BIN = bytes(range(256))


def test_binary_values_are_exact_when_piped_and_base64_in_json(bs):
    send(bs, "habits-bin", [(b"\xff\xfekey", BIN, [], T0), (b"text", "héllo".encode(), [], T0)])
    r = pylog("consume", "habits-bin", "-b", bs, "-e", "-o", "beginning", "-f", "%k:%s|", text=False, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == b"\xff\xfekey:" + BIN + b"|text:" + "héllo".encode() + b"|"
    docs = [json.loads(x) for x in consume(bs, "habits-bin", "-o", "beginning", "--json").splitlines()]
    assert base64.b64decode(docs[0]["value"]["base64"]) == BIN
    assert base64.b64decode(docs[0]["key"]["base64"]) == b"\xff\xfekey"
    assert docs[1]["value"] == "héllo" and docs[1]["key"] == "text"
    docs = [json.loads(x) for x in consume(bs, "habits-bin", "-o", "beginning", "-J").splitlines()]
    assert base64.b64decode(docs[0]["payload"]["base64"]) == BIN
    # --json output is `produce --format json` input: a copy holds the same bytes
    out = pylog("consume", "habits-bin", "-b", bs, "-e", "-o", "beginning", "--json", text=False, timeout=60).stdout
    r = pylog("produce", "habits-bin-copy", "-b", bs, "--format", "json", input=out, text=False, timeout=60)
    assert r.returncode == 0, r.stderr
    r = pylog_cli("diff", "habits-bin", "habits-bin-copy", "-b", bs)
    assert r.returncode == 0, r.stdout + r.stderr


def test_control_bytes_are_escaped_on_a_terminal(bs):
    send(bs, "habits-tty", [(None, b"bell\x07esc\x1b[31mred\xff", [], T0)])
    code, data = pylog_on_terminal("consume", "habits-tty", "-b", bs, "-e", "-o", "beginning")
    assert code == 0
    assert b"bell\\x07esc\\x1b[31mred\\xff" in data
    assert b"\x07" not in data and b"\x1b" not in data


def test_sigterm_makes_a_group_member_commit_and_leave(bs):
    send(bs, "habits-grp", [(None, b"v%d" % i, [], T0 + i) for i in range(5)])
    p = subprocess.Popen([sys.executable, "-m", "pylog.cli", "consume", "habits-grp", "-b", bs, "-g", "habits-g",
                          "--from-beginning"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    got = [p.stdout.readline().strip() for _ in range(5)]
    assert got == [f"v{i}" for i in range(5)]
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=60)
    # as after Ctrl-C: a normal end with the summary
    assert p.returncode == 0, err
    assert err.splitlines()[-1] == "consumed 5 records from habits-grp"
    r = pylog_cli("groups", "describe", "habits-g", "-b", bs, "--json", "--rate-window", "0")
    d = json.loads(r.stdout)[0]
    # left at once (not after session.timeout.ms), with the consumed positions committed
    assert d["state"] == "Empty" and d["members"] == []
    assert [(o["partition"], o["current_offset"]) for o in d["offsets"]] == [(0, 5)]
    r = pylog_cli("groups", "reset-offsets", "habits-g", "-b", bs, "--all-topics", "--to-earliest", "--execute")
    assert r.returncode == 0, r.stderr
    # -o stored: the group's committed offsets, now 0 again
    out = consume(bs, "habits-grp", "-g", "habits-g", "-o", "stored", "-c", "5")
    assert out.split() == [f"v{i}" for i in range(5)]
    r = pylog_cli("consume", "habits-grp", "-b", bs, "-o", "stored")
    assert r.returncode == 2 and "give --group" in r.stderr
