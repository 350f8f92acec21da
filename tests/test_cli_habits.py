"""Kafka's and kcat's spellings, one-line usage errors, --debug anywhere, no broker needed."""
import signal
import subprocess
import sys

import click
import pytest

from pylog.cli import main as cli_main
from pylog.commands.consume_select import RecordFilter, kafka_formatter, parse_offsets, parse_time
from pylog.core.errors import DataError, UsageError
from pylog.core.records.batch import Record
from support.cli import pylog

DEAD = "127.0.0.1:1"  # nothing listens on port 1: a connection error names the bootstrap used


def run(*args, **kw):
    return pylog(*args, timeout=60, **kw)


def _walk(cmd, path, out, parent=None):
    # contexts chained as Click builds them: Click caches each command's help option from
    # the first context it sees (help_option_names are inherited from `pylog`'s)
    ctx = click.Context(cmd, info_name=path[-1], parent=parent, **cmd.context_settings)
    out.append((path, cmd, ctx))
    if isinstance(cmd, click.Group):
        for s in cmd.list_commands(ctx):
            _walk(cmd.get_command(ctx, s), path + [s], out, ctx)
    return out


def test_no_command_uses_an_option_name_twice():
    # engineers add options beside each other's: a clash would silently shadow one
    for path, cmd, ctx in _walk(cli_main.cli, ["pylog"], []):
        seen = {}
        for p in cmd.get_params(ctx):
            for o in [*p.opts, *p.secondary_opts] if isinstance(p, click.Option) else []:
                assert o not in seen, f"{' '.join(path)}: {o} used by {seen[o]} and {p.name}"
                seen[o] = p.name


def test_every_client_command_takes_bootstrap_server_and_command_config():
    for path, cmd, ctx in _walk(cli_main.cli, ["pylog"], []):
        names = {o for p in cmd.get_params(ctx) if isinstance(p, click.Option) for o in p.opts}
        if "--bootstrap" in names:
            assert {"--bootstrap-server", "-b"} <= names, path
        if "-X" in names:
            assert {"--command-config", "-F"} <= names, path


@pytest.mark.parametrize("args", [
    ["topics", "list", "--bootstrap-server", DEAD],
    ["consume", "--topic", "t", "--bootstrap-server", DEAD],
    ["produce", "-t", "t", "-b", DEAD],
])
def test_bootstrap_server_and_topic_spellings(args):
    r = run(*args, input="x\n")
    assert r.returncode in (1, 3), r.stderr
    assert "no broker reachable (bootstrap.servers=127.0.0.1:1)" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("flag", ["--command-config", "-F", "--config"])
def test_command_config_file(tmp_path, flag):
    f = tmp_path / "client.properties"
    f.write_text(f"bootstrap.servers={DEAD}\nclient.id=from-file\n")
    r = run("topics", "list", flag, str(f))
    assert r.returncode == 1 and "bootstrap.servers=127.0.0.1:1" in r.stderr, r.stderr


def test_topics_config_is_key_value_not_a_file():
    # kafka-topics.sh --config KEY=VALUE; checked before any connection
    r = run("topics", "create", "t", "--config", "cleanup.policy=compactt", "-b", DEAD)
    assert r.returncode == 2 and "pylog: error: --config 'cleanup.policy=compactt'" in r.stderr, r.stderr
    r = run("topics", "alter-config", "t", "--config", "no.such.config=1", "-b", DEAD)
    assert r.returncode == 2 and "unknown topic config 'no.such.config'" in r.stderr, r.stderr
    r = run("topics", "alter-config", "t", "--delete-config", "nope", "-b", DEAD)
    assert r.returncode == 2 and "--delete-config 'nope'" in r.stderr, r.stderr


def test_topic_argument_and_flag_must_agree():
    r = run("consume", "a", "--topic", "b")
    assert r.returncode == 2 and r.stderr == "pylog: error: two topics given: a and --topic b\n"
    r = run("consume")
    assert r.returncode == 2 and r.stderr == "pylog: error: missing topic: give TOPIC or --topic TOPIC\n"


@pytest.mark.parametrize("args,pieces,hint", [
    (["topics", "create", "--bogus"], ["No such option", "--bogus"], "pylog topics create --help"),
    (["consume", "t", "-c", "zero"], ["--max-messages", "'zero' is not a valid integer range"], "pylog consume --help"),
    (["nope"], ["No such command", "nope"], "pylog --help"),
    (["groups", "describe"], ["Missing argument 'GROUP...'"], "pylog groups describe --help"),
])
def test_click_usage_errors_are_one_line(args, pieces, hint):
    # Click's wording varies across versions; the shape does not
    r = run(*args)
    assert r.returncode == 2
    assert r.stderr.startswith("pylog: error: ") and r.stderr.endswith(f" (see '{hint}')\n"), r.stderr
    assert r.stderr.count("\n") == 1 and all(p in r.stderr for p in pieces), r.stderr


