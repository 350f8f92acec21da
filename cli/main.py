"""The `pylog` command group and the one place exceptions become exit codes.

Exit codes: 0 success, 1 data or runtime error, 2 usage error, 130 on Ctrl-C,
143 on SIGTERM (handled like Ctrl-C: long-running commands stop cleanly).
"""
from __future__ import annotations

import gc
import importlib.util
import logging
import os
import signal
import sys

import click

from pylog.core import about, fastpath
from pylog.core.errors import PylogError

# name -> "module:attribute". Commands load lazily so `pylog --help` and a
# simple dump do not pay for importing the broker or PySpark.
COMMANDS: dict[str, str] = {
    "broker": "pylog.commands.broker:broker",
    "dump-segment": "pylog.commands.dump_segment:dump_segment",
    "verify": "pylog.commands.verify:verify",
    "check-cluster": "pylog.commands.check_cluster:check_cluster",
    "produce": "pylog.commands.produce:produce",
    "consume": "pylog.commands.consume:consume",
    "topics": "pylog.commands.topics:topics",
    "groups": "pylog.commands.groups:groups",
    "share-groups": "pylog.commands.share_groups:share_groups",
    "streams-groups": "pylog.commands.streams_groups:streams_groups",
    "transactions": "pylog.commands.transactions:transactions",
    "acls": "pylog.commands.acls:acls",
    "users": "pylog.commands.users:users",
    "quotas": "pylog.commands.quotas:quotas",
    "perf": "pylog.commands.perf:perf",
    "compact": "pylog.commands.compact:compact",
    "diff": "pylog.commands.diff:diff",
    "export-to-kafka": "pylog.commands.export_kafka:export_to_kafka",
    "schema-registry": "pylog.commands.schema_registry:schema_registry",
    "schemas": "pylog.commands.schemas:schemas",
    "console": "pylog.commands.console_cmd:console",
    "spark-ingest": "pylog.commands.spark_jobs:spark_ingest",
    "spark-compaction": "pylog.commands.spark_jobs:spark_compaction",
    "spark-export": "pylog.commands.spark_export:spark_export",
}

_state = {"debug": False}


def _available(name: str) -> bool:
    module = COMMANDS[name].partition(":")[0]
    return importlib.util.find_spec(module) is not None


class LazyGroup(click.Group):
    def format_epilog(self, ctx, formatter):
        """Where the manual is: installed pages, or a checkout's (an editable install has none)."""
        super().format_epilog(ctx, formatter)
        if ctx.parent is None:
            formatter.write_paragraph()
            formatter.write_text(manual_hint())

    def list_commands(self, ctx):
        return sorted(n for n in COMMANDS if _available(n))

    def get_command(self, ctx, name):
        target = COMMANDS.get(name)
        if target is None or not _available(name):
            return None
        module, _, attr = target.partition(":")
        return getattr(importlib.import_module(module), attr)


# the libraries whose versions decide what pylog does: codecs and checksums, the schema
# types, and (when their extras are installed) Spark, Arrow and the table formats
BEHAVIOUR_LIBRARIES = ("lz4", "zstandard", "cramjam", "crc32c", "fastavro", "jsonschema", "protobuf")
EXTRA_LIBRARIES = {"spark": ("pyspark", "pyarrow", "pandas"), "lake": ("deltalake", "pyiceberg")}


def library_versions() -> list[str]:
    """`name version` of each library that decides behaviour; extras that are not installed say how."""
    from importlib import metadata

    def one(name):
        try:
            return f"{name} {metadata.version(name)}"
        except metadata.PackageNotFoundError:
            return None

    lines = [", ".join(v for v in map(one, BEHAVIOUR_LIBRARIES) if v)]
    for extra, names in EXTRA_LIBRARIES.items():
        found = [v for v in map(one, names) if v]
        lines.append(", ".join(found) if found else f"{extra}: not installed (pip install 'pylog[{extra}]')")
    return lines


def manual_hint() -> str:
    """One line: how to read pylog's man pages from this installation."""
    from pathlib import Path

    if (Path(sys.prefix) / "share" / "man" / "man1" / "pylog.1").is_file():
        return "Manual: man pylog, and man pylog-COMMAND for each command."
    checkout = Path(__file__).resolve().parents[1] / "man" / "pylog.1"
    if checkout.is_file():
        return f"Manual: man -l {checkout} (an editable install leaves the man pages in the checkout)."
    return "Manual: not installed with this copy of pylog."


