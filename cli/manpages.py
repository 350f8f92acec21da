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

from pylog.cli.main import cli
from pylog.core.about import version

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
    # Built here rather than by Click so the page is the same on every Click version.
    pieces = ["[OPTIONS]"]
    for p in cmd.params:
        if isinstance(p, click.Argument):
            name = (p.metavar or p.name or "").upper()
            if p.nargs == -1:
                name += "..."
            pieces.append(name if p.required else f"[{name}]")
    if isinstance(cmd, click.Group):
        pieces.append("COMMAND [ARGS]...")
    return f".B {_esc(ctx.command_path)}\n" + _esc(" ".join(pieces))


def _metavar(param: click.Option) -> str:
    if param.metavar:
        return param.metavar
    if isinstance(param.type, click.Choice):
        return "[" + "|".join(str(c) for c in param.type.choices) + "]"
    return param.type.name.upper()


def _option_entry(ctx: click.Context, param: click.Parameter) -> str | None:
    if not isinstance(param, click.Option) or param.hidden:
        return None
    # short forms first: Click versions differ in the order they keep
    names = ", ".join(sorted(param.opts, key=lambda o: (o.startswith("--"), o)))
    if param.secondary_opts:
        names += " / " + ", ".join(param.secondary_opts)
    if not param.is_flag and not param.count:
        names += " " + _metavar(param)
    help_text = " ".join((param.help or "").split())
    extra = []
    if param.show_default and param.default is not None and not callable(param.default) and not param.is_flag:
        default = param.default
        if isinstance(default, (list, tuple)):
            default = ", ".join(map(str, default))
        if default != "" and default != ():
            extra.append(f"default: {default}")
    if param.show_envvar and param.envvar:
        env = param.envvar if isinstance(param.envvar, str) else ", ".join(param.envvar)
        extra.append(f"env var: {env}")
    if param.multiple:
        extra.append("repeatable")
    if extra:
        help_text = f"{help_text} [{'; '.join(extra)}]".strip()
    entry = f".TP\n.B {_esc(names)}"
    return f"{entry}\n{_esc(help_text)}" if help_text else entry


def _section(title: str, *entries: str) -> str:
    return f".SH {title}\n" + "\n".join(entries)


def _tp(term: str, text: str) -> str:
    return f".TP\n.B {_esc(term)}\n{_esc(text)}"


def _example(what: str, command: str) -> str:
    return f".PP\n{_esc(what)}\n.PP\n.RS 4\n.nf\n{_esc(command)}\n.fi\n.RE"


# pylog.1 only: what applies to every command
_ROOT_SECTIONS = [
    _section(
        "ENVIRONMENT",
        _tp("PYLOG_BOOTSTRAP_SERVERS", "Bootstrap servers of every client command when --bootstrap-server "
            "(--bootstrap, -b) is not given; default 127.0.0.1:9092."),
        _tp("_PYLOG_COMPLETE", "Set by the shell completion scripts (see SHELL COMPLETION); not for direct use."),
        _tp("COLUMNS", "Width of tables on a terminal; piped output is plain columns of any width."),
    ),
    _section(
        "EXIT STATUS",
        _tp("0", "Success."),
        _tp("1", "A data or runtime error: damaged files, an unreachable broker, a topic that does not exist, "
            "some records not delivered."),
        _tp("2", "A usage error: an unknown option, a bad value, an invalid property. One line on stderr, "
            "starting with 'pylog: error:'."),
        _tp("3", "pylog produce: nothing was delivered."),
        _tp("130", "Interrupted by Ctrl-C (SIGINT)."),
        _tp("143", "Stopped by SIGTERM, which is handled as Ctrl-C: pylog produce prints its summary marked "
            "interrupted; pylog consume commits, leaves its group at once and exits 0, as after Ctrl-C."),
    ),
    _section(
        "SHELL COMPLETION",
        _esc("Commands, options, and topic and group names (asked from the broker named by -b or "
             "PYLOG_BOOTSTRAP_SERVERS) complete in bash, zsh and fish:"),
        ".PP\n.RS 4\n.nf\n" + _esc('eval "$(_PYLOG_COMPLETE=bash_source pylog)"    # ~/.bashrc\n'
                                      'eval "$(_PYLOG_COMPLETE=zsh_source pylog)"     # ~/.zshrc\n'
                                      "_PYLOG_COMPLETE=fish_source pylog | source     # ~/.config/fish/config.fish")
        + "\n.fi\n.RE",
    ),
    _section(
        "EXAMPLES",
        _example("Start a broker and make a topic:",
                 "pylog broker start --log-dir ./data &\npylog topics create orders --partitions 3"),
        _example("Produce lines with keys, then read them back with keys and offsets:",
                 "printf 'k1:v1\\nk2:v2\\n' | pylog produce orders -K :\n"
                 "pylog consume orders --from-beginning -e -f '%k %o %s\\n'"),
        _example("Read as a group member; Ctrl-C or SIGTERM commits and leaves the group:",
                 "pylog consume orders -g billing --from-beginning"),
        _example("Inspect and check a log dir offline:",
                 "pylog dump-segment ./data/orders-0/00000000000000000000.log\npylog verify ./data"),
        _example("Use a client properties file, as Kafka's tools do:",
                 "pylog topics list --bootstrap-server 127.0.0.1:9092 --command-config client.properties"),
    ),
]


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
    if len(path) == 1:
        lines.extend(_ROOT_SECTIONS)
    else:
        lines.append(".SH EXIT STATUS")
        lines.append("0 on success, 1 when a data or runtime error occurred, 2 on a usage error, 130 on "
                     "Ctrl\\-C, 143 on SIGTERM (unless the description above says otherwise).")
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
