"""Option conventions shared by every command.

`--bootstrap-server`/`--bootstrap`/`-b` (env PYLOG_BOOTSTRAP_SERVERS),
repeatable `-X key=value`, `--command-config FILE`/`-F FILE` (Java .properties,
Kafka's and kcat's names), `--topic`/`-t` beside a TOPIC argument and `--json`
mean the same thing on every command that takes them.
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
        "--bootstrap-server",
        "--bootstrap",
        "-b",
        "bootstrap",
        envvar="PYLOG_BOOTSTRAP_SERVERS",
        default=DEFAULT_BOOTSTRAP,
        show_default=True,
        show_envvar=True,
        metavar="HOST:PORT[,...]",
        help="Bootstrap servers (Kafka's bootstrap.servers).",
    )(f)


def assignments_option(*decls: str, help: str):
    """A repeatable KEY=VALUE option (`--set`, `-X`); click hands the values over as a tuple of strings."""
    return click.option(*decls, multiple=True, metavar="KEY=VALUE", help=help)


def json_option(f):
    return click.option("--json", "as_json", is_flag=True, help="Machine-readable JSON output.")(f)


def topic_argument(param: str = "topic", shell_complete=None, short: bool = True):
    """TOPIC as a positional argument or as `--topic/-t` (Kafka's and kcat's spelling);
    exactly one of them. The command receives `param`. `short=False` leaves -t to a
    command that already uses it (perf: kafka-producer-perf-test's --throughput)."""

    def decorate(f):
        names = ("--topic", "-t") if short else ("--topic",)

        @click.argument(param, required=False, metavar="TOPIC", shell_complete=shell_complete)
        @click.option(*names, "topic_flag", default=None, metavar="TOPIC", shell_complete=shell_complete,
                      help="The topic (same as the TOPIC argument).")
        @functools.wraps(f)
        def wrapper(*args, topic_flag=None, **kwargs):
            positional = kwargs.get(param)
            if positional is not None and topic_flag is not None and positional != topic_flag:
                raise UsageError(f"two topics given: {positional} and --topic {topic_flag}")
            name = positional if positional is not None else topic_flag
            if name is None:
                raise UsageError("missing topic: give TOPIC or --topic TOPIC")
            kwargs[param] = name
            return f(*args, **kwargs)

        return wrapper

    return decorate


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


def properties_options(f=None, *, config_alias: bool = True):
    """Adds -X/--property and --command-config/-F; the command receives `properties: dict`.

    With `config_alias` the old `--config FILE` is still accepted (hidden); commands
    where `--config` means KEY=VALUE, as in kafka-topics.sh, pass config_alias=False.
    """

    def decorate(f):
        names = ["--command-config", "-F", "config_file"]
        opts = [
            click.option("-X", "--property", "x_props", multiple=True, metavar="KEY=VALUE",
                         help="Any Kafka client property by its Kafka name (repeatable)."),
            click.option(*names, type=click.Path(dir_okay=False), default=None, metavar="FILE",
                         help="Client properties file (Java .properties); -X overrides its entries."),
        ]
        if config_alias:
            opts.append(click.option("--config", "legacy_config_file", type=click.Path(dir_okay=False),
                                     default=None, hidden=True))

        @functools.wraps(f)
        def wrapper(*args, x_props=(), config_file=None, legacy_config_file=None, **kwargs):
            if config_file and legacy_config_file:
                raise UsageError("use either --command-config or --config")
            kwargs["properties"] = merge_properties(config_file or legacy_config_file, x_props)
            return f(*args, **kwargs)

        for opt in opts:
            wrapper = opt(wrapper)
        return wrapper

    return decorate(f) if f is not None else decorate


def require(cond: bool, message: str) -> None:
    if not cond:
        raise UsageError(message)
