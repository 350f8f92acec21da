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


def make_service(broker):
    """The SchemaRegistryService for a started broker (its listeners bound)."""
    from pylog.registry.service import SchemaRegistryService, load_users

    cfg = broker.config
    urls = listeners_of(cfg.get("schema.registry.listeners"))
    plain = [s for s in broker.settings.listeners if not s.tls and not s.sasl]
    if not plain:
        raise UsageError("schema.registry.listeners: the registry inside the broker needs a PLAINTEXT listener "
                         "to store its schemas through")
    spec = plain[0]
    host = "127.0.0.1" if spec.host in ("", "0.0.0.0") else ("::1" if spec.host == "::" else spec.host)
    ctx = None
    if any(u.startswith("https://") for u in urls):
        from pylog.core.security import tls

        flat = {k: (",".join(v) if isinstance(v, list) else v) for k, v in dict(cfg).items()
                if k.startswith("ssl.") and v is not None}
        try:
            ctx = tls.server_context(flat)
        except tls.TlsConfigError as e:
            raise UsageError(f"schema.registry.listeners: {e}") from None
    users_file = cfg.get("schema.registry.users.file")
    users = load_users(users_file) if users_file else None
    bootstrap = f"[{host}]:{spec.port}" if ":" in host else f"{host}:{spec.port}"
    return SchemaRegistryService({"bootstrap.servers": bootstrap, "client.id": "pylog-schema-registry"}, urls,
                                 ssl_context=ctx, users=users, replication_factor=1)
