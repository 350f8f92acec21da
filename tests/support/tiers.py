"""Test tiers: markers applied from what a test uses, and the fast tier's skips.

A test is marked by what it needs, read from its fixtures and from the modules and programs its
test module uses:
  jvm             Apache Kafka or a Java program (a JDK and Kafka's jars from tests/kafka/pom.xml)
  spark           a Spark session, master, workers or Connect server
  kcat            the kcat command
  node            Node.js and kafkajs
  broker_process  a `pylog broker start` subprocess (or another broker process: Tansu)
  browser         headless Chromium and chromedriver (Debian's chromium, chromium-driver)
  slow            long-running (set by hand)
  source          checks the checkout's source text, not the installed package (set by hand;
                  the install tier's runs leave it out)
Every other test is `fast`: pure Python, in-process, no tool beyond the pip packages.

Under pytest-xdist (`--dist loadgroup`, set in pyproject) each module's tests run on one worker,
and the modules sharing one Spark on one worker: `group_node_ids` puts each test's group into its node id (the
`@group` suffix the loadgroup scheduler reads), because xdist 3.8 writes that suffix to an
attribute pytest 9.2 no longer reads (`Node._nodeid`; pytest 9.2 keeps the id in `Node._id`).

`pytest -m fast` runs that tier; there, and only there, a test whose tool is missing is skipped
with the tool named. The full run (`pytest`) skips nothing: CI installs every tool.
"""
from __future__ import annotations

import ast
import functools
import shutil
from pathlib import Path

import pytest

from support.source_ast import parse

HEAVY = ("jvm", "spark", "kcat", "node", "broker_process", "browser", "slow")

FIXTURE_MARKS = {
    "kafka_node": "jvm", "kafka_cluster": "jvm",
    "spark_master": "spark", "spark_cluster": "spark", "spark_connect": "spark", "keep_session": "spark", "kafka_connector": "spark",
    "spark_connect_bare": "spark",
    "broker": "broker_process", "broker_factory": "broker_process", "module_broker": "broker_process",
    "tansu": "broker_process",
    "share_pylog": "broker_process", "share_kafka": "jvm", "share_brokers": "jvm",
}

# what a test module imports or names -> the mark every test in it gets
MODULE_MARKS = {
    "support.kafka_peer": "jvm", "support.kafka_fixtures": "jvm", "support.kafka_log_dirs": "jvm",
    "support.spark_fixtures": "spark", "support.spark_rows": "spark", "pyspark": "spark",
    "support.spark_kafka": "spark",
    "support.js": "node",
    "support.broker_fixtures": "broker_process", "support.member_procs": "broker_process",
    "support.group_members": "broker_process", "support.cgroup_members": "broker_process",
    "support.client_fixtures": "broker_process", "support.txn_clients": "broker_process",
    "support.export_support": "broker_process",
    "support.share_scenarios": "broker_process",
    "support.browser": "browser",
}

TOOLS = {"jvm": ("java", "javac"), "kcat": ("kcat",), "node": ("node",), "browser": ("chromium", "chromedriver")}

DECLARED = {
    "fast": "pure Python, in-process: the fast tier (pytest -m fast)",
    "jvm": "needs a JDK and Apache Kafka's jars (tests/kafka/pom.xml)",
    "spark": "needs Spark (pyspark, a JDK)",
    "kcat": "needs the kcat command",
    "node": "needs Node.js and kafkajs (tests/js)",
    "broker_process": "starts broker processes",
    "browser": "drives headless Chromium (apt: chromium, chromium-driver)",
    "slow": "long-running test (still run in CI)",
    # set by hand, beside the tier marks: such a test says the same of every install, so the
    # install tier's runs against installed packages leave it out (.ci/install-tier)
    "source": "checks the checkout's source text, not the installed package",
}


# the last part of every module MODULE_MARKS names: an import of one spells it in the source text
_IMPORT_WORDS = tuple({prefix.rsplit(".", 1)[-1] for prefix in MODULE_MARKS})


def _statements(src: str):
    """Every statement of a module that may import a module MODULE_MARKS names, at any depth.

    Each xdist worker reads every test module at collection: a module whose text names none of
    those modules is not parsed, and the walk visits statements only (imports are statements),
    not the far more numerous expression nodes."""
    if not any(word in src for word in _IMPORT_WORDS):
        return
    stack = [parse(src)]
    while stack:
        node = stack.pop()
        yield node
        stack.extend(child for child in ast.iter_child_nodes(node)
                      if isinstance(child, (ast.stmt, ast.excepthandler, ast.match_case)))


