"""`pylog groups list|describe|reset-offsets|delete`: kafka-consumer-groups for pylog."""
from __future__ import annotations

import click

from pylog.commands.console import emit_json, err, out
from pylog.commands.completion import group_names
from pylog.commands.group_output import add_delete_command, add_list_command, print_table
from pylog.commands.offset_reset import named_partitions, new_offsets, parse_datetime
from pylog.commands.options import bootstrap_option, json_option, properties_options
from pylog.core.config import CONSUMER_CONFIGS
from pylog.core.errors import ErrorCode, PylogError, UsageError

from pylog.commands.client_common import client_props

# classic states, then KIP-848 consumer-group states with live members
ACTIVE_STATES = ("Stable", "PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")


class GroupActiveError(PylogError):
    """The group has live members: offsets can only be changed while it is empty."""


def _admin(bootstrap, properties):
    from pylog.core.client.group_admin import GroupAdmin

    return GroupAdmin(client_props(bootstrap, properties, CONSUMER_CONFIGS))


@click.group("groups")
def groups():
    """List, describe, reset and delete consumer groups.

    Works against any Kafka-protocol broker (pylog's, Apache Kafka, Redpanda...)
    the way kafka-consumer-groups.sh does: describe shows each partition's
    committed offset, log end offset and lag next to the member that owns it.
    """


def _list_groups(bootstrap, properties):
    with _admin(bootstrap, properties) as admin:
        return admin.list_groups()


list_ = add_list_command(
    groups, _list_groups, "consumer groups",
    "List the consumer groups with their protocol type, state and type (classic or consumer).",
    "Empty, Stable, PreparingRebalance, CompletingRebalance, Dead", ("GROUP", "STATE", "PROTOCOL-TYPE", "TYPE"),
    lambda g: (g["group_id"], g["state"], g["protocol_type"], g.get("type") or "-"))


def _offset_rows(admin, desc, committed):
    owner = {}
    for m in desc.members:
        for tp in m.assignment:
            owner[tp] = m
    tps = sorted(set(committed) | set(owner))
    ends = admin.list_offsets({tp: -1 for tp in tps}) if tps else {}
    rows = []
    for tp in tps:
        c = committed.get(tp)
        end = ends.get(tp, -1)
        m = owner.get(tp)
        rows.append({
            "topic": tp.topic, "partition": tp.partition,
            "current_offset": c[0] if c else None,
            "log_end_offset": end if end >= 0 else None,
            "lag": (end - c[0]) if c and end >= 0 else None,
            "consumer_id": m.member_id if m else None,
            "host": m.client_host if m else None,
            "client_id": m.client_id if m else None,
        })
    return rows


@groups.command("describe")
@click.argument("group_ids", metavar="GROUP...", nargs=-1, required=True, shell_complete=group_names)
@bootstrap_option
@click.option("--members", "show_members", is_flag=True,
              help="List the members (id, instance id, client, host, assignment) instead of the offsets.")
@click.option("--rate-window", type=click.FloatRange(min=0), default=1.0, show_default=True, metavar="SECONDS",
              help="Measure consumption and production rates over this window (two looks at the offsets) "
                   "to estimate when the group catches up; 0 skips it.")
