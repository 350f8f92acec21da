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


def producer_options(f=None, *, batch_default="16384"):
    """--acks, --compression, --linger-ms, --batch-size: the producer settings that
    `produce` and `perf produce` both take (None: the producer's default / -X)."""
    if f is None:
        return lambda g: producer_options(g, batch_default=batch_default)
    opts = [
        click.option("--acks", type=click.Choice(["0", "1", "all", "-1"]), default=None,
                     help="Acknowledgements to wait for (acks). [default: all]"),
        click.option("--compression", "-z", type=click.Choice(CODEC_NAMES), default=None,
                     help="Batch compression (compression.type). [default: none]"),
        click.option("--linger-ms", type=click.IntRange(min=0), default=None, help="linger.ms [default: 5]"),
        click.option("--batch-size", type=click.IntRange(min=0), default=None,
                     help=f"batch.size in bytes [default: {batch_default}]"),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def check_topic(loop, client, topic: str, allow_create: bool) -> bool:
    """Make sure `topic` exists before reading or writing it: False when it does,
    True when the broker just auto-created it (the caller warns), and
    UnknownTopicOrPartitionError naming the topic when it does not exist and the
    broker will not create it. `loop.run` runs `client`'s coroutines."""
    from pylog.core.errors import ErrorCode, UnknownTopicOrPartitionError, error_for_code

    def ask(create: bool):
        md = loop.run(client.refresh_metadata([topic], allow_auto_create=create))
        return md.topics.get(topic)

    t = ask(False)
    if t is not None and t.error_code == ErrorCode.NONE and t.partitions:
        return False
    if t is not None and t.error_code not in (ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                              ErrorCode.LEADER_NOT_AVAILABLE):
        raise error_for_code(t.error_code, f"topic {topic}: {error_for_code(t.error_code)}")
    if t is not None and t.error_code == ErrorCode.LEADER_NOT_AVAILABLE:
        return False  # exists, its leader is being elected: the client waits for it
    missing = f"topic {topic} does not exist"
    if not allow_create:
        raise UnknownTopicOrPartitionError(f"{missing}; create it with: pylog topics create {topic}")
    t = ask(True)
    if t is None or t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        raise UnknownTopicOrPartitionError(f"{missing} and the broker does not create topics "
                                           f"(auto.create.topics.enable=false); create it with: "
                                           f"pylog topics create {topic}")
    if t.error_code not in (ErrorCode.NONE, ErrorCode.LEADER_NOT_AVAILABLE):
        raise error_for_code(t.error_code, f"topic {topic}: {error_for_code(t.error_code)}")
    return True


def warn_created(topic: str) -> None:
    from pylog.commands.console import err

    err.print(f"warning: topic {topic} did not exist; the broker created it (auto.create.topics.enable)",
              style="yellow", markup=False)
