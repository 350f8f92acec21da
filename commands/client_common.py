"""Helpers shared by produce/consume/topics/perf: client properties from the CLI."""
from __future__ import annotations

from pylog.core.config import ConfigError
from pylog.core.errors import UsageError


def client_props(bootstrap: str, properties: dict, configset, **explicit) -> dict:
    """-X/--config properties plus the command's own options (which win), validated
    against the Kafka config set so an invalid property is a one-line usage error."""
    props = dict(properties)
    props.setdefault("bootstrap.servers", bootstrap)
    if "bootstrap.servers" not in properties:
        props["bootstrap.servers"] = bootstrap
    for k, v in explicit.items():
        if v is not None:
            props[k] = str(v)
    try:
        configset.resolve(props)
    except ConfigError:
        raise
    except (ValueError, KeyError) as e:
        raise UsageError(f"invalid property: {e}") from None
    return props
