"""Man pages are installed with the package (share/man/man1) and pylog.1 has ENVIRONMENT,
EXIT STATUS, SHELL COMPLETION and EXAMPLES sections whose commands parse."""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import click

from pylog.cli.main import cli
from pylog.cli.manpages import render_all

ROOT = Path(__file__).resolve().parents[1]


def test_install_puts_every_page_in_share_man_man1(tmp_path):
    # setuptools' own install_data step, offline: what pip does with the wheel's data files
    r = subprocess.run([sys.executable, "setup.py", "-q", "install_data",
                        "-d", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    installed = sorted(p.name for p in (tmp_path / "share" / "man" / "man1").iterdir())
    assert installed == sorted(render_all()) and "pylog.1" in installed


def test_pylog_1_sections():
    page = render_all()["pylog.1"]
    for section in ("ENVIRONMENT", "EXIT STATUS", "SHELL COMPLETION", "EXAMPLES"):
        assert f"\n.SH {section}\n" in page, section
    assert "PYLOG_BOOTSTRAP_SERVERS" in page and "_PYLOG_COMPLETE=bash_source pylog" in page
    for code in ("0", "1", "2", "3", "130", "143"):
        assert f"\n.TP\n.B {code}\n" in page, code


def _examples(page: str) -> list[list[str]]:
    text = page.split("\n.SH EXAMPLES\n", 1)[1].split("\n.SH ", 1)[0]
    cmds = []
    for block in re.findall(r"\.nf\n(.*?)\n\.fi", text, re.S):
        for line in block.replace("\\-", "-").replace("\\e", "\\").splitlines():
            for part in line.split("|"):
                words = shlex.split(part.replace("&", ""))
                if words and words[0] == "pylog":
                    cmds.append(words[1:])
    return cmds


def test_pylog_1_examples_parse():
    cmds = _examples(render_all()["pylog.1"])
    assert len(cmds) >= 6
    for args in cmds:
        args = list(args)
        cmd, ctx = cli, click.Context(cli, info_name="pylog", **cli.context_settings)
        while isinstance(cmd, click.Group):
            name = args.pop(0)
            cmd = cmd.get_command(ctx, name)
            assert cmd is not None, name
            ctx = click.Context(cmd, info_name=name, parent=ctx, **cmd.context_settings)
        try:
            cmd.make_context(ctx.info_name, args, parent=ctx.parent)  # raises on an unknown option or bad value
        except click.BadParameter as e:
            assert "does not exist" in e.format_message(), (args, e.format_message())  # example paths only
