"""Option conventions shared by every command.

`--bootstrap` (env PYLOG_BOOTSTRAP_SERVERS), repeatable `-X key=value`,
`--config FILE` (Java .properties) and `--json` mean the same thing on every
command that takes them.
"""
from __future__ import annotations

import functools
from pathlib import Path

import click

from pylog.core.errors import UsageError
from pylog.core.properties import parse_assignment, parse_properties

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def bootstrap_option(f):
    return click.option(
        "--bootstrap",
        "-b",
        envvar="PYLOG_BOOTSTRAP_SERVERS",
        default=DEFAULT_BOOTSTRAP,
        show_default=True,
        show_envvar=True,
        metavar="HOST:PORT[,...]",
        help="Bootstrap servers (Kafka's bootstrap.servers).",
    )(f)


def json_option(f):
    return click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")(f)


def load_properties_file(path: str) -> dict[str, str]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot read config file {path}: {e.strerror}") from None
    return parse_properties(text, str(p))


def merge_properties(config_file: str | None, assignments: tuple[str, ...], flag: str = "-X") -> dict[str, str]:
    """File first, then each `key=value` on the command line overrides it."""
    props: dict[str, str] = {}
    if config_file:
        props.update(load_properties_file(config_file))
    for item in assignments:
        k, v = parse_assignment(item, flag)
        props[k] = v
    return props


def properties_options(f):
    """Adds -X/--property and --config; the command receives `properties: dict`."""

    @click.option(
        "-X",
        "--property",
        "x_props",
        multiple=True,
        metavar="KEY=VALUE",
        help="Any Kafka property by its Kafka name (repeatable).",
    )
    @click.option(
        "--config",
        "config_file",
        type=click.Path(dir_okay=False),
        default=None,
        metavar="FILE",
        help="Java-style .properties file; -X overrides its entries.",
    )
    @functools.wraps(f)
    def wrapper(*args, x_props=(), config_file=None, **kwargs):
        kwargs["properties"] = merge_properties(config_file, x_props)
        return f(*args, **kwargs)

    return wrapper


def require(cond: bool, message: str) -> None:
    if not cond:
        raise UsageError(message)
