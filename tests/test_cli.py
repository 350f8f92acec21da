"""The `pylog` entry point: version, help, and the exit-code conventions."""

import sys

import click
import pytest

from pylog.cli import main as cli_main
from pylog.commands.options import merge_properties
from pylog.core.errors import DataError, UsageError
from pylog.core.properties import parse_properties
from support.cli import pylog


def run(*args, **kw):
    return pylog(*args, timeout=60, **kw)


def test_version_and_help():
    from importlib import metadata

    r = run("--version")
    assert r.returncode == 0
    lines = r.stdout.splitlines()
    assert lines[0] == f"pylog {metadata.version('pylog')}"
    assert lines[1].startswith("implementation: ") and lines[2] == f"python: {sys.version.split()[0]}"
    libraries = " ".join(line for line in lines if line.startswith("libraries: "))
    for name in ("lz4", "zstandard", "crc32c", "fastavro", "protobuf", "pyspark", "pyarrow", "deltalake"):
        assert f"{name} {metadata.version(name)}" in libraries, name  # the test environment has every extra
    r = run("--help")
    assert r.returncode == 0 and "Usage: pylog" in r.stdout
    assert "Manual: " in r.stdout and "man" in r.stdout.split("Manual: ")[1]


def test_unknown_command_is_a_usage_error():
    r = run("no-such-command")
    assert r.returncode == 2
    assert "No such command" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.fixture
def fake_commands(monkeypatch):
    @click.command("boom")
    @click.option("--kind")
    def boom(kind):
        """Raise an error of the given kind."""
        if kind == "data":
            raise DataError("segment 00000000000000000000.log is damaged")
        if kind == "usage":
            raise UsageError("--offset must be a number")
        if kind == "bug":
            raise ZeroDivisionError("division by zero")
        if kind == "oserror":
            open("/nonexistent/dir/file")
        if kind == "exit3":
            click.get_current_context().exit(3)

    orig = cli_main.LazyGroup.get_command

    def get_command(self, ctx, name):
        return boom if name == "boom" else orig(self, ctx, name)

    monkeypatch.setattr(cli_main.LazyGroup, "get_command", get_command)


@pytest.mark.parametrize(
    "kind,code,text",
    [
        ("data", 1, "pylog: error: segment 00000000000000000000.log is damaged"),
        ("usage", 2, "pylog: error: --offset must be a number"),
        ("bug", 1, "pylog: internal error: ZeroDivisionError: division by zero"),
        ("oserror", 1, "pylog: error: No such file or directory (/nonexistent/dir/file)"),
    ],
)
def test_errors_map_to_one_line_and_exit_code(fake_commands, capsys, kind, code, text):
    with pytest.raises(SystemExit) as e:
        cli_main.main(["boom", "--kind", kind])
    assert e.value.code == code
    err = capsys.readouterr().err
    assert text in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_debug_shows_the_exception(fake_commands):
    with pytest.raises(DataError):
        cli_main.main(["--debug", "boom", "--kind", "data"])


def test_properties_parsing():
    text = "# comment\n! also\nbootstrap.servers=a:1,b:2\nlinger.ms : 7\nclient.id  pylog\\\n  -x\nempty=\nuni=\\u0041\n"
    assert parse_properties(text) == {
        "bootstrap.servers": "a:1,b:2",
        "linger.ms": "7",
        "client.id": "pylog-x",
        "empty": "",
        "uni": "A",
    }


def test_x_overrides_config_file(tmp_path):
    f = tmp_path / "p.properties"
    f.write_text("acks=1\nlinger.ms=10\n")
    assert merge_properties(str(f), ("acks=all", "batch.size=1")) == {"acks": "all", "linger.ms": "10", "batch.size": "1"}
    with pytest.raises(UsageError):
        merge_properties(None, ("novalue",))
    with pytest.raises(UsageError):
        merge_properties(str(tmp_path / "missing"), ())


def test_ctx_exit_code_is_kept(fake_commands):
    with pytest.raises(SystemExit) as e:
        cli_main.main(["boom", "--kind", "exit3"])
    assert e.value.code == 3
