"""`pylog schema-registry start`: the registry against any Kafka cluster."""
from __future__ import annotations

import logging
import signal
import threading

import click

from pylog.commands.options import bootstrap_option, properties_options


@click.group("schema-registry")
def schema_registry():
    """A schema registry with Confluent's REST API, storing in a Kafka cluster's `_schemas`."""


@schema_registry.command("start")
@bootstrap_option
@properties_options
@click.option("--listen", "listeners", multiple=True, metavar="URL",
              help="http://HOST:PORT or https://HOST:PORT to serve on (repeatable; default http://127.0.0.1:8081).")
@click.option("--topic", default="_schemas", show_default=True,
              help="The store topic (Confluent's kafkastore.topic).")
@click.option("--replication-factor", type=int, default=-1, show_default=True,
              help="Replication factor when the store topic is created (-1: the cluster's default).")
@click.option("--users-file", type=click.Path(dir_okay=False, exists=True), default=None,
              help="user:password lines: ask for HTTP basic auth.")
@click.option("--read-only", is_flag=True, help="Serve reads only (as mode READONLY, whatever the store says).")
@click.option("--ssl-certfile", type=click.Path(dir_okay=False, exists=True), default=None,
              help="PEM certificate chain for https:// listeners.")
@click.option("--ssl-keyfile", type=click.Path(dir_okay=False, exists=True), default=None,
              help="PEM private key for https:// listeners.")
def start(bootstrap, properties, listeners, topic, replication_factor, users_file, read_only,
          ssl_certfile, ssl_keyfile):
    """Serve Confluent's schema-registry REST API, storing schemas in TOPIC of the
    cluster at --bootstrap-server (any Kafka: pylog's broker, Apache Kafka, ...).
    -X passes client properties (security.protocol, sasl.*, ssl.*) to the store's
    Kafka client. Runs until SIGINT or SIGTERM.

    \b
    Examples:
      pylog schema-registry start -b kafka:9092 --listen http://0.0.0.0:8081
      pylog schema-registry start -b kafka:9093 -X security.protocol=SSL \\
          --listen https://0.0.0.0:8443 --ssl-certfile reg.pem --ssl-keyfile reg.key
    """
    from pylog.registry.service import SchemaRegistryService, load_users

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    props = dict(properties)
    props["bootstrap.servers"] = props.get("bootstrap.servers", bootstrap)
    urls = list(listeners) or ["http://127.0.0.1:8081"]
    ctx = None
    if any(u.startswith("https://") for u in urls):
        import ssl

        from pylog.core.errors import UsageError

        if not ssl_certfile:
            raise UsageError("an https:// listener needs --ssl-certfile (and --ssl-keyfile)")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(ssl_certfile, ssl_keyfile)
    users = load_users(users_file) if users_file else None
    svc = SchemaRegistryService(props, urls, topic, ssl_context=ctx, users=users, read_only=read_only,
                                replication_factor=replication_factor)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *a: done.set())
    signal.signal(signal.SIGINT, lambda *a: done.set())
    svc.start()
    try:
        click.echo(f"pylog schema registry on {', '.join(svc.urls)}, store {topic} at {props['bootstrap.servers']}",
                   )
        while not done.wait(0.5):
            pass
    finally:
        svc.stop()
    click.echo("pylog schema registry stopped")
