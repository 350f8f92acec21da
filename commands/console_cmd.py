"""`pylog console`: the web console (pylog.console) for any Kafka cluster."""
from __future__ import annotations

import signal
import threading

import click

from pylog.commands.client_common import client_props
from pylog.commands.options import bootstrap_option, properties_options
from pylog.commands.registry_options import pop_registry_props, registry_options
from pylog.core.config import CONSUMER_CONFIGS
from pylog.core.errors import UsageError


def parse_listen(value: str) -> tuple[str, int]:
    """HOST:PORT (port 0: a free one) -> (host, port); a usage error otherwise."""
    host, sep, port = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or int(port) > 65535:
        raise UsageError(f"--listen {value!r}: expected HOST:PORT")
    return host, int(port)


@click.command("console", context_settings={"help_option_names": ["-h", "--help"]})
@bootstrap_option
@click.option("--listen", default="127.0.0.1:8080", show_default=True, metavar="HOST:PORT",
              help="Serve the console on HOST:PORT (port 0: a free port, printed at start).")
@registry_options
@click.option("--log-dir", "log_dirs", multiple=True, type=click.Path(exists=True, file_okay=False), metavar="DIR",
              help="A log dir whose partitions, segments, batches and verify verdicts the console shows "
                   "(repeatable).")
@click.option("--metrics", "metrics_url", default=None, metavar="http://HOST:PORT",
              help="A pylog broker's metrics listener: chart its metrics over time and show its "
                   "share-partitions' in-flight records.")
@click.option("--allow-writes", is_flag=True,
              help="Allow creating, altering and deleting topics, producing, resetting offsets and aborting "
                   "transactions (read-only without it).")
@click.option("--users-file", type=click.Path(exists=True, dir_okay=False), default=None, metavar="FILE",
              help="user:password lines (the schema registry's users file): the console then asks for HTTP "
                   "basic auth.")
@click.option("--sample-interval", type=click.FloatRange(min=0.1), default=5.0, show_default=True, metavar="SECONDS",
              help="Seconds between the samples of lag and broker metrics the charts draw.")
@properties_options
def console(bootstrap, listen, registry_url, registry_auth, log_dirs, metrics_url, allow_writes, users_file,
            sample_interval, properties):
    """Serve a web console for a Kafka cluster until SIGINT or SIGTERM.

    Pages: the cluster and its brokers; topics (partitions, offsets, sizes,
    configs); a message browser (from an offset, a time or the end, key and
    text filters, values decoded by the schema registry, as JSON, text or
    hex, headers); groups of every type with members, lag per partition and
    lag over time; share groups; transactions (ongoing, hanging); ACLs, SCRAM
    users and quotas; registry subjects with versions side by side, a diff and
    a compatibility check; and with --log-dir a log dir's segments, batches
    and verify verdicts. Read-only unless --allow-writes. The page and its
    charts library are served from the package: no network access.

    \b
    Examples:
      pylog console -b 127.0.0.1:9092 --listen 127.0.0.1:8080
      pylog console -b 127.0.0.1:9092 --schema-registry http://127.0.0.1:8081 --allow-writes
      pylog console -b 127.0.0.1:9092 --log-dir /var/lib/kafka --metrics http://127.0.0.1:9404
    """
    from pylog.console.service import ConsoleService

    host, port = parse_listen(listen)
    users = None
    if users_file:
        from pylog.registry.service import load_users

        users = load_users(users_file) or None
    reg = pop_registry_props(properties)
    props = client_props(bootstrap, properties, CONSUMER_CONFIGS)
    svc = ConsoleService(props, host, port, registry_url=registry_url or reg.get("schema.registry.url"),
                         registry_auth=registry_auth or reg.get("basic.auth.user.info"), log_dirs=log_dirs,
                         allow_writes=allow_writes, metrics_url=metrics_url, sample_interval=sample_interval,
                         users=users)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: done.set())
    signal.signal(signal.SIGINT, lambda *a: done.set())
    try:
        svc.start()
    except OSError as e:
        svc.stop()
        raise UsageError(f"--listen {listen}: {e.strerror or e}") from None
    click.echo(f"pylog console on {svc.url} for {props['bootstrap.servers']} "
               f"({'writes allowed' if allow_writes else 'read-only'})", err=False)
    try:
        while not done.wait(0.5):
            pass
    finally:
        svc.stop()
    click.echo("pylog console stopped")
