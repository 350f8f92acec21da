"""The order xdist hands out test groups: the longest first, so no long group starts last.

pytest-xdist's loadgroup scheduler hands out groups (tests/support/tiers.py names them) largest
test count first. Count is a poor guess at time here: one Kafka-cluster test outlasts a hundred
codec cases. `CostFirstScheduling` hands out groups by their seconds in a recorded run instead
(group_seconds.json; a group not in it is guessed from its test count), so the long groups run
side by side from the start and the short ones fill in at the end.

Regenerate the record from a full run's JUnit XML:
    pytest --junitxml=/tmp/run.xml && python tests/support/schedule.py /tmp/run.xml
or from a timeline (below) of any run that began with the full suite, `.ci/run` included (each
test's first span counts; the runs after it repeat tests):
    PYLOG_TEST_TIMELINE=/tmp/tl.txt .ci/run; python tests/support/schedule.py --record /tmp/tl.txt
What each worker did when (its idle tail): PYLOG_TEST_TIMELINE=/tmp/tl.txt pytest, then
    python tests/support/schedule.py --timeline /tmp/tl.txt
"""
from __future__ import annotations

import json
import os
import re
import sys
from collections import defaultdict
from pathlib import Path

RECORD = Path(__file__).resolve().parent / "group_seconds.json"
_GROUP_SUFFIX = re.compile(r"@([A-Za-z0-9_.-]+)\]?$")
GUESS_PER_TEST = 0.5  # seconds per test for a group the record does not know yet


def group_of_nodeid(nodeid: str) -> str:
    """The group in a node id's `@group` suffix, or the node id itself (a group of one)."""
    if nodeid.rfind("@") > nodeid.rfind("]"):
        return nodeid.rsplit("@", 1)[-1]
    return nodeid


def load_record(path: Path = RECORD) -> dict[str, float]:
    try:
        return {str(k): float(v) for k, v in json.loads(path.read_text()).items()}
    except (OSError, ValueError):
        return {}


def cost(group: str, nodeids, record: dict[str, float]) -> float:
    """A group's expected seconds: recorded; else, for a group made of modules that were groups of
    their own in the record, the sum of theirs; else guessed from its test count."""
    if group in record:
        return record[group]
    tests_by_module: dict[str, int] = defaultdict(int)
    for nodeid in nodeids:
        tests_by_module[Path(nodeid.split("::", 1)[0]).stem] += 1
    return sum(record.get(module, n * GUESS_PER_TEST) for module, n in tests_by_module.items())


def make_scheduler(config, log):
    """The loadgroup scheduler with cost-first order (pytest_xdist_make_scheduler's answer)."""
    from xdist.scheduler import LoadGroupScheduling

    record = load_record()

    class CostFirstScheduling(LoadGroupScheduling):
        _ordered = False

        def _assign_work_unit(self, node) -> None:
            if not self._ordered:
                self._ordered = True
                order = sorted(self.workqueue.items(), key=lambda kv: -cost(kv[0], kv[1], record))
                self.workqueue.clear()
                self.workqueue.update(order)
            super()._assign_work_unit(node)

    return CostFirstScheduling(config, log)


def seconds_by_group(junit_xml: Path) -> dict[str, float]:
    """Each group's seconds (setup, call and teardown of its tests) in a JUnit XML report."""
    import xml.etree.ElementTree as ET

    seconds: dict[str, float] = defaultdict(float)
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        # a run under xdist's loadgroup: the name ends with its group, inside a parametrized
        # test's brackets ("test_x[a-b@group]") or after the name ("test_y@group")
        m = _GROUP_SUFFIX.search(case.get("name", ""))
        if m:
            seconds[m.group(1)] += float(case.get("time") or 0)
    return {g: round(s, 1) for g, s in sorted(seconds.items(), key=lambda kv: -kv[1])}


TIMELINE_ENV = "PYLOG_TEST_TIMELINE"  # a file: each worker appends "worker start end nodeid" per test


def note_test(nodeid: str, start: float, end: float) -> None:
    """Append one test's wall-clock span to the PYLOG_TEST_TIMELINE file, if that is set, so a full
    run shows what each worker did when (its idle tail, the groups that ended last)."""
    path = os.environ.get(TIMELINE_ENV)
    if path:
        with open(path, "a") as f:
            f.write(f"{os.environ.get('PYTEST_XDIST_WORKER', 'main')} {start:.3f} {end:.3f} {nodeid}\n")


def print_timeline(path: Path) -> None:
    """Per worker: its first start and last end (seconds from the run's first start), the seconds
    it spent in tests, and its last three tests."""
    spans: dict[str, list] = defaultdict(list)
    for line in path.read_text().splitlines():
        worker, start, end, nodeid = line.split(" ", 3)
        spans[worker].append((float(start), float(end), nodeid))
    t0 = min(s for v in spans.values() for s, _, _ in v)
    for worker, v in sorted(spans.items()):
        v.sort()
        print(f"{worker}: {v[0][0] - t0:6.1f} - {v[-1][1] - t0:6.1f} s, {sum(e - s for s, e, _ in v):6.1f} s in "
              f"{len(v)} tests; last: " + ", ".join(f"{n.split('::')[-1][:50]} ({e - s:.1f} s)" for s, e, n in v[-3:]))


def seconds_from_timeline(path: Path) -> dict[str, float]:
    """Each group's seconds in a timeline: the first span of each test (later runs repeat tests)."""
    first: dict[str, float] = {}
    for line in path.read_text().splitlines():
        _, start, end, nodeid = line.split(" ", 3)
        first.setdefault(nodeid, float(end) - float(start))
    seconds: dict[str, float] = defaultdict(float)
    for nodeid, spent in first.items():
        m = _GROUP_SUFFIX.search(nodeid)
        if m:
            seconds[m.group(1)] += spent
    return {g: round(s, 1) for g, s in sorted(seconds.items(), key=lambda kv: -kv[1])}


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "--timeline":
        print_timeline(Path(argv[1]))
        return 0
    if len(argv) == 2 and argv[0] == "--record":
        groups = seconds_from_timeline(Path(argv[1]))
    elif len(argv) == 1:
        groups = seconds_by_group(Path(argv[0]))
    else:
        print("usage: python tests/support/schedule.py RUN.xml | --record TIMELINE | --timeline TIMELINE",
              file=sys.stderr)
        return 2
    RECORD.write_text(json.dumps(groups, indent=1) + "\n")
    print(f"{len(groups)} groups, {sum(groups.values()):.0f} s in all -> {RECORD}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
