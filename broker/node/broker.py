"""The broker: its components' lifecycle (requests go through broker/dispatch.py's Dispatcher).

Start-up, in order (Broker.open_storage, then Broker.serve):
  1. log manager: lock the log dirs, load and recover every partition
  2. producer-id allocator: its block file in the first log dir; the security
     store (SCRAM credentials, ACLs) and the authorizer
  3. listeners, one server each: from here on clients can connect, and what they
     ask first (the handler table's FIRST: ApiVersions, Metadata, SASL) is answered
  4. the rest of the handler table, loaded off the event loop; requests for it (and
     any after one on the same connection) wait until step 5 is done, in order
  5. coordinators (groups, then transactions): replay their internal topics, complete
     prepared transactions, start their timers; log cleaner threads; periodic storage
     jobs (retention, checkpoints, flushes, producer expiration)
  6. the metrics listener (metrics.listener): /metrics, /health, /ready, given the
     node's metrics view (ops/metrics.py), not the Broker
  7. the schema registry (schema.registry.listeners), a client of step 3's listener,
     and the console (console.listener), a client too that reads the same metrics view
Shutdown (Broker._stop) goes the other way: cancel the periodic jobs and the
coordinators' timers, stop accepting, answer what is in flight (long polls at
once), wait for a running job, stop the cleaner, then flush the logs and write
checkpoints, producer snapshots and the clean-shutdown marker.
"""
from __future__ import annotations

import asyncio
import functools
import logging
from typing import TYPE_CHECKING

from pylog.broker.api.fetch_waiters import FetchWaiters
from pylog.broker.api.handlers import FIRST, SERVED, Handler, the_rest
from pylog.broker.api.views import (
    AdminView, GroupView, MetadataView, PartitionLogView, ProduceView, SaslView, SecurityView, ShareView, TxnView,
    View,
)
from pylog.broker.common.node_state import NodeState
from pylog.broker.dispatch import Dispatcher
from pylog.broker.ops.dynamic_config import DynamicBrokerConfigs
from pylog.broker.ops.metrics import BrokerStats, MetricsView
from pylog.broker.ops.quotas import QuotaManager, QuotaStore
from pylog.broker.ops.request_faults import FaultEngine
from pylog.broker.security.store import SecurityStore
from pylog.broker.security.tokens import TokenStore
from pylog.broker.node.features import FinalizedFeatures
from pylog.broker.node.producer_ids import ProducerIdManager
from pylog.broker.common.partition_logs import PartitionLogs
from pylog.broker.net.server import Server
from pylog.broker.node.jobs import periodic_jobs
from pylog.broker.node.settings import BrokerSettings
from pylog.broker.node.start_gate import StartGate
from pylog.core import protocol
from pylog.storage import LogManager, RecoveryReport

if TYPE_CHECKING:
    # the components built after the listener is up (the coordinators come with the rest of
    # the handler table), and the registry, the console and the metrics listener (and their
    # HTTP stack), loaded only when their listeners are set
    from pylog.broker.common.scheduler import Scheduler
    from pylog.broker.groups.coordinator import GroupCoordinator
    from pylog.broker.groups.share.coordinator import ShareCoordinator
    from pylog.broker.ops.admin_http import MetricsListener
    from pylog.broker.ops.log_dirs import LogDirMonitor
    from pylog.broker.security.authorizer import Authorizer
    from pylog.broker.txn.coordinator import TransactionCoordinator
    from pylog.console.service import ConsoleService
    from pylog.registry.service import SchemaRegistryService

log = logging.getLogger("pylog.broker")


def _no_logs_yet() -> None:
    """The dynamic configs' topic refresh before the logs are open (they open with its values)."""


