"""Broker start-up settings: command-line options folded over server.properties.

Precedence, lowest first: Kafka's defaults, the `--config` file, each `--set
key=value`, then the dedicated options (`--log-dir`, `--listen`,
`--advertised`). Unknown keys in a server.properties file are skipped with a
warning (Kafka's files carry ZooKeeper/KRaft keys pylog has no use for); an
unknown key given with `--set` is a usage error, since it is most likely a typo.
"""
from __future__ import annotations

import logging
import socket
from dataclasses import dataclass

from pylog.core.config import BROKER_CONFIGS, Config
from pylog.core.errors import UsageError

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


def parse_host_port(text: str, what: str) -> tuple[str, int]:
    """`HOST:PORT`, `[v6]:PORT` or a listener URI `PLAINTEXT://HOST:PORT`."""
    raw = text.strip()
    if "://" in raw:
        scheme, _, raw = raw.partition("://")
        if scheme.upper() not in ("PLAINTEXT", "TCP"):
            raise UsageError(f"{what}: only PLAINTEXT listeners are supported, got {text!r}")
    host, sep, port = raw.rpartition(":")
    if not sep:
        raise UsageError(f"{what}: expected HOST:PORT, got {text!r}")
    host = host.strip("[]")
    try:
        p = int(port)
    except ValueError:
        raise UsageError(f"{what}: port must be a number, got {text!r}") from None
    if not 0 <= p <= 65535:
        raise UsageError(f"{what}: port out of range in {text!r}")
    return host, p


def _public_host(host: str) -> str:
    # a wildcard bind address is useless to clients: publish this machine's name
    if host in ("", "0.0.0.0", "::"):
        return socket.getfqdn()
    return host


def build_settings(
    file_props: dict[str, str],
    set_props: dict[str, str],
    log_dirs: tuple[str, ...] = (),
    listen: str | None = None,
    advertised: str | None = None,
) -> BrokerSettings:
    """Fold the command-line options over server.properties and Kafka's defaults (see the module text)."""
    unknown = sorted(k for k in file_props if k not in BROKER_CONFIGS)
    if unknown:
        log.warning("ignoring unknown broker properties: %s", ", ".join(unknown))
    for k in set_props:
        if k not in BROKER_CONFIGS:
            raise UsageError(f"--set: unknown broker property {k!r}")
    props = {k: v for k, v in file_props.items() if k in BROKER_CONFIGS}
    props.update(set_props)
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

    if listen is not None:
        host, port = parse_host_port(listen, "--listen")
    else:
        listeners = config["listeners"] or [DEFAULT_LISTENER]
        if len(listeners) > 1:
            log.warning("only the first listener is used: %s", listeners[0])
        host, port = parse_host_port(listeners[0], "listeners")

    if advertised is not None:
        adv_host, adv_port = parse_host_port(advertised, "--advertised")
    elif config.get("advertised.listeners"):
        adv_host, adv_port = parse_host_port(config["advertised.listeners"][0], "advertised.listeners")
    else:
        adv_host, adv_port = _public_host(host), None
    if adv_port == 0:
        adv_port = None

    node_id = config["node.id"]
    if "broker.id" in config.overridden and "node.id" not in config.overridden:
        node_id = config["broker.id"]
    return BrokerSettings(host, port, adv_host, adv_port, dirs, node_id, config)