def implementation() -> str:
    """Which implementation runs, over every package that owns compiled code (the CLI sits above them all)."""
    from pylog.commands import fastpath as commands_fastpath
    from pylog.core.client import fastpath as client_fastpath
    from pylog.core.records import fastpath as records_fastpath
    from pylog.storage import fastpath as storage_fastpath

    owners = (records_fastpath, client_fastpath, storage_fastpath, commands_fastpath)
    return fastpath.implementation([owner.extension for owner in owners])


def _print_version(ctx, _param, value) -> None:
    """--version, looked up only when asked for (click's version_option reads it at import)."""
    if value and not ctx.resilient_parsing:
        click.echo(f"pylog {about.version()}\nimplementation: {implementation()}\n"
                   f"python: {sys.version.split()[0]}")
        for line in library_versions():
            click.echo(f"libraries: {line}")
        ctx.exit()


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--version", "-V", is_flag=True, expose_value=False, is_eager=True, callback=_print_version,
              help="Show the version and exit.")
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
    if debug:
        logging.getLogger("pylog").debug("implementation: %s", implementation())


def _one_line(e: BaseException) -> str:
    text = str(e).strip() or e.__class__.__name__
    return " ".join(text.split())


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C would be so every command stops the same way."""


def _on_sigterm(signum, frame):
    _state["terminated"] = True
    raise Terminated()


def _hoist_debug(args: list[str]) -> list[str]:
    """`--debug` anywhere before `--` applies to the whole run, as if given first."""
    end = args.index("--") if "--" in args else len(args)
    if "--debug" not in args[:end]:
        return args
    return ["--debug"] + [a for i, a in enumerate(args) if not (i < end and a == "--debug")]


def _usage_line(e: click.ClickException) -> str:
    """Click's usage error as one line: the message plus where to look for help."""
    msg = _one_line(e.format_message() if isinstance(e, click.UsageError) else e).rstrip(".")
    ctx = getattr(e, "ctx", None)
    if isinstance(e, click.UsageError) and ctx is not None:
        msg += f" (see '{ctx.command_path} --help')"
    return msg


def main(argv: list[str] | None = None) -> None:
    """The `pylog` program; `argv` None: this process's own arguments (the process is the command)."""
    try:
        _main(argv)
    finally:
        if argv is None:
            # The interpreter's exit runs full garbage collections over every object the imports
            # made (20-30 ms of a 150 ms one-record produce); frozen, they are left to the OS.
            # Only for the process's own run: an embedding caller keeps its collector as it was.
            gc.freeze()


def _main(argv: list[str] | None) -> None:
    if "_PYLOG_COMPLETE" in os.environ:
        # shell completion (see pylog(1) SHELL COMPLETION): Click's own entry handles it
        cli.main(args=argv, prog_name="pylog", complete_var="_PYLOG_COMPLETE")
        return
    args = _hoist_debug(list(sys.argv[1:] if argv is None else argv))
    _state["debug"] = "--debug" in args
    try:
        signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:  # not the main thread (embedded use): leave signals alone
        pass
    try:
        # make_context/invoke rather than cli.main(): Click's main turns Ctrl-C into
        # Abort after printing a blank line; here it stays KeyboardInterrupt.
        with cli.make_context("pylog", args) as ctx:
            rv = cli.invoke(ctx)
    except click.exceptions.Exit as e:
        sys.exit(e.exit_code)
    except click.exceptions.Abort:
        if _state.get("terminated"):
            click.echo("pylog: terminated", err=True)
            sys.exit(143)
        click.echo("pylog: aborted", err=True)
        sys.exit(130)
    except click.exceptions.NoArgsIsHelpError as e:
        e.show()  # `pylog` or `pylog topics` alone: the help, as Click shows it
        sys.exit(e.exit_code)
    except click.ClickException as e:
        # usage errors: one line like every other error, exit 2
        if _state["debug"]:
            raise
        click.echo(f"pylog: error: {_usage_line(e)}", err=True)
        sys.exit(e.exit_code)
    except KeyboardInterrupt:
        # a command that caught the first signal may re-raise a plain KeyboardInterrupt
        if _state.get("terminated"):
            click.echo("pylog: terminated", err=True)
            sys.exit(143)
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