class Broker:
    """A single-node Kafka broker on pylog's storage engine.

    `open_storage()` loads the log dirs (before the event loop runs, so the
    caller can report recovery); `serve()` starts the other components,
    listens, and runs until `request_stop()`, then stops everything.
    """

    def __init__(self, settings: BrokerSettings):
        self.settings = settings
        self.config = settings.config
        self.node_id = settings.node_id
        self.loop: asyncio.AbstractEventLoop | None = None
        self.cluster_id = ""
        self.recovery: RecoveryReport | None = None
        # components, in start order; each is None until its step of the lifecycle builds it
        self.logs: LogManager | None = None
        self.partitions: PartitionLogs | None = None  # what the coordinators use of the logs
        self.producer_ids: ProducerIdManager | None = None
        self.group_coordinator: GroupCoordinator | None = None
        self.txn_coordinator: TransactionCoordinator | None = None
        self.share_coordinator: ShareCoordinator | None = None  # share groups (KIP-932)
        self.coordinators: list[GroupCoordinator | TransactionCoordinator | ShareCoordinator] = []  # load, start, stop
        self.scheduler: Scheduler | None = None
        self.server: Server | None = None  # the first listener's
        self.servers: list[Server] = []
        self.security: SecurityStore | None = None  # SCRAM credentials and ACLs
        self.authorizer: Authorizer | None = None  # when authorizer.class.name is set
        self.tokens: TokenStore | None = None  # delegation tokens
        self.stats = BrokerStats()  # counters for /metrics and `broker status`
        self.metrics: MetricsListener | None = None  # when metrics.listener is set
        self.schema_registry: SchemaRegistryService | None = None  # when schema.registry.listeners is set
        self.console: ConsoleService | None = None  # when console.listener is set
        self.quotas: QuotaManager | None = None  # client quota configs and their rates
        self.dir_health: LogDirMonitor | None = None  # full and offline log dirs
        self.dynamic_configs: DynamicBrokerConfigs | None = None
        self.features: FinalizedFeatures | None = None  # transaction.version, share.version (KIP-584)
        self.state = NodeState()  # stopping, and why it halted: shared with what must know
        # requests: the dispatcher, built once the logs and the authorizer are open
        self.dispatcher: Dispatcher | None = None
        self._api_keys = [{"api_key": k, "min_version": low, "max_version": protocol.SCHEMAS[k].max_version}
                          for k, low in sorted(SERVED.items())]
        self.fetch_waiters = FetchWaiters()
        # fault rules: an empty table (one dict lookup per request) until a rule is added
        cfg = self.config
        self.faults = FaultEngine(frozenset(SERVED), self.stats,
                                  enabled=bool(cfg.get("faults.enable") or cfg.get("faults.file")))
        # what each family of handlers is given (api/views.py), by family; built as its parts exist
        self.views: dict[str, View] = {}

    # ---- start-up --------------------------------------------------------
    def open_storage(self):
        """Steps 1-2: the log manager (with recovery) and the producer-id allocator."""

        # dynamic broker configs (kafka-configs --entity-type brokers) apply before the logs open
        self.dynamic_configs = DynamicBrokerConfigs(self.settings.log_dirs[0], self.config, _no_logs_yet)
        self.dynamic_configs.load()
        self.logs = LogManager(list(self.settings.log_dirs), self.config)
        self.dynamic_configs.refresh_topics = self.logs.refresh_topic_defaults
        self.recovery = self.logs.startup(start_cleaner=False)
        self.partitions = PartitionLogs(self.logs, self.config, self.fetch_waiters.wake)
        metas = list(self.logs.meta.values())
        self.cluster_id = metas[0].cluster_id if metas else ""
        self.producer_ids = ProducerIdManager(self.settings.log_dirs[0])
        self.features = FinalizedFeatures(self.settings.log_dirs[0])
        self.features.change(self.settings.feature_levels)
        self.settings.transaction_version = self.features.level("transaction.version")
        self.open_security()
        self.faults.topic_by_id = self.partitions.topic_by_id
        self._make_dispatcher()
        return self.recovery

    def _make_dispatcher(self) -> None:
        """The request path, serving the handler table's FIRST part until serve() loads the rest
        (requests for the rest wait at the start gate until then)."""
        self.dispatcher = Dispatcher(
            gate=StartGate(frozenset(h.key for h in FIRST)), faults=self.faults, stats=self.stats,
            topics=self.partitions, authorizer=self.authorizer, quotas=self.quotas, api_keys=self._api_keys)
        parts = self.partitions
        api_keys = self._api_keys
        self.views["meta"] = MetadataView(
            node_id=self.node_id, cluster_id=self.cluster_id, config=self.config, settings=self.settings,
            logs=self.logs, features=self.features, authorizer=self.authorizer, group_coordinator=None,
            advertised_for=self.settings.advertised_for, api_version_ranges=lambda: api_keys,
            leader_epoch=parts.leader_epoch)
        self.views["sasl"] = SaslView(respond_and_close=self.dispatcher.respond_and_close)
        self.dispatcher.add(FIRST, self._node_for)

    def _node_for(self, handler: Handler) -> View:
        """What a handler is called with: its family's view of the node."""
        return self.views[handler.family]

    def _make_views(self) -> None:
        """The views of the handler families served after FIRST, once the coordinators exist."""
        parts, waiters, meta = self.partitions, self.fetch_waiters, self.views["meta"]
        meta.group_coordinator = self.group_coordinator
        wait = functools.partial(waiters.wait, self.loop)
        logs_part = dict(config=self.config, logs=self.logs, loop=self.loop, stats=self.stats,
                         dir_health=self.dir_health, state=self.state, quotas=self.quotas,
                         leader_epoch=parts.leader_epoch, wake=waiters.wake, wait_for_append=wait)
        groups = GroupView(node_id=self.node_id, logs=self.logs, group_coordinator=self.group_coordinator,
                           txn_coordinator=self.txn_coordinator, authorizer=self.authorizer,
                           advertised_for=self.settings.advertised_for)
        share = ShareView(node_id=self.node_id, config=self.config, logs=self.logs, loop=self.loop,
                          share_coordinator=self.share_coordinator, features=self.features, state=self.state,
                          topic_by_id=parts.topic_by_id, wait_for_append=wait)
        admin = AdminView(node_id=self.node_id, cluster_id=self.cluster_id, config=self.config,
                          settings=self.settings, logs=self.logs, dynamic_configs=self.dynamic_configs,
                          authorizer=self.authorizer, group_coordinator=self.group_coordinator, quotas=self.quotas,
                          wake_topic=waiters.wake_topic)
        security = SecurityView(authorizer=self.authorizer, security=self.security, tokens=self.tokens,
                                quotas=self.quotas)
        self.views.update(
            produce=ProduceView(**logs_part, txn_coordinator=self.txn_coordinator, producer_ids=self.producer_ids),
            fetch=PartitionLogView(**logs_part),
            groups=groups, consumer_groups=groups, streams_groups=groups,
            txn=TxnView(logs=self.logs, txn_coordinator=self.txn_coordinator,
                        group_coordinator=self.group_coordinator, authorizer=self.authorizer,
                        leader_epoch=parts.leader_epoch, wake=waiters.wake),
            share=share, share_admin=share, share_state=share, cluster=meta,
            admin=admin, configs=admin, reassign=admin, security=security, tokens=security, quotas=security)

    def open_security(self) -> None:
        """The credential and ACL store, bootstrap credentials (--add-scram), the authorizer."""
        self.security = SecurityStore(self.settings.log_dirs[0])
        self.tokens = TokenStore(self.settings.log_dirs[0], self.config)
        if self.settings.add_scram:
            self.security.change_credentials({(u, m): c for u, m, c in self.settings.add_scram}, [])
        if (self.config.get("authorizer.class.name") or "").strip():  # its rules load only when one is named
            from pylog.broker.security.authorizer import make_authorizer

            self.authorizer = make_authorizer(self.config, self.security)
        self.quotas = QuotaManager(QuotaStore(self.settings.log_dirs[0]), self.config)
        if self.authorizer is not None:
            logs = self.logs
            self.authorizer.attach(self.partitions.topic_by_id, lambda: logs.topics, self.config)

    async def serve(self, ready_callback=None) -> None:
        """Steps 3-6, then run until request_stop() and stop every component."""
        self.loop = asyncio.get_running_loop()
        stop = asyncio.Event()
        self.state.watch(stop)
        try:
            self._start_faults()
            port = self._listen()
            # the rest of the handler table (and the coordinators' modules) loads in a thread
            # while the loop answers what FIRST serves
            self.start_the_rest(await self.dispatcher.gate.load(self.loop, the_rest))
            view = self._metrics_view()
            await self._start_metrics(view)
            await self._start_schema_registry()
            await self._start_console(view)
            if ready_callback:
                ready_callback(port)
            await stop.wait()
        finally:
            await self._stop()

    def start_the_rest(self, rest: tuple[Handler, ...]) -> None:
        """Step 5 and the rest of the handler table: the held requests run, and from then on
        the servers hand requests to the dispatcher past the start gate."""
        self._start_services()
        self._make_views()
        self.dispatcher.add(rest, self._node_for)
        self.dispatcher.open()
        for server in self.servers:
            server.dispatch = self.dispatcher.dispatch

    def _start_services(self) -> None:
        from pylog.broker.common.scheduler import Scheduler
        from pylog.broker.groups.coordinator import GroupCoordinator
        from pylog.broker.groups.share.coordinator import ShareCoordinator
        from pylog.broker.ops.log_dirs import CHECK_EVERY_S, LogDirMonitor
        from pylog.broker.txn.coordinator import TransactionCoordinator

        parts, groups = self.partitions, GroupCoordinator(self.partitions)
        self.group_coordinator = groups
        # after the group coordinator: completing a prepared transaction at load applies its offsets;
        # it reads the finalized transaction.version (UpdateFeatures changes it while the node runs)
        self.txn_coordinator = TransactionCoordinator(parts, self.producer_ids, groups,
                                                      functools.partial(self.features.level, "transaction.version"))
        self.share_coordinator = ShareCoordinator(parts, groups, self.settings.log_dirs[0],
                                                  self.state.is_stopping)  # share groups (KIP-932)
        groups.attach_share(self.share_coordinator)
        self.coordinators = [self.group_coordinator, self.txn_coordinator, self.share_coordinator]
        for c in self.coordinators:
            c.load()
            c.start(self.loop)
        self.dir_health = LogDirMonitor(parts, self.stats.storage_errors, self.state.is_stopping, self.state.halt)
        self.dir_health.start(self.loop)
        self.logs.start_cleaner()
        self.scheduler = Scheduler()
        jobs = periodic_jobs(self.config, self.logs, (CHECK_EVERY_S, self.dir_health.periodic_check))
        self.scheduler.start(self.loop, jobs)

    def _start_faults(self) -> None:
        if not self.faults.enabled:
            return
        log.warning("fault injection is enabled (faults.enable): this broker misbehaves on request; "
                    "never run it for real data%s", "" if self.config.get("metrics.listener") else
                    " (no metrics.listener: /faults is not served, only --faults FILE rules apply)")
        path = self.config.get("faults.file")
        if path:
            from pylog.broker.ops.request_faults import load_rules_file

            for rule in load_rules_file(path):
                self.faults.add(rule)

    def _listen(self) -> int:
        """One Server per listener (its TLS context and SASL settings); returns the first one's port."""
        from pylog.broker.net.sasl import ListenerRuntime

        from pylog.broker.net.conn_limits import ConnectionLimits

        cfg = self.config
        limits = ConnectionLimits(cfg)
        for spec in self.settings.listeners:
            runtime = ListenerRuntime(spec, cfg, self.security, self.tokens)
            server = Server(
                self.loop, self.dispatcher.gated, cfg["socket.request.max.bytes"],
                cfg["socket.send.buffer.bytes"] if "socket.send.buffer.bytes" in cfg.overridden else -1,
                cfg["socket.receive.buffer.bytes"] if "socket.receive.buffer.bytes" in cfg.overridden else -1,
                listener=runtime, limits=limits, stats=self.stats, name=spec.name,
            )
            self.servers.append(server)
            spec.port = server.listen(spec.host, spec.port)
            if spec.advertised_port is None:
                spec.advertised_port = spec.port
        self.server = self.servers[0]
        head = self.settings.listeners[0]
        self.settings.advertised_port = head.advertised_port
        return head.port

    def _metrics_view(self) -> MetricsView:
        """What the metrics listener and the console's status pages read of the node."""
        return MetricsView(node_id=self.node_id, cluster_id=self.cluster_id, settings=self.settings,
                           state=self.state, stats=self.stats, servers=self.servers, logs=self.logs,
                           group_coordinator=self.group_coordinator, share_coordinator=self.share_coordinator,
                           dir_health=self.dir_health, faults=self.faults)

    async def _start_metrics(self, view: MetricsView) -> None:
        url = self.config.get("metrics.listener")
        if url:
            from pylog.broker.ops.admin_http import MetricsListener

            self.metrics = MetricsListener(view, url)
            await self.metrics.start()

    async def _start_schema_registry(self) -> None:
        if self.config.get("schema.registry.listeners"):
            from pylog.registry.in_broker import make_service

            svc = make_service(self.config, self.settings.plain_bootstrap())
            # the registry reads _schemas through this broker: start it off the event loop
            await self.loop.run_in_executor(None, svc.start)
            self.schema_registry = svc

    async def _start_console(self, view: MetricsView) -> None:
        if self.config.get("console.listener"):
            from pylog.console.in_broker import make_service

            registry_url = self.schema_registry.urls[0] if self.schema_registry is not None else None
            # its clients connect to this broker as they are made: off the event loop
            svc = await self.loop.run_in_executor(None, make_service, self.config, self.settings.plain_bootstrap(),
                                                  registry_url, view, self.loop)
            await self.loop.run_in_executor(None, svc.start)
            self.console = svc

    # ---- shutdown ----------------------------------------------------------
    def request_stop(self) -> None:
        """Begin a graceful shutdown (signal handlers call this)."""
        self.state.request_stop()

    def halt(self, reason: str) -> None:
        """Stop uncleanly (no log dir left): no flush, checkpoints or clean-shutdown marker."""
        self.state.halt(reason)

    @property
    def stopping(self) -> bool:
        """True once a shutdown was requested: long polls answer, timers stop rescheduling."""
        return self.state.stopping

    @property
    def fatal_error(self) -> str | None:
        """Why the broker stopped uncleanly (no log dir left), or None."""
        return self.state.fatal_error

    async def _stop(self) -> None:
        log.info("shutting down")
        self.state.stopping = True
        if self.scheduler is not None:
            self.scheduler.cancel()
        for c in reversed(self.coordinators):
            c.stop()
        if self.console is not None:
            await self.loop.run_in_executor(None, self.console.stop)
        if self.schema_registry is not None:
            await self.loop.run_in_executor(None, self.schema_registry.stop)
        if self.metrics is not None:
            await self.metrics.stop()
        if self.servers:
            for server in self.servers:
                server.stop_accepting()
            self.fetch_waiters.wake_all()  # long polls answer now with what they have
            for server in self.servers:
                await server.drain(timeout=10.0)
        if self.scheduler is not None:
            self.scheduler.wait()
        if self.dir_health is not None:
            self.dir_health.stop()
        self.close_storage()

    def close_storage(self) -> None:
        """Stop the cleaner, then flush every log and write checkpoints and the
        clean-shutdown marker (idempotent; also the way out when start-up fails)."""
        if self.logs is not None:
            self.logs.stop_cleaner()
            if self.fatal_error is not None:
                # as Kafka halts: no flush, no checkpoints, no clean-shutdown marker; the
                # next start recovers every log from what is really on disk
                self.logs.abandon()
                return
            self.logs.shutdown()

    def api_version_ranges(self) -> list[dict]:
        """ApiVersions' api_keys: every served API at its schema's versions."""
        return self._api_keys
