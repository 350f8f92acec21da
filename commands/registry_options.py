"""Finding the schema registry: `--schema-registry URL`, PYLOG_SCHEMA_REGISTRY_URL, or
`-X schema.registry.url=` (confluent-kafka's name); credentials from
`--schema-registry-auth USER:PASSWORD`, PYLOG_SCHEMA_REGISTRY_AUTH,
`-X basic.auth.user.info=` or user:password@ in the URL."""
from __future__ import annotations

import functools

import click

from pylog.core.errors import UsageError

REGISTRY_PROPS = ("schema.registry.url", "basic.auth.user.info", "basic.auth.credentials.source",
                  "schema.registry.basic.auth.user.info")


def registry_options(f):
    @click.option("--schema-registry", "registry_url", envvar="PYLOG_SCHEMA_REGISTRY_URL", show_envvar=True,
                  default=None, metavar="URL", help="Schema registry URL (confluent-kafka's schema.registry.url).")
    @click.option("--schema-registry-auth", "registry_auth", envvar="PYLOG_SCHEMA_REGISTRY_AUTH", show_envvar=True,
                  default=None, metavar="USER:PASSWORD", help="HTTP basic-auth credentials for the registry.")
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)
    return wrapper


def pop_registry_props(properties: dict) -> dict:
    """Take the registry's -X properties out of the Kafka client's."""
    return {k: properties.pop(k) for k in REGISTRY_PROPS if k in properties}


def make_client(url: str | None, auth: str | None, reg_props: dict | None = None, required: bool = True):
    from pylog.core.client.schema_registry import RegistryClient

    reg_props = reg_props or {}
    url = url or reg_props.get("schema.registry.url")
    auth = auth or reg_props.get("basic.auth.user.info") or reg_props.get("schema.registry.basic.auth.user.info")
    if not url:
        if required:
            raise UsageError("no schema registry: give --schema-registry URL, PYLOG_SCHEMA_REGISTRY_URL "
                             "or -X schema.registry.url=URL")
        return None
    return RegistryClient(url.split(",")[0].strip(), auth)
