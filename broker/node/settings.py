"""Broker start-up settings: command-line options folded over server.properties.

Precedence, lowest first: Kafka's defaults, the `--config` file, each `--set
key=value`, then the dedicated options (`--log-dir`, `--listen`,
`--advertised`). Unknown keys in a server.properties file are skipped with a
warning (Kafka's files carry ZooKeeper/KRaft keys pylog has no use for); an
unknown key given with `--set` is a usage error, since it is most likely a typo.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

from pylog.core.config import BROKER_CONFIGS, Config
from pylog.core.errors import UsageError
from pylog.broker.net.listeners import LISTENER_PREFIX, ListenerSpec, build_listeners, split_uri

log = logging.getLogger("pylog.broker")

DEFAULT_LOG_DIR = "./pylog-data"
DEFAULT_LISTENER = "127.0.0.1:9092"


@dataclass
class BrokerSettings:
    """Everything the broker starts with: addresses, log dirs, node id and the resolved config."""

    host: str
    port: int
    advertised_host: str
    advertised_port: int | None  # None: the bound port (matters for --listen HOST:0)
    log_dirs: list[str]
    node_id: int
    config: Config
    listeners: list[ListenerSpec] = field(default_factory=list)  # the first is host/port above
    add_scram: list[str] = field(default_factory=list)  # --add-scram bootstrap credentials
    # the finalized transaction.version (KIP-890): --feature transaction.version=N at start, then UpdateFeatures
    transaction_version: int = 2
    feature_levels: dict = field(default_factory=dict)  # --feature NAME=LEVEL: finalized at start

    def advertised_for(self, conn) -> tuple[str, int]:
        """The address published to a client: that of the listener it connected to."""
        spec = getattr(getattr(conn, "listener", None), "spec", None)
        if spec is not None:
            return spec.advertised_host, spec.advertised_port
        return self.advertised_host, self.advertised_port

    def plain_bootstrap(self) -> str | None:
        """`host:port` of the first PLAINTEXT listener (a wildcard bind as loopback), for the
        clients the broker hosts (the schema registry, the console); None without one."""
        plain = [s for s in self.listeners if not s.tls and not s.sasl]
        if not plain:
            return None
        spec = plain[0]
        host = "127.0.0.1" if spec.host in ("", "0.0.0.0") else ("::1" if spec.host == "::" else spec.host)
        return f"[{host}]:{spec.port}" if ":" in host else f"{host}:{spec.port}"


def parse_host_port(text: str, what: str) -> tuple[str, int]:
    """`HOST:PORT`, `[v6]:PORT` or a listener URI `NAME://HOST:PORT`."""
    _, host, port = split_uri(text, what)
    return host, port


def build_settings(
    file_props: dict[str, str],
    set_props: dict[str, str],
    log_dirs: tuple[str, ...] = (),
    listen: str | None = None,
    advertised: str | None = None,
) -> BrokerSettings:
    """Fold the command-line options over server.properties and Kafka's defaults (see the module text)."""
    def known(k):
        return k in BROKER_CONFIGS or k.startswith(LISTENER_PREFIX)

    unknown = sorted(k for k in file_props if not known(k))
    if unknown:
        log.warning("ignoring unknown broker properties: %s", ", ".join(unknown))
    for k in set_props:
        if not known(k):
            raise UsageError(f"--set: unknown broker property {k!r}")
    merged = {k: v for k, v in file_props.items() if known(k)}
    merged.update(set_props)
    per_listener = {k: v for k, v in merged.items() if k.startswith(LISTENER_PREFIX)}
    props = {k: v for k, v in merged.items() if not k.startswith(LISTENER_PREFIX)}
    if log_dirs:
        props["log.dirs"] = ",".join(log_dirs)
    config = BROKER_CONFIGS.resolve(props)

    dirs = list(log_dirs)
    if not dirs:
        if "log.dirs" in config.overridden and config["log.dirs"]:
            dirs = list(config["log.dirs"])
        elif config.get("log.dir"):
            dirs = [config["log.dir"]]
        else:
            dirs = [DEFAULT_LOG_DIR]
    if len(set(dirs)) != len(dirs):
        raise UsageError("the same log dir is given twice")

    uris = list(config["listeners"] or [DEFAULT_LISTENER])
    if listen is not None:
        # --listen replaces the first listener's address (and its name when it names one)
        name, _, _ = split_uri(listen, "--listen")
        first = split_uri(uris[0], "listeners")[0]
        uris[0] = listen if name else f"{first or 'PLAINTEXT'}://{listen}"
    adv = list(config.get("advertised.listeners") or [])
    if advertised is not None:
        name, _, _ = split_uri(advertised, "--advertised")
        first = split_uri(uris[0], "listeners")[0] or "PLAINTEXT"
        adv = [a for a in adv if (split_uri(a, "advertised.listeners")[0] or first) != (name or first)]
        adv.insert(0, advertised if name else f"{first}://{advertised}")
    specs = build_listeners(uris, adv, config["listener.security.protocol.map"], per_listener,
                            "--listen" if listen is not None else "listeners")
    head = specs[0]

    # fail at start-up, as a usage error, rather than when the listeners open
    from pylog.broker.net.conn_limits import parse_overrides
    from pylog.broker.ops.admin_http import parse_metrics_listener

    parse_overrides(config["max.connections.per.ip.overrides"])
    if config.get("metrics.listener"):
        parse_metrics_listener(config["metrics.listener"])
    if config.get("schema.registry.listeners"):
        from pylog.registry.in_broker import listeners_of

        listeners_of(config["schema.registry.listeners"])
    if config.get("console.listener"):
        from pylog.console.in_broker import parse_console_listener

        parse_console_listener(config["console.listener"])
    if config.get("faults.file"):
        from pylog.broker.ops.request_faults import load_rules_file

        load_rules_file(config["faults.file"])

    node_id = config["node.id"]
    if "broker.id" in config.overridden and "node.id" not in config.overridden:
        node_id = config["broker.id"]
    return BrokerSettings(head.host, head.port, head.advertised_host, head.advertised_port, dirs, node_id, config,
                          specs)
