"""`pylog broker start`: run the embedded single-node broker."""
from __future__ import annotations

import asyncio
import logging
import signal
import sys
import time
from pathlib import Path

import click

from pylog.commands.options import assignments_option, merge_properties
from pylog.broker.node.settings import DEFAULT_LISTENER, DEFAULT_LOG_DIR, build_settings

LEVELS = ("debug", "info", "warning", "error")


class _BrokerGroup(click.Group):
    """`pylog broker`: `faults` (an HTTP client of the admin listener) loads only when named."""

    def list_commands(self, ctx):
        return sorted([*super().list_commands(ctx), "faults"])

    def get_command(self, ctx, name):
        if name == "faults":
            from pylog.commands.broker_faults import faults

            return faults
        return super().get_command(ctx, name)


@click.group(cls=_BrokerGroup)
def broker():
    """Run an embedded Kafka-compatible broker on pylog's storage engine.

    A single node (node id 1 by default) that speaks the Kafka wire protocol,
    so kcat, kafka-python, confluent-kafka (librdkafka) and the Java client
    work against it with no special settings. It is the group coordinator
    for Kafka's classic consumer-group protocol, with committed offsets kept
    in __consumer_offsets. Listeners, TLS, SASL (PLAIN, SCRAM-SHA-256/512)
    and ACLs are configured with Kafka's property names.
    """


@broker.command()
@click.option("--log-dir", "log_dirs", multiple=True, metavar="DIR",
              help=f"Directory for topic data (repeatable; new partitions go to the emptiest). "
                   f"Default: log.dirs from --config, else {DEFAULT_LOG_DIR}.")
@click.option("--listen", metavar="HOST:PORT", default=None,
              help=f"Address to accept clients on (default: listeners from --config, else {DEFAULT_LISTENER}). "
                   "Port 0 picks a free port; the start-up line shows which.")
@click.option("--advertised", metavar="HOST:PORT", default=None,
              help="Address published to clients in metadata (default: advertised.listeners, else the "
                   "listen address).")
@click.option("--config", "config_file", type=click.Path(dir_okay=False), default=None, metavar="FILE",
              help="Kafka server.properties file (Kafka's broker property names; unknown ones are "
                   "ignored with a warning).")
@assignments_option("--set", "set_props",
                    help="Set one broker property, overriding --config (repeatable), e.g. "
                         "--set num.partitions=3 --set log.segment.bytes=1048576.")
@click.option("--add-scram", "add_scram", multiple=True, metavar="MECHANISM=[name=USER,password=PASSWORD]",
              help="Create or replace a SCRAM credential before serving, like kafka-storage format --add-scram "
                   "(repeatable), e.g. 'SCRAM-SHA-256=[name=admin,password=admin-secret]'; "
                   "also [name=..,salt=..,saltedpassword=..,iterations=..] with base64 values.")
@click.option("--schema-registry", "schema_registry", metavar="HOST:PORT", default=None,
              help="Serve a schema registry (Confluent's REST API) on HOST:PORT: "
                   "schema.registry.listeners=http://HOST:PORT.")
@click.option("--console", "console", metavar="HOST:PORT", default=None,
              help="Serve the web console (see `pylog console`) on HOST:PORT: console.listener=http://HOST:PORT; "
                   "read-only unless --console-allow-writes.")
@click.option("--console-allow-writes", is_flag=True,
              help="Let the console change the cluster (console.allow.writes=true).")
@click.option("--feature", "features", multiple=True, metavar="NAME=LEVEL",
              help="Finalize a feature at a level, like kafka-storage format --feature: "
                   "transaction.version=2 (the default: an epoch bump at every transaction's end, "
                   "partitions added by Produce v12), 1 (AddPartitionsToTxn, as before Kafka 4) or 0.")
@click.option("--log-level", type=click.Choice(LEVELS, case_sensitive=False), default="info", show_default=True,
              help="Broker log verbosity (log lines go to stderr).")
@click.option("--allow-faults", is_flag=True,
              help="Let `pylog broker faults` inject faults through the metrics listener's /faults "
                   "(faults.enable=true); for test brokers only.")
@click.option("--faults", "faults_file", type=click.Path(dir_okay=False, exists=True), default=None,
              metavar="FILE", help="Load fault rules from a JSON file at start-up (faults.file; implies "
                                   "--allow-faults). See `pylog broker faults`.")
