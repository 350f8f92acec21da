"""Classic-protocol group members as subprocesses, and what the group tests ask of them."""
from __future__ import annotations
import json
from pathlib import Path
from support.member_procs import MemberProcess
from support.cli import pylog as pylog_cli
from support.cli import pylog_in_process


SESSION_MS = 6000


HERE = Path(__file__).resolve().parent


def describe_json(b, group):
    # no rate window: these tests look at membership and offsets, and a member that is not
    # polled meanwhile must not outlive a short max.poll.interval.ms
    # in this process: tests poll it in loops; `groups describe` runs as a process in the tests of the command
    r = pylog_in_process("groups", "describe", group, "-b", b.bootstrap, "--json", "--rate-window", "0")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)[0]


def committed(b, group):
    """{partition: committed offset} of the group, as `pylog groups describe` shows it."""
    return {o["partition"]: o["current_offset"] for o in describe_json(b, group)["offsets"]}


class Member(MemberProcess):
    """A group member subprocess (tests/support/group_member_proc.py) and what it reported."""

    def __init__(self, b, lib, group, topic):
        super().__init__([str(HERE / "group_member_proc.py"), lib, b.bootstrap, group, topic, str(SESSION_MS)])


def owners(members):
    out: dict = {}
    for m in members:
        for p in m.assignment:
            out.setdefault(p, []).append(m)
    return out


def exactly_once_owned(members, partitions):
    o = owners(members)
    return sorted(o) == list(range(partitions)) and all(len(v) == 1 for v in o.values())
