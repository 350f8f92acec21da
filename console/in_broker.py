"""The console inside pylog's broker (`console.listener`, `pylog broker start --console`):
a client of the broker's own PLAINTEXT listener, as the in-broker registry is, that also
reads the broker's status (metrics over time), its share-partitions' in-flight records and
its log dirs. The broker's state is read on the broker's event loop, never from the
console's threads."""
from __future__ import annotations

import asyncio
import functools
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from pylog.core.errors import UsageError

if TYPE_CHECKING:
    from pylog.broker.ops.metrics import MetricsView


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


def _on_loop(loop, fn, *args):
    """Call fn(*args) on the broker's loop and wait for its value (from a console thread)."""
    async def call():
        return fn(*args)
    return asyncio.run_coroutine_threadsafe(call(), loop).result(10)


def make_service(config, bootstrap: str | None, registry_url: str | None, node: MetricsView,
                 loop: asyncio.AbstractEventLoop):
    """The ConsoleService for a started broker (its listeners bound, its registry started): its
    config, the address of its first PLAINTEXT listener (None without one), the in-broker
    registry's first URL, and what its status pages read on the broker's loop: the node's
    metrics view (its status, its log dirs, its share coordinator)."""
    from pylog.broker.ops.admin_http import status_snapshot
    from pylog.broker.ops.share_view import share_partitions
    from pylog.console.service import ConsoleService

    host, port = parse_console_listener(config.get("console.listener"))
    if bootstrap is None:
        raise UsageError("console.listener: the console inside the broker needs a PLAINTEXT listener to read "
                         "the cluster through")
    # the registry's basic auth applies to the console too: the same users file
    users_file = config.get("schema.registry.users.file")
    users, registry_auth = None, None
    if users_file:
        from pylog.registry.service import load_users

        users = load_users(users_file) or None
        if users and registry_url:
            name, secret = next(iter(users.items()))
            registry_auth = f"{name}:{secret}"
    return ConsoleService(
        {"bootstrap.servers": bootstrap, "client.id": "pylog-console"}, host, port,
        registry_url=registry_url, registry_auth=registry_auth, log_dirs=node.settings.log_dirs,
        live_log_dirs=True, allow_writes=bool(config.get("console.allow.writes")),
        broker_status=functools.partial(_on_loop, loop, status_snapshot, node),
        share_records=functools.partial(_on_loop, loop, share_partitions, node.share_coordinator), users=users)