def start(log_dirs, listen, advertised, config_file, set_props, add_scram, schema_registry, console,
          console_allow_writes, features, log_level, allow_faults, faults_file):
    """Start the broker and serve until SIGINT or SIGTERM.

    On start it loads every partition in the log dirs (recovering those not
    shut down cleanly), prints a summary and then the line
    `pylog broker listening on HOST:PORT`. SIGINT/SIGTERM shut it down
    gracefully: stop accepting, answer in-flight requests, flush, write
    checkpoints and producer snapshots, write the clean-shutdown marker, exit
    0. A second broker on the same log dir refuses to start (exit 1).

    \b
    Examples:
      pylog broker start
      pylog broker start --log-dir /data/a --log-dir /data/b --listen 0.0.0.0:9092 \\
          --advertised kafka.local:9092
      pylog broker start --config server.properties --set auto.create.topics.enable=false
      pylog broker start --schema-registry 127.0.0.1:8081
      pylog broker start --schema-registry 127.0.0.1:8081 --console 127.0.0.1:8080
      pylog broker start --config secure.properties \\
          --add-scram 'SCRAM-SHA-512=[name=admin,password=admin-secret]'
      pylog broker start --set metrics.listener=http://127.0.0.1:9404 --allow-faults
      pylog broker start --feature transaction.version=1
    """
    from pylog.broker.node.broker import Broker

    _setup_logging(log_level)
    file_props = merge_properties(config_file, (), "--set") if config_file else {}
    set_map = merge_properties(None, set_props, "--set")
    if schema_registry:
        set_map["schema.registry.listeners"] = f"http://{schema_registry}"
    if console:
        set_map["console.listener"] = f"http://{console}"
    if console_allow_writes:
        set_map["console.allow.writes"] = "true"
    if allow_faults:
        set_map["faults.enable"] = "true"
    if faults_file:
        set_map["faults.file"] = faults_file
    settings = build_settings(file_props, set_map, log_dirs, listen, advertised)
    settings.add_scram = _parse_add_scram(add_scram)
    settings.feature_levels = _parse_features(features)

    # a start that fails leaves no files behind: ports are checked before anything is
    # written, and log dirs this start created (or found empty) are emptied again on failure
    _check_ports(settings)
    fresh = [(Path(d), Path(d).exists()) for d in settings.log_dirs
             if not Path(d).exists() or not any(Path(d).iterdir())]
    b = Broker(settings)
    t0 = time.monotonic()
    started = False
    try:
        report = b.open_storage()

        def ready(port):
            nonlocal started
            started = True
            took = getattr(report, "seconds", time.monotonic() - t0)
            click.echo(f"pylog broker node {settings.node_id}, cluster {b.cluster_id or '-'}")
            click.echo(f"  log dirs: {', '.join(settings.log_dirs)}")
            click.echo(f"  topics: {len(b.logs.topics)}, partitions loaded: {report.partitions_loaded}, "
                       f"recovered: {report.partitions_recovered} in {took:.2f}s")
            for w in getattr(report, "warnings", None) or []:
                click.echo(f"  warning: {w}")
            click.echo(f"  advertised: {settings.advertised_host}:{settings.advertised_port}")
            for spec in settings.listeners:
                click.echo(f"  listener {spec.name} ({spec.protocol}): {_show_host(spec.host)}:{spec.port}, "
                           f"advertised {spec.advertised_host}:{spec.advertised_port}")
            if b.metrics is not None:
                click.echo(f"  metrics: http://{_show_host(b.metrics.host)}:{b.metrics.port}/metrics "
                           f"(/health, /ready{', /faults' if b.faults.enabled else ''})")
            if b.faults.enabled:
                click.echo(f"  warning: fault injection enabled, {len(b.faults)} rule(s) loaded")
            if b.schema_registry is not None:
                click.echo(f"  schema registry: {', '.join(b.schema_registry.urls)}")
            if b.console is not None:
                click.echo(f"  console: {b.console.url} ({'writes allowed' if b.console.allow_writes else 'read-only'})")
            click.echo(f"pylog broker listening on {_show_host(settings.host)}:{port}")

        _run(b, ready)
    except BaseException:
        b.close_storage()
        if not started:
            _remove_fresh(fresh)
        raise
    if b.fatal_error is not None:
        from pylog.core.errors import DataError

        raise DataError(f"broker stopped: {b.fatal_error}")
    click.echo("pylog broker stopped cleanly")


