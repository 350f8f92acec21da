"""`pylog share-groups list|describe|reset-offsets|delete-offsets|delete`: kafka-share-groups for pylog."""
from __future__ import annotations

import click

from pylog.commands.client_common import client_props
from pylog.commands.completion import group_names
from pylog.commands.console import emit_json, err, out
from pylog.commands.group_output import add_delete_command, add_list_command, print_table, report_reset, \
    require_empty
from pylog.commands.offset_reset import named_partitions, new_offsets, reset_mode, reset_target_options
from pylog.commands.options import bootstrap_option, json_option, properties_options
from pylog.core.config import CONSUMER_CONFIGS
from pylog.core.errors import ErrorCode, PylogError, error_name


class ShareGroupActiveError(PylogError):
    """The share group has members: its start offsets can only change while it is empty."""


def _admin(bootstrap, properties):
    from pylog.core.client.share_admin import ShareAdmin

    return ShareAdmin(client_props(bootstrap, properties, CONSUMER_CONFIGS))


def _s(v) -> str:
    return "-" if v is None or v == -1 else str(v)


@click.group("share-groups")
def share_groups():
    """List, describe, reset and delete share groups (KIP-932, queues).

    Works against any broker serving share groups (pylog's, Apache Kafka 4.2+)
    the way kafka-share-groups.sh does: describe shows each share-partition's
    start offset (every record before it is delivered to completion) and lag.
    """


def _list_share_groups(bootstrap, properties):
    with _admin(bootstrap, properties) as admin:
        return admin.list_share_groups()


list_ = add_list_command(share_groups, _list_share_groups, "share groups", "List the share groups with their state.",
                         "Empty, Stable", ("GROUP", "STATE"), lambda g: (g["group_id"], g["state"]))


def _describe_one(admin, gid, show_members, show_state):
    d = admin.describe_share_group(gid)
    res = {"group": gid, "state": d.state, "group_epoch": d.group_epoch, "assignment_epoch": d.assignment_epoch,
           "assignor": d.assignor, "coordinator": {"id": d.coordinator[0], "host": d.coordinator[1],
                                                   "port": d.coordinator[2]} if d.coordinator else None,
           "members": [{"member_id": m.member_id, "client_id": m.client_id, "host": m.client_host,
                        "member_epoch": m.member_epoch, "rack": m.rack,
                        "assignment": [{"topic": tp.topic, "partition": tp.partition} for tp in m.assignment]}
                       for m in d.members]}
    if not show_members and not show_state:
        offsets = admin.share_offsets(gid)
        res["offsets"] = [{"topic": tp.topic, "partition": tp.partition, "start_offset": so,
                           "lag": None if lag < 0 else lag} for tp, (so, lag) in sorted(offsets.items())]
    return res


@share_groups.command("describe")
@click.argument("group_ids", metavar="GROUP...", nargs=-1, required=True, shell_complete=group_names)
@bootstrap_option
@click.option("--members", "show_members", is_flag=True, help="List the members and their assignments.")
@click.option("--state", "show_state", is_flag=True, help="Show the group's state, epochs and coordinator.")
@properties_options
@json_option
def describe(group_ids, bootstrap, show_members, show_state, properties, as_json):
    """Start offset and lag of every share-partition of each GROUP (or its members, or its state).

    A GROUP that does not exist is reported and the exit code is 1.
    """
    results, missing = [], []
    with _admin(bootstrap, properties) as admin:
        for gid in group_ids:
            try:
                results.append(_describe_one(admin, gid, show_members, show_state))
            except PylogError as e:
                if getattr(e, "code", None) != ErrorCode.GROUP_ID_NOT_FOUND:
                    raise
                missing.append(gid)
                err.print(f"share group {gid} does not exist", style="red", markup=False)
    if as_json:
        emit_json(results)
    else:
        for r in results:
            _print_described(r, show_members, show_state)
    if missing:
        raise click.exceptions.Exit(1)


def _print_described(r, show_members, show_state):
    if show_state:
        c = r["coordinator"]
        print_table(("GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS"),
                    [(r["group"], f"{c['host']}:{c['port']} ({c['id']})" if c else "-", r["state"],
                      r["group_epoch"], r["assignment_epoch"], len(r["members"]))])
    if show_members:
        if not r["members"]:
            out.print(f"Share group '{r['group']}' has no active members.", markup=False)
        print_table(("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "MEMBER-EPOCH", "ASSIGNMENT"),
                    [(r["group"], m["member_id"], m["host"], m["client_id"], m["member_epoch"],
                      ",".join(f"{a['topic']}:{a['partition']}" for a in m["assignment"]) or "-")
                     for m in r["members"]])
    if "offsets" in r:
        if not r["offsets"]:
            out.print(f"Share group '{r['group']}' has no offset information.", markup=False)
            return
        print_table(("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"),
                    [(r["group"], o["topic"], o["partition"], _s(o["start_offset"]), _s(o["lag"]))
                     for o in r["offsets"]])


@share_groups.command("reset-offsets")
@click.argument("group_id", metavar="GROUP", shell_complete=group_names)
@bootstrap_option
@click.option("--topic", "-t", "topic_specs", multiple=True, required=True, metavar="TOPIC[:P,P...]",
              help="Reset this topic (optionally only these partitions); repeatable.")
@reset_target_options
@click.option("--dry-run/--execute", "dry_run", default=True, show_default=True,
              help="Only show the new start offsets, or set them.")
@properties_options
@json_option
def reset_offsets(group_id, bootstrap, topic_specs, how, to_offset, to_datetime, dry_run, properties, as_json):
    """Set the share-partition start offsets of GROUP (which must have no members).

    Exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime.
    Without --execute nothing is changed: the plan is printed.
    """
    mode = reset_mode(how, to_offset, to_datetime)
    with _admin(bootstrap, properties) as admin:
        require_empty(admin.describe_share_group, group_id, "share group", ShareGroupActiveError)
        new = new_offsets(admin, named_partitions(admin, topic_specs), mode, to_offset, to_datetime)
        if not dry_run:
            admin.alter_share_offsets(group_id, new)
    report_reset(group_id, new, dry_run, as_json, "set these start offsets")


@share_groups.command("delete-offsets")
@click.argument("group_id", metavar="GROUP", shell_complete=group_names)
@bootstrap_option
@click.option("--topic", "-t", "topics", multiple=True, required=True, metavar="TOPIC",
              help="Forget the group's state for this topic; repeatable.")
@properties_options
@json_option
def delete_offsets(group_id, bootstrap, topics, properties, as_json):
    """Forget GROUP's share-partition state of whole topics (the group must have no members)."""
    with _admin(bootstrap, properties) as admin:
        res = admin.delete_share_offsets(group_id, list(topics))
    if as_json:
        emit_json([{"topic": t, "deleted": c == ErrorCode.NONE, "error": None if not c else error_name(c)}
                   for t, c in res.items()])
    else:
        print_table(("TOPIC", "STATUS"), [(t, "Successful" if not c else error_name(c)) for t, c in res.items()])
    if any(res.values()):
        raise click.exceptions.Exit(1)


delete = add_delete_command(share_groups, _admin, "share group",
                            "Delete each share GROUP with its state (the group must have no members).")