@properties_options
@json_option
def describe(group_ids, bootstrap, show_members, rate_window, properties, as_json):
    """State, protocol, members and per-partition offsets of each GROUP.

    A KIP-848 group (type consumer) also shows its group epoch, the epoch
    of its target assignment and the server-side assignor; with --members,
    each member's epoch and its current next to its target assignment (they
    differ while the group reconciles).

    For every partition the group committed or is assigned: the committed
    offset (CURRENT-OFFSET), the partition's end (LOG-END-OFFSET), the LAG
    between them, the lag in time (TIME-LAG: now minus the timestamp of the
    next record to consume), the consumption rate over --rate-window, and the
    member that owns the partition now ("-" when none). A last line per group
    gives its total lag, rates and an estimate of when it catches up.
    A GROUP that does not exist is reported and the exit code is 1 (the other
    groups are still described).
    """
    import time

    from pylog.commands.group_lag import add_lag_figures, next_record_timestamps

    results = []
    with _admin(bootstrap, properties) as admin:
        first = {}
        if not show_members and rate_window > 0:
            for gid in group_ids:
                first[gid] = _offset_rows(admin, admin.describe_group(gid), admin.committed(gid))
            t0 = time.monotonic()
            time.sleep(rate_window)  # the measurement window itself
            window = time.monotonic() - t0
        for gid in group_ids:
            desc = admin.describe_group(gid)
            committed = admin.committed(gid)
            rows = _offset_rows(admin, desc, committed)
            totals = None
            if not show_members:
                stamps = next_record_timestamps(client_props(bootstrap, properties, CONSUMER_CONFIGS), rows)
                totals = add_lag_figures(first.get(gid, []), rows, window if gid in first else 0.0, stamps,
                                         int(time.time() * 1000))
            results.append((desc, rows, totals))
    if as_json:
        emit_json(_describe_json(results))
    missing = [d.group_id for d, _, _ in results if d.state == "Dead"]
    for i, (d, rows, totals) in enumerate([] if as_json else results):
        if i:
            out.print()
        coord = f"{d.coordinator[1]}:{d.coordinator[2]} (id: {d.coordinator[0]})" if d.coordinator else "-"
        out.print(f"GROUP {d.group_id}  state: {d.state}  protocol: {d.protocol_type or '-'}"
                  f"/{d.protocol or '-'}  members: {len(d.members)}  coordinator: {coord}", markup=False)
        if d.type == "consumer":
            out.print(f"type: consumer  group epoch: {d.group_epoch}  assignment epoch: {d.assignment_epoch}  "
                      f"assignor: {d.protocol or '-'}", markup=False, highlight=False)
        if d.state == "Dead":
            err.print(f"consumer group '{d.group_id}' does not exist", style="red", markup=False)
            continue
        if show_members and d.type == "consumer":
            # kafka-consumer-groups --describe --members --verbose's columns for a consumer group
            print_table(("CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "CURRENT-EPOCH",
                         "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT"),
                        [(m.member_id, m.group_instance_id or "-", m.client_host, m.client_id, len(m.assignment),
                          m.member_epoch, _tps_text(m.assignment), d.assignment_epoch,
                          _tps_text(m.target_assignment)) for m in d.members])
            continue
        if show_members:
            print_table(("CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"),
                        [(m.member_id, m.group_instance_id or "-", m.client_host, m.client_id, len(m.assignment),
                          ",".join(map(str, m.assignment)) or "-") for m in d.members])
            continue
        if not rows:
            err.print(f"consumer group '{d.group_id}' has no committed offsets and no assignment", style="dim",
                      markup=False)
            continue
        from pylog.commands.group_lag import human_duration, summary_line

        def s(v):
            return "-" if v is None else str(v)

        def rate(v):
            return "-" if v is None else f"{v:,.1f}"
        print_table(("TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "TIME-LAG", "RATE/S",
                     "CONSUMER-ID", "HOST", "CLIENT-ID"),
                    [(r["topic"], r["partition"], s(r["current_offset"]), s(r["log_end_offset"]), s(r["lag"]),
                      human_duration(r["lag_ms"]), rate(r["consume_rate"]), s(r["consumer_id"]), s(r["host"]),
                      s(r["client_id"])) for r in rows])
        out.print(summary_line(totals), markup=False, highlight=False)
    if missing:
        # kafka-consumer-groups prints an error for a group that does not exist; pylog also
        # says so in the exit code (1, a data error), as `groups delete` does
        raise click.exceptions.Exit(1)


def _describe_json(results) -> list[dict]:
    """`groups describe --json`: one object per group (its members, offsets and lag)."""
    return [{
        "group": d.group_id, "state": d.state, "protocol_type": d.protocol_type, "protocol": d.protocol,
        "type": d.type, "group_epoch": d.group_epoch, "assignment_epoch": d.assignment_epoch,
        "coordinator": {"node_id": d.coordinator[0], "host": d.coordinator[1], "port": d.coordinator[2]}
        if d.coordinator else None,
        "members": [{"member_id": m.member_id, "group_instance_id": m.group_instance_id,
                     "client_id": m.client_id, "host": m.client_host,
                     "assignment": _tps_json(m.assignment),
                     **({"member_epoch": m.member_epoch, "target_assignment": _tps_json(m.target_assignment),
                         "subscribed_topic_names": m.subscribed_topic_names,
                         "subscribed_topic_regex": m.subscribed_topic_regex, "rack": m.rack}
                        if d.type == "consumer" else {})}
                    for m in d.members],
        "offsets": rows,
        **({"lag": totals} if totals is not None else {}),
    } for d, rows, totals in results]


def _tps_json(tps):
    return None if tps is None else [{"topic": tp.topic, "partition": tp.partition} for tp in tps]