def _check_ports(settings) -> None:
    """Fail before touching the log dirs when a listener's fixed port is taken."""
    import socket

    from pylog.core.errors import DataError

    for spec in settings.listeners:
        if not spec.port:
            continue
        try:
            infos = socket.getaddrinfo(spec.host or None, spec.port, type=socket.SOCK_STREAM,
                                       flags=socket.AI_PASSIVE)
            family, _, _, _, addr = infos[0]
            with socket.socket(family, socket.SOCK_STREAM) as s:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the listener will
                s.bind(addr)
        except OSError as e:
            raise DataError(f"cannot listen on {_show_host(spec.host)}:{spec.port} (listener {spec.name}): "
                            f"{e.strerror or e}") from None


def _remove_fresh(dirs) -> None:
    """Empty the log dirs a failed start created or found empty (never one that held data)."""
    import shutil

    for d, existed in dirs:
        if not d.exists():
            continue
        for child in d.iterdir():
            shutil.rmtree(child) if child.is_dir() and not child.is_symlink() else child.unlink()
        if not existed:
            d.rmdir()


def _parse_add_scram(values) -> list:
    from pylog.broker.security.store import parse_add_scram
    from pylog.core.errors import UsageError

    out = []
    for v in values:
        try:
            out.append(parse_add_scram(v))
        except ValueError as e:
            raise UsageError(str(e)) from None
    return out


def _parse_features(values) -> dict:
    """--feature NAME=LEVEL values: {feature: level} to finalize at start (transaction.version)."""
    if not values:
        return {}
    from pylog.broker.txn.epoch_bump import SUPPORTED_LEVELS
    from pylog.core.errors import UsageError

    levels = {}
    for v in values:
        name, _, text = v.partition("=")
        if name.strip() != "transaction.version":
            raise UsageError(f"--feature {v}: unknown feature {name.strip()!r} (transaction.version is served)")
        try:
            level = int(text)
        except ValueError:
            raise UsageError(f"--feature {v}: the level must be a number") from None
        if level not in SUPPORTED_LEVELS:
            raise UsageError(f"--feature {v}: transaction.version supports levels "
                             f"{SUPPORTED_LEVELS[0]}-{SUPPORTED_LEVELS[-1]}")
        levels["transaction.version"] = level
    return levels


def _show_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _run(b, ready) -> None:
    async def main():
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, b.request_stop)
        await b.serve(ready)

    try:
        asyncio.run(main())
    except OSError as e:
        from pylog.core.errors import DataError

        raise DataError(f"cannot listen on {b.settings.host}:{b.settings.port}: {e.strerror or e}") from None


class _BrokerLogHandler(logging.StreamHandler):
    """The broker command's stderr handler (added once, however often logging is set up)."""


def _setup_logging(level: str) -> None:
    logger = logging.getLogger("pylog")
    logger.setLevel(getattr(logging, level.upper()))
    if not any(isinstance(h, _BrokerLogHandler) for h in logger.handlers):
        h = _BrokerLogHandler(sys.stderr)
        h.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        logger.addHandler(h)
        logger.propagate = False


@broker.command()
@click.option("--url", default=None, metavar="http://HOST:PORT",
              help="The broker's metrics.listener (default: metrics.listener from --config, "
                   "else http://127.0.0.1:9404).")
@click.option("--config", "config_file", type=click.Path(dir_okay=False, exists=True), default=None,
              metavar="FILE", help="server.properties to take metrics.listener from.")
@click.option("--timeout", type=float, default=5.0, show_default=True, help="Seconds to wait for the answer.")
@click.option("--json", "as_json", is_flag=True, help="Print the broker's JSON status as is.")
def status(url, config_file, timeout, as_json):
    """Show whether a running broker is live and ready, its listeners, log dirs and totals.

    Asks the broker's metrics listener (`metrics.listener=http://HOST:PORT`)
    for /ready, which also serves supervisors and container health checks.
    Exit status: 0 ready, 1 not ready or not reachable.

    \b
    Examples:
      pylog broker status
      pylog broker status --url http://127.0.0.1:9404 --json
      pylog broker status --config server.properties
    """
    from pylog.commands.broker_status import show_status

    show_status(url, config_file, timeout, as_json)
