"""What `pylog groups` and `pylog share-groups` do alike: plain tables, the group list and
the `delete` command."""
from __future__ import annotations

import click

from pylog.commands.completion import group_names
from pylog.commands.console import emit_json, err, out
from pylog.commands.options import bootstrap_option, json_option, properties_options
from pylog.core.errors import ErrorCode, PylogError, error_name


def print_table(headers, rows) -> None:
    """Plain aligned columns (kafka-consumer-groups style): never truncated, easy to grep."""
    cols = [list(map(str, headers))] + [[str(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in cols) for i in range(len(headers))]
    for r in cols:
        out.print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip(), markup=False, highlight=False)


def add_list_command(cli: click.Group, listed, kind: str, help: str, states: str, headers, row):
    """Register `list` on `cli`: the groups `listed(bootstrap, properties)` returns, filtered by
    --state (`states` names the states), as JSON or a table of `row(group)` under `headers`."""
    @cli.command("list", help=help)
    @bootstrap_option
    @click.option("--state", "states", multiple=True, metavar="STATE",
                  help=f"Only groups in this state ({states}); repeatable.")
    @properties_options
    @json_option
    def list_(bootstrap, states, properties, as_json):
        print_group_list(listed(bootstrap, properties), states, as_json, kind, headers, row)

    return list_


def print_group_list(gs: list[dict], states, as_json: bool, kind: str, headers, row) -> None:
    """The listed groups in one of `states` (any case; all when none), as JSON or a table of
    `row(group)`; `kind` names them when there are none ("consumer groups")."""
    wanted = {s.lower() for s in states}
    if wanted:
        gs = [g for g in gs if g["state"].lower() in wanted]
    if as_json:
        emit_json(gs)
        return
    if not gs:
        err.print(f"no {kind}", style="dim")
        return
    print_table(headers, [row(g) for g in gs])


def report_deleted(res: dict, as_json: bool, kind: str, reasons: dict | None = None) -> None:
    """Print what deleting groups answered (group -> error code), as JSON or a line a group
    (`reasons` words an error after "KIND GROUP"); exits 1 when any was not deleted."""
    if as_json:
        emit_json([{"group": g, "deleted": c == ErrorCode.NONE,
                    "error": None if c == ErrorCode.NONE else error_name(c)} for g, c in res.items()])
    else:
        for g, c in res.items():
            if c == ErrorCode.NONE:
                out.print(f"deleted {kind} {g}", markup=False)
            else:
                why = (reasons or {}).get(c) or f": {error_name(c)}"
                err.print(f"{kind} {g}{why}", style="red", markup=False)
    if any(res.values()):
        raise click.exceptions.Exit(1)


def add_delete_command(cli: click.Group, admin_for, kind: str, help: str, reasons: dict | None = None):
    """Register `delete GROUP...` on `cli`: delete_groups through `admin_for(bootstrap, properties)`,
    reported by report_deleted."""
    @cli.command("delete", help=help)
    @click.argument("group_ids", metavar="GROUP...", nargs=-1, required=True, shell_complete=group_names)
    @bootstrap_option
    @properties_options
    @json_option
    def delete(group_ids, bootstrap, properties, as_json):
        with admin_for(bootstrap, properties) as admin:
            res = admin.delete_groups(list(group_ids))
        report_deleted(res, as_json, kind, reasons)

    return delete


def require_empty(describe, gid: str, kind: str, error: type[PylogError]) -> None:
    """Refuse, with `error`, a change of GROUP's offsets while it has members (`describe(gid)`
    gives them; a group that does not exist is empty)."""
    try:
        d = describe(gid)
    except PylogError as e:
        if getattr(e, "code", None) == ErrorCode.GROUP_ID_NOT_FOUND:
            return
        raise
    if d.members:
        raise error(f"{kind} '{gid}' has {len(d.members)} active members: its offsets can only be changed "
                    "while it is empty")


def report_reset(group_id: str, new: dict, dry_run: bool, as_json: bool, done: str) -> None:
    """The offsets `reset-offsets` set, or would set: a table, or JSON; `done` says what --execute does."""
    rows = [{"group": group_id, "topic": tp.topic, "partition": tp.partition, "new_offset": n} for tp, n in new.items()]
    if as_json:
        emit_json({"group": group_id, "executed": not dry_run, "offsets": rows})
        return
    print_table(("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"),
                [(r["group"], r["topic"], r["partition"], r["new_offset"]) for r in rows])
    if dry_run:
        err.print(f"dry run: nothing changed (use --execute to {done})", style="yellow")