def _tps_text(tps) -> str:
    """topic:0,1;other:3 (kafka-consumer-groups' compact form)."""
    by: dict = {}
    for tp in tps or []:
        by.setdefault(tp.topic, []).append(tp.partition)
    return ";".join(f"{t}:{','.join(map(str, ps))}" for t, ps in by.items()) or "-"


@groups.command("reset-offsets")
@click.argument("group_id", metavar="GROUP", shell_complete=group_names)
@bootstrap_option
@click.option("--topic", "-t", "topic_specs", multiple=True, metavar="TOPIC[:P,P...]",
              help="Reset this topic (optionally only these partitions); repeatable.")
@click.option("--all-topics", is_flag=True, help="Reset every topic the group has committed offsets for.")
@click.option("--to-earliest", "how", flag_value="earliest", help="To each partition's log start offset.")
@click.option("--to-latest", "how", flag_value="latest", help="To each partition's log end offset.")
@click.option("--to-offset", type=click.IntRange(min=0), default=None, metavar="N",
              help="To offset N (clamped to the partition's start..end).")
@click.option("--to-datetime", default=None, metavar="T",
              help="To the first offset whose timestamp is at or after T (YYYY-MM-DDTHH:mm:SS.sss, local time "
                   "unless a zone is given, or epoch ms).")
@click.option("--shift-by", type=int, default=None, metavar="N",
              help="Move the committed offset by N (negative: back), clamped to start..end.")
@click.option("--dry-run/--execute", "dry_run", default=True, show_default=True,
              help="Only show the new offsets, or commit them.")
@properties_options
@json_option
def reset_offsets(group_id, bootstrap, topic_specs, all_topics, how, to_offset, to_datetime, shift_by, dry_run,
                  properties, as_json):
    """Reset the committed offsets of GROUP (which must have no active members).

    Exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime,
    --shift-by; the partitions come from --topic or --all-topics. Without
    --execute nothing is changed: the plan is printed.
    """
    modes = [m for m in (how, to_offset is not None and "offset", to_datetime is not None and "datetime",
                         shift_by is not None and "shift") if m]
    if len(modes) != 1:
        raise UsageError("give exactly one of --to-earliest, --to-latest, --to-offset, --to-datetime, --shift-by")
    if bool(topic_specs) == all_topics:
        raise UsageError("give either --topic (repeatable) or --all-topics")
    mode = modes[0]
    if mode == "datetime":
        parse_datetime(to_datetime)  # a bad date fails before anything is asked of the cluster
    with _admin(bootstrap, properties) as admin:
        desc = admin.describe_group(group_id)
        if desc.state in ACTIVE_STATES:
            raise GroupActiveError(
                f"assignments can only be reset if the group '{group_id}' is inactive, but the current state "
                f"is {desc.state} ({len(desc.members)} members)")
        committed = admin.committed(group_id)
        if all_topics:
            tps = sorted(committed)
            if not tps:
                raise UsageError(f"group '{group_id}' has no committed offsets; name the topics with --topic")
        else:
            tps = named_partitions(admin, topic_specs)

        def shifted(tp, end):
            cur = committed.get(tp, (None,))[0]
            return (cur if cur is not None else end) + shift_by

        new = new_offsets(admin, tps, mode, to_offset, to_datetime, shifted)
        if not dry_run:
            admin.alter_offsets(group_id, new)
    rows = [{"group": group_id, "topic": tp.topic, "partition": tp.partition,
             "previous_offset": committed.get(tp, (None,))[0], "new_offset": n} for tp, n in new.items()]
    if as_json:
        emit_json({"group": group_id, "executed": not dry_run, "offsets": rows})
        return
    print_table(("GROUP", "TOPIC", "PARTITION", "PREVIOUS-OFFSET", "NEW-OFFSET"),
                [(r["group"], r["topic"], r["partition"], "-" if r["previous_offset"] is None else r["previous_offset"],
                  r["new_offset"]) for r in rows])
    if dry_run:
        err.print("dry run: nothing changed (use --execute to commit these offsets)", style="yellow")


delete = add_delete_command(
    groups, _admin, "group", "Delete each GROUP and its committed offsets (the group must be empty).", {
        ErrorCode.NON_EMPTY_GROUP: " is not empty: stop its consumers first (NON_EMPTY_GROUP)",
        ErrorCode.GROUP_ID_NOT_FOUND: " does not exist (GROUP_ID_NOT_FOUND)"})
