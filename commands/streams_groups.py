"""`pylog streams-groups list|describe|reset-offsets|delete-offsets|delete`: kafka-streams-groups for pylog."""
from __future__ import annotations

import click

from pylog.commands.client_common import client_props
from pylog.commands.completion import group_names
from pylog.commands.console import emit_json, err, out
from pylog.commands.group_output import add_delete_command, add_list_command, print_table, report_reset, \
    require_empty
from pylog.commands.offset_reset import named_partitions, new_offsets, parse_datetime, reset_mode, reset_target_options
from pylog.commands.options import bootstrap_option, json_option, properties_options
from pylog.core.config import CONSUMER_CONFIGS
from pylog.core.errors import ErrorCode, PylogError, error_name


class StreamsGroupActiveError(PylogError):
    """The streams group has members: its offsets can only change while it is empty."""


def _admin(bootstrap, properties):
    from pylog.core.client.streams_admin import StreamsAdmin

    return StreamsAdmin(client_props(bootstrap, properties, CONSUMER_CONFIGS))


@click.group("streams-groups")
def streams_groups():
    """List, describe, reset and delete streams groups (KIP-1071, Kafka Streams).

    Works against any broker serving streams groups (pylog's, Apache Kafka 4.1+)
    the way kafka-streams-groups.sh does: describe shows the committed offset
    and lag of each input partition, the members and their active, standby and
    warm-up tasks, or the group's state and epochs.
    """


def _list(bootstrap, properties):
    with _admin(bootstrap, properties) as admin:
        return admin.list_streams_groups()


list_ = add_list_command(streams_groups, _list, "streams groups", "List the streams groups with their state.",
                         "Empty, NotReady, Assigning, Reconciling, Stable", ("GROUP", "STATE"),
                         lambda g: (g["group_id"], g["state"]))


def _tasks_text(tasks: dict) -> str:
    """ACTIVE: 0:[0,1] 1:[0,1]; STANDBY: 1:[2,3] of {role: ["0_1", ...]}."""
    parts = []
    for role in ("active", "standby", "warmup"):
        by: dict = {}
        for t in tasks.get(role, ()):
            s, p = t.rsplit("_", 1)
            by.setdefault(s, []).append(int(p))
        if by:
            parts.append(f"{role.upper()}: " + " ".join(f"{s}:[{','.join(map(str, ps))}]" for s, ps in sorted(by.items())))
    return "; ".join(parts) or "-"


def _describe_one(admin, gid: str) -> dict:
    d = admin.describe_streams_group(gid)
    committed = admin.committed(gid)
    inputs = sorted({t for s in d.subtopologies for t in s["source_topics"]}
                    | {t["name"] for s in d.subtopologies for t in s["repartition_source_topics"]})
    tps = sorted(set(committed) | {tp for t in inputs for tp in _topic_partitions(admin, t)})
    ends = admin.list_offsets({tp: -1 for tp in tps}) if tps else {}
    offsets = []
    for tp in tps:
        cur, end = committed.get(tp, (None,))[0], ends.get(tp, -1)
        offsets.append({"topic": tp.topic, "partition": tp.partition, "current_offset": cur,
                        "log_end_offset": None if end < 0 else end,
                        "lag": None if end < 0 else end - (cur if cur is not None else 0)})
    c = d.coordinator
    return {"group": gid, "state": d.state, "group_epoch": d.group_epoch, "assignment_epoch": d.assignment_epoch,
            "topology_epoch": d.topology_epoch, "assignor": d.assignor,
            "coordinator": {"id": c[0], "host": c[1], "port": c[2]},
            "members": [{"member_id": m.member_id, "instance_id": m.instance_id, "process_id": m.process_id,
                         "client_id": m.client_id, "host": m.client_host, "member_epoch": m.member_epoch,
                         "topology_epoch": m.topology_epoch, "is_classic": m.is_classic,
                         "tasks": {r: [f"{s}_{p}" for s, p in ts] for r, ts in m.assignment.items()},
                         "target": {r: [f"{s}_{p}" for s, p in ts] for r, ts in m.target.items()}}
                        for m in d.members],
            "offsets": offsets}


def _topic_partitions(admin, topic: str) -> list:
    from pylog.core.client.group_admin import TopicPartition

    try:
        return [TopicPartition(topic, p) for p in admin.partitions(topic)]
    except PylogError:
        return []  # an internal topic not made yet