def test_debug_after_the_subcommand():
    r = run("topics", "list", "-b", DEAD)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    r = run("topics", "list", "-b", DEAD, "--debug")
    assert r.returncode == 1 and "Traceback" in r.stderr and "NoBrokersAvailableError" in r.stderr


def test_debug_after_the_subcommand_in_process(monkeypatch):
    @click.command("boom")
    def boom():
        raise DataError("damaged")

    orig = cli_main.LazyGroup.get_command
    monkeypatch.setattr(cli_main.LazyGroup, "get_command",
                        lambda self, ctx, name: boom if name == "boom" else orig(self, ctx, name))
    with pytest.raises(DataError):
        cli_main.main(["boom", "--debug"])
    with pytest.raises(SystemExit) as e:
        cli_main.main(["boom", "--", "--debug"])  # after `--` it is an argument, not the flag
    assert e.value.code == 2


def test_sigterm_is_handled_like_ctrl_c(tmp_path):
    # a command at work: SIGTERM ends it as Ctrl-C does, with 143 and one line (the
    # group consumer's leave-and-commit on SIGTERM: tests/test_consume_habits.py)
    p = subprocess.Popen([sys.executable, "-c", "import time, sys; sys.argv=['pylog','boom'];"
                          "import click; from pylog.cli import main as m;"
                          "c=click.command('boom')(lambda: (print('ready', flush=True), time.sleep(60)));"
                          "m.LazyGroup.get_command=lambda self, ctx, name: c; m.main()"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stdout.readline().strip() == "ready"
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 143 and err == "pylog: terminated\n"


def test_offsets_kcat_forms_and_relative_times():
    now = 1_700_000_000_000
    assert parse_offsets(("s@1234",), now) == (("timestamp", 1234), None)
    assert parse_offsets(("@1234",), now) == (("timestamp", 1234), None)
    assert parse_offsets(("s@-10m", "e@-1m"), now) == (("timestamp", now - 600_000), now - 60_000)
    assert parse_offsets(("e@-2h",), now) == (None, now - 7_200_000)
    assert parse_offsets(("stored",), now) == (("stored", 0), None)
    assert parse_offsets(("-10",), now) == (("relative", 10), None)
    assert parse_offsets(("beginning",), now) == (("earliest", 0), None)
    assert parse_time("-1d", "x", now) == now - 86_400_000
    for bad in [("s@soon",), ("1", "2"), ("e@1", "e@2"), ("s@-10",), ("x",)]:
        with pytest.raises(UsageError):
            parse_offsets(bad, now)


def test_filter_expressions():
    recs = [Record(0, 0, b"k1", b"v", [("h", b"x")]), Record(1, 0, b"k2", b"v", [("h", b"y")]),
            Record(2, 0, None, b"v", []), Record(3, 0, b"k10", b"v", [("g", None)])]
    assert [r.offset for r in RecordFilter(("key=k1",)).apply(recs)] == [0]
    assert [r.offset for r in RecordFilter(("key~^k1",)).apply(recs)] == [0, 3]
    assert [r.offset for r in RecordFilter(("header.h=y",)).apply(recs)] == [1]
    assert [r.offset for r in RecordFilter(("header.h",)).apply(recs)] == [0, 1]
    assert [r.offset for r in RecordFilter(("header.g",)).apply(recs)] == [3]
    assert [r.offset for r in RecordFilter(("header.h", "key=k2")).apply(recs)] == [1]
    for bad in ["value=1", "key", "key~(", "header.=x"]:
        with pytest.raises(UsageError):
            RecordFilter((bad,))


def test_kafka_formatter_properties():
    r = Record(5, 1700, b"k", b"v", [("a", b"1"), ("b", None)])
    text = bytes.decode
    one = kafka_formatter({"print.key": "true"}, text)
    assert one("t", 0, r) == "k\tv\n"
    one = kafka_formatter({"print.timestamp": "true", "print.partition": "true", "print.offset": "true",
                           "print.headers": "true", "print.key": "true", "key.separator": "|"}, text)
    assert one("t", 2, r) == "CreateTime:1700|Partition:2|Offset:5|a:1,b:null|k|v\n"
    one = kafka_formatter({"print.key": "true", "print.value": "false", "null.literal": "-"}, text)
    assert one("t", 0, Record(0, 0, None, b"v", [])) == "-\n"
    with pytest.raises(UsageError):
        kafka_formatter({"print.key": "yes"}, text)
