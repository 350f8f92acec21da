"""`pylog broker status`: a running broker's /ready answer as a table or JSON."""
from __future__ import annotations

import json
import sys
from http import HTTPStatus

import click

from pylog.commands.broker_admin_client import admin_url_from, request_json
from pylog.commands.console import print_table
from pylog.core.errors import DataError

def fetch_status(url: str, timeout: float) -> dict:
    """GET URL/ready; the JSON body whether the broker is ready (200) or not (503)."""
    def not_ready_answers(where, e):
        if e.code != HTTPStatus.SERVICE_UNAVAILABLE:
            raise DataError(f"{where}: HTTP {e.code} {e.reason}") from None
        return e.read()

    return request_json(url, "/ready", timeout, not_ready_answers)


def show_status(url: str | None, config_file: str | None, timeout: float, as_json: bool) -> None:
    """Print the status; exit 1 when the broker is not ready."""
    snap = fetch_status(admin_url_from(url, config_file), timeout)
    if as_json:
        click.echo(json.dumps(snap, indent=2))
    else:
        _print_table(snap)
    if not snap.get("ready"):
        sys.exit(1)  # SystemExit: click's non-standalone mode would swallow ctx.exit(1)


def _print_table(snap: dict) -> None:
    from rich.markup import escape

    state = "ready" if snap["ready"] else ("live, not ready: " + "; ".join(snap["reasons"]))
    rows = [("node", f"{snap['node_id']} (cluster {snap['cluster_id'] or '-'})"),
            ("state", state),
            ("uptime", f"{snap['uptime_s']:.0f} s")]
    for x in snap["listeners"]:
        rows.append((f"listener {x['name']}", f"{x['host']}:{x['port']} {'up' if x['up'] else 'down'}, "
                                              f"{x['connections']} connections"))
    for d in snap["log_dirs"]:
        free = "-" if d["free_bytes"] is None else f"{d['free_bytes'] / 1048576:.0f} MiB free"
        rows.append(("log dir", f"{d['path']} {'online' if d['online'] else 'OFFLINE'}, {free}"))
    rows.append(("topics", f"{snap['topics']} ({snap['partitions']} partitions), {snap['groups']} groups"))
    tot = snap["totals"]
    rows.append(("requests", str(tot["requests"])))
    rows.append(("messages in", f"{tot['messages_in']} ({tot['bytes_in']} bytes); bytes out {tot['bytes_out']}"))
    rows.append(("connections", f"{tot['connections_accepted']} accepted, {tot['connections_rejected']} rejected"))
    # a log dir's path whole, piped or on a terminal (folded there, never cut)
    print_table([("", "left"), ("", "left")], [(k, escape(v)) for k, v in rows], header=False)
