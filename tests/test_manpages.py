"""Man pages are generated from the Click definitions and must stay in sync."""
from pathlib import Path

from pylog.cli.manpages import render_all

MAN = Path(__file__).resolve().parents[1] / "man"


def test_every_command_has_a_current_man_page():
    pages = render_all()
    assert "pylog.1" in pages
    missing = [n for n in pages if not (MAN / n).exists()]
    assert not missing, f"missing man pages {missing}: run `python -m pylog.cli.manpages`"
    stale = [n for n, text in pages.items() if (MAN / n).read_text(encoding="utf-8") != text]
    assert not stale, f"man pages out of date {stale}: run `python -m pylog.cli.manpages`"


def test_no_orphan_man_pages():
    pages = render_all()
    orphans = [p.name for p in MAN.glob("*.1") if p.name not in pages]
    assert not orphans, f"man pages for commands that no longer exist: {orphans}"


def test_every_top_level_command_is_documented():
    from pylog.cli.main import cli
    import click

    ctx = click.Context(cli, info_name="pylog")
    for name in cli.list_commands(ctx):
        assert f"pylog-{name}.1" in render_all(), name
        cmd = cli.get_command(ctx, name)
        assert (cmd.help or "").strip(), f"command {name} has no help text"