@streams_groups.command("describe")
@click.argument("group_ids", metavar="GROUP...", nargs=-1, required=True, shell_complete=group_names)
@bootstrap_option
@click.option("--members", "show_members", is_flag=True, help="List the members and their tasks.")
@click.option("--state", "show_state", is_flag=True, help="Show the group's state, epochs and coordinator.")
@properties_options
@json_option
def describe(group_ids, bootstrap, show_members, show_state, properties, as_json):
    """Committed offset and lag of each input partition of GROUP (or its members and tasks, or its state).

    A GROUP that does not exist is reported and the exit code is 1.
    """
    results, missing = [], []
    with _admin(bootstrap, properties) as admin:
        for gid in group_ids:
            try:
                results.append(_describe_one(admin, gid))
            except PylogError as e:
                if getattr(e, "code", None) != ErrorCode.GROUP_ID_NOT_FOUND:
                    raise
                missing.append(gid)
                err.print(f"streams group {gid} does not exist", style="red", markup=False)
    if as_json:
        emit_json(results)
    else:
        for r in results:
            _print_described(r, show_members, show_state)
    if missing:
        raise click.exceptions.Exit(1)


def _s(v) -> str:
    return "-" if v is None else str(v)


def _print_described(r, show_members, show_state):
    if show_state:
        c = r["coordinator"]
        print_table(("GROUP", "COORDINATOR (ID)", "ASSIGNOR", "STATE", "GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH",
                     "#MEMBERS"),
                    [(r["group"], f"{c['host']}:{c['port']} ({c['id']})", r["assignor"] or "-", r["state"],
                      r["group_epoch"], r["assignment_epoch"], len(r["members"]))])
    if show_members:
        if not r["members"]:
            out.print(f"Streams group '{r['group']}' has no active members.", markup=False)
            return
        print_table(("GROUP", "MEMBER", "PROCESS", "CLIENT-ID", "MEMBER-EPOCH", "ASSIGNMENTS", "TARGET-ASSIGNMENTS"),
                    [(r["group"], m["member_id"], m["process_id"], m["client_id"], m["member_epoch"],
                      _tasks_text(m["tasks"]), _tasks_text(m["target"])) for m in r["members"]])
    if not show_members and not show_state:
        if not r["offsets"]:
            out.print(f"Streams group '{r['group']}' has no offset information.", markup=False)
            return
        print_table(("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG"),
                    [(r["group"], o["topic"], o["partition"], _s(o["current_offset"]), _s(o["log_end_offset"]),
                      _s(o["lag"])) for o in r["offsets"]])


@streams_groups.command("reset-offsets")
@click.argument("group_id", metavar="GROUP", shell_complete=group_names)
@bootstrap_option
@click.option("--topic", "-t", "topic_specs", multiple=True, required=True, metavar="TOPIC[:P,P...]",
              help="Reset this input topic (optionally only these partitions); repeatable.")
@reset_target_options
@click.option("--dry-run/--execute", "dry_run", default=True, show_default=True,
              help="Only show the new offsets, or commit them.")
@properties_options
@json_option
def reset_offsets(group_id, bootstrap, topic_specs, how, to_offset, to_datetime, dry_run, properties, as_json):
    """Reset the committed offsets of GROUP (which must have no members).

    Exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime.
    Without --execute nothing is changed: the plan is printed.
    """
    mode = reset_mode(how, to_offset, to_datetime)
    if mode == "datetime":
        parse_datetime(to_datetime)
    with _admin(bootstrap, properties) as admin:
        require_empty(admin.describe_streams_group, group_id, "streams group", StreamsGroupActiveError)
        new = new_offsets(admin, named_partitions(admin, topic_specs), mode, to_offset, to_datetime)
        if not dry_run:
            admin.alter_offsets(group_id, new)
    report_reset(group_id, new, dry_run, as_json, "commit these offsets")


@streams_groups.command("delete-offsets")
@click.argument("group_id", metavar="GROUP", shell_complete=group_names)
@bootstrap_option
@click.option("--topic", "-t", "topic_specs", multiple=True, required=True, metavar="TOPIC[:P,P...]",
              help="Delete the committed offsets of this topic (optionally only these partitions); repeatable.")
@properties_options
@json_option
def delete_offsets(group_id, bootstrap, topic_specs, properties, as_json):
    """Delete GROUP's committed offsets of topics it does not read while it has members."""
    with _admin(bootstrap, properties) as admin:
        code, res = admin.delete_offsets(group_id, named_partitions(admin, topic_specs))
    if code:
        raise PylogError(f"streams group {group_id}: {error_name(code)}")
    if as_json:
        emit_json([{"topic": t, "partition": p, "deleted": c == ErrorCode.NONE, "error": None if not c else error_name(c)}
                   for (t, p), c in sorted(res.items())])
    else:
        print_table(("TOPIC", "PARTITION", "STATUS"),
                    [(t, p, "Successful" if not c else error_name(c)) for (t, p), c in sorted(res.items())])
    if any(res.values()):
        raise click.exceptions.Exit(1)


delete = add_delete_command(
    streams_groups, _admin, "streams group",
    "Delete each streams GROUP with its committed offsets (the group must have no members).", {
        ErrorCode.NON_EMPTY_GROUP: " is not empty: stop its Kafka Streams instances first (NON_EMPTY_GROUP)",
        ErrorCode.GROUP_ID_NOT_FOUND: " does not exist (GROUP_ID_NOT_FOUND)"})
