"""pytest fixtures for a real Kafka broker, registered through the `pytest11` entry point.

Installing pylog makes them available to every test suite:

    def test_orders(pylog_broker):                     # one broker for the whole session
        from confluent_kafka import Producer
        p = Producer({"bootstrap.servers": pylog_broker.bootstrap})
        ...

    def test_fresh(pylog_broker_function):             # a new, empty broker for this test
        ...

    def test_retries(pylog_broker, pylog_faults):      # the session broker's fault rules,
        pylog_faults.add(api="Produce", error="NOT_ENOUGH_REPLICAS", count=2)   # cleared after the test

    def test_avro(pylog_schema_registry):              # a broker with a schema registry
        conf = {"url": pylog_schema_registry.schema_registry_url}   # confluent-kafka's
        ...

Broker settings use Kafka's property names: `--pylog-broker-set KEY=VALUE` on the command line
(repeatable) or `pylog_broker_settings` lines in the ini file apply to both fixtures;
`@pytest.mark.pylog_broker(settings={...})` adds settings for one test's function broker.
"""
from __future__ import annotations

import pytest

from pylog.testing.embedded import EmbeddedBroker


def pytest_addoption(parser):
    group = parser.getgroup("pylog", "pylog embedded Kafka broker")
    group.addoption("--pylog-broker-set", action="append", default=[], metavar="KEY=VALUE",
                    help="broker property for the pylog_broker fixtures (Kafka's names; repeatable)")
    parser.addini("pylog_broker_settings", type="linelist", default=[],
                  help="KEY=VALUE broker properties for the pylog_broker fixtures, one per line")


def pytest_configure(config):
    config.addinivalue_line("markers", "pylog_broker(settings): extra broker properties for pylog_broker_function")


def _settings(config) -> dict:
    out = {}
    for item in [*config.getini("pylog_broker_settings"), *config.getoption("pylog_broker_set")]:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise pytest.UsageError(f"pylog broker setting {item!r}: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


@pytest.fixture(scope="session")
def pylog_broker(request, tmp_path_factory):
    """One embedded pylog broker for the whole test session (`.bootstrap` is its address)."""
    with EmbeddedBroker(tmp_path_factory.mktemp("pylog-broker"), settings=_settings(request.config)) as broker:
        yield broker


@pytest.fixture
def pylog_broker_function(request, tmp_path):
    """A fresh embedded pylog broker for one test, on an empty log dir."""
    settings = _settings(request.config)
    marker = request.node.get_closest_marker("pylog_broker")
    if marker is not None:
        settings.update({k: str(v) for k, v in marker.kwargs.get("settings", {}).items()})
    with EmbeddedBroker(tmp_path / "pylog-broker", settings=settings) as broker:
        yield broker


@pytest.fixture(scope="session")
def pylog_schema_registry(request, tmp_path_factory):
    """One embedded pylog broker serving a schema registry, for the whole session:
    `.schema_registry_url` for registry clients, `.bootstrap` for Kafka clients."""
    with EmbeddedBroker(tmp_path_factory.mktemp("pylog-registry"), settings=_settings(request.config),
                        schema_registry=True) as broker:
        yield broker


@pytest.fixture
def pylog_faults(pylog_broker):
    """The session broker's fault rules (`pylog_broker.faults`), every rule cleared after the test."""
    yield pylog_broker.faults
    pylog_broker.faults.clear()
