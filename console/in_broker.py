"""The console inside pylog's broker (`console.listener`, `pylog broker start --console`):
a client of the broker's own PLAINTEXT listener, as the in-broker registry is, that also
reads the broker's status (metrics over time), its share-partitions' in-flight records and
its log dirs. The broker's state is read on the broker's event loop, never from the
console's threads."""
from __future__ import annotations

import asyncio
from urllib.parse import urlsplit

from pylog.core.errors import UsageError


def parse_console_listener(value: str) -> tuple[str, int]:
    """`http://HOST:PORT` -> (host, port); a usage error naming the property otherwise."""
    u = urlsplit(value if "://" in value else f"http://{value}")
    try:
        port = u.port
    except ValueError:
        port = None
    if u.scheme != "http" or not u.hostname or port is None or u.path not in ("", "/"):
        raise UsageError(f"console.listener={value!r}: expected http://HOST:PORT")
    return u.hostname, port


def _on_loop(broker, fn, *args):
    """Call fn(*args) on the broker's loop and wait for its value (from a console thread)."""
    async def call():
        return fn(*args)
    return asyncio.run_coroutine_threadsafe(call(), broker.loop).result(10)


def make_service(broker):
    """The ConsoleService for a started broker (its listeners bound, its registry started)."""
    from pylog.broker.ops.admin_http import status_snapshot
    from pylog.broker.ops.share_view import share_partitions
    from pylog.console.service import ConsoleService

    cfg = broker.config
    host, port = parse_console_listener(cfg.get("console.listener"))
    plain = [s for s in broker.settings.listeners if not s.tls and not s.sasl]
    if not plain:
        raise UsageError("console.listener: the console inside the broker needs a PLAINTEXT listener to read "
                         "the cluster through")
    spec = plain[0]
    h = "127.0.0.1" if spec.host in ("", "0.0.0.0") else ("::1" if spec.host == "::" else spec.host)
    bootstrap = f"[{h}]:{spec.port}" if ":" in h else f"{h}:{spec.port}"
    registry_url = broker.schema_registry.urls[0] if broker.schema_registry is not None else None
    # the registry's basic auth applies to the console too: the same users file
    users_file = cfg.get("schema.registry.users.file")
    users, registry_auth = None, None
    if users_file:
        from pylog.registry.service import load_users

        users = load_users(users_file) or None
        if users and registry_url:
            name, secret = next(iter(users.items()))
            registry_auth = f"{name}:{secret}"
    return ConsoleService(
        {"bootstrap.servers": bootstrap, "client.id": "pylog-console"}, host, port,
        registry_url=registry_url, registry_auth=registry_auth, log_dirs=broker.settings.log_dirs,
        live_log_dirs=True, allow_writes=bool(cfg.get("console.allow.writes")),
        broker_status=lambda: _on_loop(broker, status_snapshot, broker),
        share_records=lambda group: _on_loop(broker, share_partitions, broker, group), users=users)
