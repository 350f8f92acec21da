"""Helpers shared by produce/consume/topics/perf: client properties from the CLI."""
from __future__ import annotations

import click

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


CODEC_NAMES = ["none", "gzip", "snappy", "lz4", "zstd"]


def producer_options(f):
    """--acks, --compression, --linger-ms, --batch-size: the producer settings that
    `produce` and `perf produce` both take (None: the producer's default / -X)."""
    opts = [
        click.option("--acks", type=click.Choice(["0", "1", "all", "-1"]), default=None,
                     help="Acknowledgements to wait for (acks). [default: all]"),
        click.option("--compression", "-z", type=click.Choice(CODEC_NAMES), default=None,
                     help="Batch compression (compression.type). [default: none]"),
        click.option("--linger-ms", type=click.IntRange(min=0), default=None, help="linger.ms [default: 5]"),
        click.option("--batch-size", type=click.IntRange(min=0), default=None,
                     help="batch.size in bytes [default: 16384]"),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f
