"""`pylog users add|list|remove`: SCRAM credentials (kafka-configs.sh --entity-type users)."""
from __future__ import annotations

import click

from pylog.commands.client_common import client_props
from pylog.commands.console import emit_json, err, out
from pylog.commands.options import bootstrap_option, json_option, properties_options
from pylog.core.config import CONSUMER_CONFIGS
from pylog.core.security import scram

MECHS = list(scram.MECHANISMS)


def _admin(bootstrap, properties):
    from pylog.core.client.security_admin import SecurityAdmin

    return SecurityAdmin(client_props(bootstrap, properties, CONSUMER_CONFIGS))


@click.group("users")
def users():
    """Add, list and remove SCRAM users (kafka-configs.sh --entity-type users).

    Uses AlterUserScramCredentials and DescribeUserScramCredentials: the
    password is salted and hashed on this side, the broker stores what Kafka
    stores (salt, StoredKey, ServerKey, iterations). Needs ALTER (add, remove)
    or DESCRIBE (list) on the cluster when the broker has an authorizer.
    """


@users.command("add")
@bootstrap_option
@click.argument("name")
@click.option("--mechanism", "mechanisms", multiple=True, type=click.Choice(MECHS, case_sensitive=False),
              help="SCRAM mechanism (repeatable). Default: both.")
@click.option("--password", prompt=True, hide_input=True, confirmation_prompt=True, envvar="PYLOG_USER_PASSWORD",
              help="The user's password (prompted for when not given; env PYLOG_USER_PASSWORD).")
@click.option("--iterations", type=click.IntRange(4096, 16384), default=scram.DEFAULT_ITERATIONS, show_default=True,
              help="PBKDF2 iterations.")
@properties_options
@json_option
def add(bootstrap, name, mechanisms, password, iterations, properties, as_json):
    """Create or replace NAME's SCRAM credentials.

    \b
    Examples:
      pylog users add alice --mechanism SCRAM-SHA-512 --password alice-secret
      pylog users add svc --iterations 8192 -X security.protocol=SASL_SSL ...
    """
    mechs = [m.upper() for m in mechanisms] or MECHS
    with _admin(bootstrap, properties) as admin:
        for m in mechs:
            admin.upsert_user(name, m, password, iterations)
    if as_json:
        emit_json({"user": name, "credentials": [{"mechanism": m, "iterations": iterations} for m in mechs]})
    else:
        out.print(f"user {name}: {', '.join(mechs)} ({iterations} iterations)", markup=False)


@users.command("list")
@bootstrap_option
@click.argument("names", nargs=-1)
@properties_options
@json_option
def list_(bootstrap, names, properties, as_json):
    """List SCRAM users and their mechanisms (all users, or NAMES)."""
    with _admin(bootstrap, properties) as admin:
        found = admin.describe_users(list(names) or None)
    if as_json:
        emit_json([{"user": u, "credentials": [{"mechanism": m, "iterations": i} for m, i in creds]}
                   for u, creds in sorted(found.items())])
        return
    if not found:
        err.print("no SCRAM users", style="dim")
        return
    for u, creds in sorted(found.items()):
        out.print(f"{u}  " + ", ".join(f"{m} (iterations={i})" for m, i in creds), markup=False)


@users.command("remove")
@bootstrap_option
@click.argument("name")
@click.option("--mechanism", "mechanisms", multiple=True, type=click.Choice(MECHS, case_sensitive=False),
              help="Remove only this mechanism's credential (repeatable). Default: every one the user has.")
@properties_options
@json_option
def remove(bootstrap, name, mechanisms, properties, as_json):
    """Remove NAME's SCRAM credentials."""
    with _admin(bootstrap, properties) as admin:
        mechs = [m.upper() for m in mechanisms] or [m for m, _ in admin.describe_users([name]).get(name, [])]
        for m in mechs:
            admin.delete_user(name, m)
    if as_json:
        emit_json({"user": name, "removed": mechs})
    else:
        out.print(f"user {name}: removed {', '.join(mechs)}", markup=False)
