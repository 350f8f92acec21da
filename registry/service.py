"""A whole registry: the `_schemas` store, the registry's rules and its HTTP listeners.

The same object runs inside the broker (`schema.registry.listeners`), in
EmbeddedBroker(schema_registry=True), and standalone against any Kafka cluster
(`pylog schema-registry start`); only the client properties differ.
"""
from __future__ import annotations

import logging

from pylog.registry.http import HttpListener
from pylog.registry.registry import Registry
from pylog.registry.store import DEFAULT_TOPIC, KafkaStore

log = logging.getLogger("pylog.schema_registry")


def load_users(path: str) -> dict[str, str]:
    """`user:password` lines (Jetty's realm files also put roles after a comma: ignored)."""
    from pylog.core.errors import UsageError

    users = {}
    try:
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                user, sep, rest = line.partition(":")
                if not sep or not user.strip():
                    raise UsageError(f"{path}:{n}: expected user:password")
                users[user.strip()] = rest.split(",", 1)[0].strip()
    except OSError as e:
        raise UsageError(f"schema registry users file {path}: {e.strerror}") from None
    return users


class SchemaRegistryService:
    def __init__(self, client_props: dict, listeners: list[str], topic: str = DEFAULT_TOPIC,
                 ssl_context=None, users: dict | None = None, read_only: bool = False,
                 replication_factor: int = -1, timeout_s: float = 30.0):
        from pylog.core.schemas.protoc import install

        install()
        from pylog.registry.dek import TOPIC as DEK_TOPIC, DekRegistry, DekState

        self.store = KafkaStore(client_props, topic, timeout_s=timeout_s, replication_factor=replication_factor)
        self.dek_store = KafkaStore(client_props, DEK_TOPIC if topic == DEFAULT_TOPIC else f"{topic}_dek_keys",
                                    timeout_s=timeout_s, replication_factor=replication_factor, state=DekState())
        self.registry = Registry(self.store, read_only=read_only, dek=DekRegistry(self.dek_store))
        self.listeners = [HttpListener(self.registry, u, ssl_context, users) for u in listeners]

    @property
    def urls(self) -> list[str]:
        return [x.url for x in self.listeners]

    @property
    def url(self) -> str:
        return self.listeners[0].url

    def start(self) -> "SchemaRegistryService":
        """Read `_schemas` to its end, then listen: ids answered are the log's from the first request."""
        self.store.start()
        try:
            self.dek_store.start()
            for x in self.listeners:
                x.start()
        except BaseException:
            self.stop()
            raise
        log.info("schema registry on %s (store %s)", ", ".join(self.urls), self.store.topic)
        return self

    def stop(self) -> None:
        for x in self.listeners:
            x.stop()
        self.store.close()
        self.dek_store.close()

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
