"""The registry inside pylog's broker (`schema.registry.listeners`): a client of the
broker's own PLAINTEXT listener, started once the listeners accept and stopped
before they close. https:// listeners take the broker's ssl.* settings; basic
auth takes `schema.registry.users.file`."""
from __future__ import annotations

from pylog.core.errors import UsageError


def listeners_of(value: str) -> list[str]:
    from pylog.registry.http import parse_listener

    urls = [u.strip() for u in (value or "").split(",") if u.strip()]
    for u in urls:
        parse_listener(u)
    return urls


def make_service(config, bootstrap: str | None):
    """The SchemaRegistryService for a started broker: its config, and the address of its first
    PLAINTEXT listener (bound by now), None when it has none."""
    from pylog.registry.service import SchemaRegistryService, load_users

    urls = listeners_of(config.get("schema.registry.listeners"))
    if bootstrap is None:
        raise UsageError("schema.registry.listeners: the registry inside the broker needs a PLAINTEXT listener "
                         "to store its schemas through")
    ctx = None
    if any(u.startswith("https://") for u in urls):
        from pylog.core.security import tls

        flat = {k: (",".join(v) if isinstance(v, list) else v) for k, v in dict(config).items()
                if k.startswith("ssl.") and v is not None}
        try:
            ctx = tls.server_context(flat)
        except tls.TlsConfigError as e:
            raise UsageError(f"schema.registry.listeners: {e}") from None
    users_file = config.get("schema.registry.users.file")
    users = load_users(users_file) if users_file else None
    return SchemaRegistryService({"bootstrap.servers": bootstrap, "client.id": "pylog-schema-registry"}, urls,
                                 ssl_context=ctx, users=users, replication_factor=1)
