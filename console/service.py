"""The console as a service: its clients, its samplers and its HTTP server on a thread of
its own, for `pylog console` and for the broker (`console.listener`)."""
from __future__ import annotations

import logging

from pylog.console.app import ROUTES
from pylog.console.cluster import Cluster
from pylog.console.groups import Groups
from pylog.console.history import BrokerHistory, Sampler, health_source, share_source
from pylog.console.http import console_server
from pylog.console.logdir import LogDirs
from pylog.console.messages import Messages
from pylog.console.registry_view import RegistryView
from pylog.console.security import SecurityViews
from pylog.core.errors import UsageError

log = logging.getLogger("pylog.console")


class ConsoleService:
    """Everything one console serves.

    props: the client properties (bootstrap.servers, security.protocol, sasl.*, ssl.*);
    registry_url/registry_auth: the schema registry the pages read and decode with;
    log_dirs: folders whose segments and verdicts the log-dir page shows;
    broker_status: () -> the broker's status dict (pylog's broker: its metrics over time);
    metrics_url: a pylog broker's metrics listener, read for the same when not in the broker;
    share_records: (group) -> each share-partition's in-flight records (pylog's broker);
    users: {user: password} for HTTP basic auth (none: open)."""

    def __init__(self, props: dict, host: str, port: int, *, registry_url: str | None = None,
                 registry_auth: str | None = None, log_dirs=(), allow_writes: bool = False, broker_status=None,
                 metrics_url: str | None = None, share_records=None, sample_interval: float = 5.0,
                 live_log_dirs: bool = False, ssl_context=None, users: dict | None = None):
        self.props = dict(props)
        self.allow_writes = allow_writes
        self.log_dirs = LogDirs(log_dirs, live=live_log_dirs) if log_dirs else None
        registry = None
        if registry_url:
            from pylog.core.client.schema_registry import RegistryClient

            registry = RegistryClient(registry_url, registry_auth)
        if metrics_url and broker_status is None:
            broker_status = health_source(metrics_url)
        if metrics_url and share_records is None:
            share_records = share_source(metrics_url)
        self.registry_url = registry_url
        self.cluster = Cluster(self.props, allow_writes, max_age=2 * sample_interval + 1)
        self.messages = Messages(self.props, registry, allow_writes)
        self.groups = Groups(self.props, allow_writes, share_records, self.cluster)
        self.security = SecurityViews(self.props, allow_writes)
        self.registry = RegistryView(registry)
        self.broker_history = BrokerHistory(broker_status) if broker_status is not None else None
        jobs = [self.cluster.refresh, self.groups.sample_all]
        if self.broker_history is not None:
            jobs.insert(0, self.broker_history.sample)
        self.sampler = Sampler(jobs, sample_interval)
        self.server = console_server(ROUTES, self, host, port, ssl_context=ssl_context, users=users)

    # ---------------------------------------------------------------- what the pages ask
    def features(self) -> dict:
        return {"writes": self.allow_writes, "registry": self.registry_url is not None,
                "log_dirs": self.log_dirs is not None, "broker_metrics": self.broker_history is not None,
                "share_records": self.groups.share_records is not None}

    def broker_view(self) -> dict | None:
        return self.broker_history.view() if self.broker_history is not None else None

    def need_log_dirs(self) -> LogDirs:
        if self.log_dirs is None:
            raise UsageError("no log dir: start the console with --log-dir DIR, or from the broker")
        return self.log_dirs

    # ---------------------------------------------------------------- life
    @property
    def url(self) -> str:
        return self.server.url

    def start(self) -> int:
        port = self.server.start()
        self.sampler.start()
        return port

    def stop(self) -> None:
        self.sampler.stop()
        if self.sampler.is_alive():
            self.sampler.join(60)  # its clients close below: let a sample in progress end first
        self.server.stop()
        for part in (self.messages, self.groups, self.security, self.cluster):
            try:
                part.close()
            except Exception as e:  # noqa: BLE001 - closing the rest matters more
                log.debug("console: closing %s: %s", type(part).__name__, e)