@functools.lru_cache(maxsize=None)
def module_marks(path: str) -> frozenset[str]:
    """The marks a test module's imports and text imply for all of its tests."""
    src = Path(path).read_text()
    marks = set()
    for node in _statements(src):
        names = []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        for n in names:
            for prefix, mark in MODULE_MARKS.items():
                if n == prefix or n.startswith(prefix + "."):
                    marks.add(mark)
    if '"kcat"' in src or "'kcat'" in src or "KCAT" in src:
        marks.add("kcat")
    if "javac" in src or "kafka-run-class" in src:
        marks.add("jvm")
    return frozenset(marks)


# Spark fixtures shared for the whole run, and the group of every module that uses one: a Spark
# group runs on one worker so its sessions or cluster start once; the two groups (and Spark
# modules that start their own session) run side by side, each Spark needing at most 2 cores.
# keep_session's modules (local[2] exports that keep their session between jobs) join
# spark_local unless they use the cluster: one local[2] driver serves them all.
SPARK_SHARED = (("spark_standalone", ("spark_cluster", "spark_connect")), ("spark_local", ("spark_master", "keep_session")))


def module_fixtures(items) -> dict:
    """Every fixture name a module's tests use, by module path."""
    names: dict = {}
    for item in items:
        names.setdefault(item.path, set()).update(item.fixturenames)
    return names


def xdist_group(item, marks: set[str], module_uses: set[str] = frozenset()) -> str:
    """The parallel worker group of a test: the modules sharing one Spark (a standalone cluster,
    or the session per master) run together, so do the 3-node Kafka cluster tests; any other test
    runs with the rest of its module, so module-scoped brokers and sessions start once; the
    modules using the run's one-node Kafka (`kafka_node`) run together too."""
    if "spark" in marks:
        for group, fixtures in SPARK_SHARED:
            if module_uses.intersection(fixtures):
                return group
        return item.path.stem
    if "kafka_cluster" in item.fixturenames:
        return "kafka_cluster"
    if "peers" in item.fixturenames:  # the differential harness: one Kafka node and one pylog broker
        return "differential"
    if "share_kafka" in item.fixturenames:  # one Kafka 4.4 node for every share-group comparison
        return "share_groups"
    if names_kafka_node(str(item.path)):
        # the run's `kafka_node` is session-scoped: one worker for all its modules starts it once,
        # where modules spread over three workers started (and stopped) a Kafka node on each
        return "kafka_node"
    return item.path.stem


@functools.lru_cache(maxsize=None)
def names_kafka_node(path: str) -> bool:
    """A module that uses the `kafka_node` fixture: as an argument, or by name
    (request.getfixturevalue("kafka_node") in a fixture choosing the broker per test)."""
    return "kafka_node" in Path(path).read_text()


def group_of(item) -> str | None:
    """The xdist group an item's marks name (joined as xdist joins several), or None."""
    names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                    for m in item.iter_markers("xdist_group")})
    return "_".join(names) or None


def group_node_ids(config, items) -> None:
    """On a `--dist loadgroup` worker, end each test's node id with `@group` so the controller keeps
    a group on one worker, as pytest-xdist's own hook means to (its write no longer reaches
    pytest's node id)."""
    if getattr(config, "workerinput", None) is None or not config.getvalue("loadgroup"):
        return
    from _pytest.nodeid import NodeId  # pytest 9.2: a node's id is a NodeId in `_id`
    for item in items:
        group = group_of(item)
        if group and not item.nodeid.endswith("@" + group):
            item._id = NodeId.parse(f"{item.nodeid}@{group}")


def apply_marks(items, fast_tier: bool) -> None:
    """Mark every collected test; in the fast tier, skip one whose tool is missing, saying why."""
    uses = module_fixtures(items)
    for item in items:
        marks = set(module_marks(str(item.path)))
        marks.update(FIXTURE_MARKS[f] for f in item.fixturenames if f in FIXTURE_MARKS)
        marks.update(m.name for m in item.iter_markers() if m.name in HEAVY)
        for m in sorted(marks - {"slow"}):
            item.add_marker(m)
        if not marks:
            item.add_marker("fast")
        item.add_marker(pytest.mark.xdist_group(xdist_group(item, marks, uses[item.path])))
        if fast_tier:
            for mark in marks:
                missing = [t for t in TOOLS.get(mark, ()) if shutil.which(t) is None]
                if missing:
                    item.add_marker(pytest.mark.skip(reason=f"fast tier: {', '.join(missing)} not installed"))
