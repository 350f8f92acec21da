"""Generate man pages from the Click definitions.

`python -m pylog.cli.manpages [DIR]` writes man/pylog.1 and one page per
command (and per subcommand of a group: pylog-topics-create.1). The output is
deterministic (no dates), so tests/test_manpages.py can fail when a page is
missing or drifts from the code.
"""
from __future__ import annotations

import inspect
import sys
from pathlib import Path

import click

from pylog.cli.main import cli, version

SECTION = "1"
MANUAL = "pylog manual"


def _esc(text: str) -> str:
    text = text.replace("\\", "\\e").replace("-", "\\-")
    lines = []
    for line in text.split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        lines.append(line)
    return "\n".join(lines)


def _paragraphs(text: str) -> list[str]:
    """Click help text -> paragraphs; `\\b` blocks keep their line breaks."""
    out = []
    for block in inspect.cleandoc(text or "").split("\n\n"):
        block = block.strip("\n")
        if not block:
            continue
        if block.startswith("\b"):
            out.append(".nf\n" + _esc(block[1:].strip("\n")) + "\n.fi")
        else:
            out.append(_esc(" ".join(block.split())))
    return out


def _page_name(path: list[str]) -> str:
    return "-".join(path)


def _synopsis(ctx: click.Context, cmd: click.Command) -> str:
    pieces = cmd.collect_usage_pieces(ctx)
    return f".B {_esc(ctx.command_path)}\n" + _esc(" ".join(pieces))


def _option_entry(ctx: click.Context, param: click.Parameter) -> str | None:
    rec = param.get_help_record(ctx)
    if rec is None:
        return None
    names, help_text = rec
    return f".TP\n.B {_esc(names)}\n{_esc(' '.join(help_text.split()))}" if help_text else f".TP\n.B {_esc(names)}"


def render_command(path: list[str], cmd: click.Command, parent: click.Context | None) -> str:
    ctx = click.Context(cmd, info_name=path[-1], parent=parent, **cmd.context_settings)
    name = _page_name(path)
    short = cmd.get_short_help_str(limit=200)
    lines = [
        f'.TH "{name.upper()}" "{SECTION}" "" "pylog {version()}" "{MANUAL}"',
        ".SH NAME",
        f"{_esc(name)} \\- {_esc(short)}",
        ".SH SYNOPSIS",
        _synopsis(ctx, cmd),
        ".SH DESCRIPTION",
    ]
    paras = _paragraphs(cmd.help or "")
    lines.append("\n.PP\n".join(paras) if paras else _esc(short))
    opts = [e for p in cmd.get_params(ctx) if (e := _option_entry(ctx, p))]
    if opts:
        lines.append(".SH OPTIONS")
        lines.extend(opts)
    if isinstance(cmd, click.Group):
        subs = cmd.list_commands(ctx)
        if subs:
            lines.append(".SH COMMANDS")
            for sub in subs:
                sc = cmd.get_command(ctx, sub)
                lines.append(f".TP\n.B {_esc(sub)}\n{_esc(sc.get_short_help_str(limit=200))}"
                             f" See \\fB{_esc(_page_name(path + [sub]))}\\fR({SECTION}).")
    if cmd.epilog:
        lines.append(".SH NOTES")
        lines.append("\n.PP\n".join(_paragraphs(cmd.epilog)))
    lines.append(".SH EXIT STATUS")
    lines.append("0 on success, 1 when a data or runtime error occurred, 2 on a usage error.")
    if len(path) > 1:
        lines.append(".SH SEE ALSO")
        lines.append(f"\\fBpylog\\fR({SECTION})")
    return "\n".join(lines) + "\n"


def render_all() -> dict[str, str]:
    pages: dict[str, str] = {}

    def walk(path: list[str], cmd: click.Command, parent: click.Context | None) -> None:
        pages[f"{_page_name(path)}.{SECTION}"] = render_command(path, cmd, parent)
        if isinstance(cmd, click.Group):
            ctx = click.Context(cmd, info_name=path[-1], parent=parent, **cmd.context_settings)
            for sub in cmd.list_commands(ctx):
                walk(path + [sub], cmd.get_command(ctx, sub), ctx)

    walk(["pylog"], cli, None)
    return pages


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    outdir = Path(argv[0]) if argv else Path(__file__).resolve().parents[1] / "man"
    outdir.mkdir(parents=True, exist_ok=True)
    pages = render_all()
    for old in outdir.glob(f"*.{SECTION}"):
        if old.name not in pages:
            old.unlink()
    for name, text in pages.items():
        (outdir / name).write_text(text, encoding="utf-8")
    print(f"wrote {len(pages)} man pages to {outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
