"""The `pylog` command group and the one place exceptions become exit codes.

Exit codes: 0 success, 1 data or runtime error, 2 usage error, 130 on Ctrl-C.
"""
from __future__ import annotations

import importlib
import logging
import sys
from importlib import metadata

import click

from pylog.core.errors import PylogError

# name -> "module:attribute". Commands load lazily so `pylog --help` and a
# simple dump do not pay for importing the broker or PySpark.
COMMANDS: dict[str, str] = {
    "broker": "pylog.commands.broker.cli:broker",
    "dump-segment": "pylog.commands.dump_segment:dump_segment",
    "verify": "pylog.commands.verify:verify",
    "produce": "pylog.commands.produce:produce",
    "consume": "pylog.commands.consume:consume",
    "topics": "pylog.commands.topics:topics",
    "groups": "pylog.commands.groups:groups",
    "transactions": "pylog.commands.transactions:transactions",
    "acls": "pylog.commands.acls:acls",
    "users": "pylog.commands.users:users",
    "quotas": "pylog.commands.quotas:quotas",
    "perf": "pylog.commands.perf:perf",
    "compact": "pylog.commands.compact:compact",
    "diff": "pylog.commands.diff:diff",
    "export-to-kafka": "pylog.commands.export_kafka:export_to_kafka",
    "spark-ingest": "pylog.commands.spark.cli:spark_ingest",
    "spark-compaction": "pylog.commands.spark.cli:spark_compaction",
}

_state = {"debug": False}


def _available(name: str) -> bool:
    module = COMMANDS[name].partition(":")[0]
    return importlib.util.find_spec(module) is not None


class LazyGroup(click.Group):
    def list_commands(self, ctx):
        return sorted(n for n in COMMANDS if _available(n))

    def get_command(self, ctx, name):
        target = COMMANDS.get(name)
        if target is None or not _available(name):
            return None
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)


def version() -> str:
    try:
        return metadata.version("pylog")
    except metadata.PackageNotFoundError:
        return "0+unknown"


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(version(), "--version", "-V", prog_name="pylog", message="%(prog)s %(version)s")
@click.option("--debug", is_flag=True, help="Show tracebacks and debug logging.")
@click.pass_context
def cli(ctx, debug):
    """Kafka's log layer and tools in Python.

    A Kafka-format storage engine, an embedded broker that speaks the Kafka
    wire protocol, producer and consumer commands, segment dump and verify
    tools, and Spark jobs for bulk produce and compaction analysis.
    """
    _state["debug"] = debug
    ctx.ensure_object(dict)["debug"] = debug
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def _one_line(e: BaseException) -> str:
    text = str(e).strip() or e.__class__.__name__
    return " ".join(text.split())


def main(argv: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if argv is None else argv)
    _state["debug"] = "--debug" in args
    try:
        # Without standalone mode Click returns ctx.exit(n)'s code instead of exiting.
        rv = cli.main(args=args, prog_name="pylog", standalone_mode=False)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        click.echo("pylog: aborted", err=True)
        sys.exit(130)
    except click.ClickException as e:
        # usage errors: Click's own message plus a hint, exit 2
        if _state["debug"]:
            raise
        e.show()
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        click.echo("pylog: interrupted", err=True)
        sys.exit(130)
    except BrokenPipeError:
        # `pylog dump-segment ... | head`: not an error for the user
        sys.stderr.close()
        sys.exit(0)
    except PylogError as e:
        if _state["debug"]:
            raise
        click.echo(f"pylog: error: {_one_line(e)}", err=True)
        sys.exit(e.exit_code)
    except OSError as e:
        if _state["debug"]:
            raise
        where = f" ({e.filename})" if getattr(e, "filename", None) else ""
        click.echo(f"pylog: error: {e.strerror or _one_line(e)}{where}", err=True)
        sys.exit(1)
    except Exception as e:  # a bug: still one line unless --debug
        if _state["debug"]:
            raise
        click.echo(f"pylog: internal error: {e.__class__.__name__}: {_one_line(e)} (run with --debug for a traceback)", err=True)
        sys.exit(1)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
