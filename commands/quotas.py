"""`pylog quotas describe|alter`: client quotas (kafka-configs.sh --entity-type users/clients)."""
from __future__ import annotations

import click

from pylog.commands.client_common import client_props
from pylog.commands.console import emit_json, err, out
from pylog.commands.options import bootstrap_option, json_option, properties_options
from pylog.core.config import CONSUMER_CONFIGS, split_list
from pylog.core.errors import UsageError

KEYS = ("producer_byte_rate", "consumer_byte_rate", "request_percentage", "controller_mutation_rate")


def _admin(bootstrap, properties):
    from pylog.core.client.quota_admin import QuotaAdmin

    return QuotaAdmin(client_props(bootstrap, properties, CONSUMER_CONFIGS))


def entity_options(f):
    """--user/--user-default, --client-id/--client-default."""
    f = click.option("--client-default", is_flag=True, help="The default client-id entity.")(f)
    f = click.option("--client-id", default=None, metavar="ID", help="A client-id entity.")(f)
    f = click.option("--user-default", is_flag=True, help="The default user entity.")(f)
    f = click.option("--user", default=None, metavar="NAME", help="A user entity (the principal's name).")(f)
    return f


def _entity(user, user_default, client_id, client_default) -> list[tuple[str, str | None]]:
    if user is not None and user_default:
        raise UsageError("--user and --user-default exclude each other")
    if client_id is not None and client_default:
        raise UsageError("--client-id and --client-default exclude each other")
    ent = []
    if user is not None or user_default:
        ent.append(("user", user))
    if client_id is not None or client_default:
        ent.append(("client-id", client_id))
    return ent


def _show(entity) -> str:
    return " ".join(f"{t}={'<default>' if n is None else n}" for t, n in entity)


def _parse_add(text: str | None) -> dict[str, float]:
    out = {}
    for item in split_list(text):
        key, sep, value = item.partition("=")
        if not sep:
            raise UsageError(f"--add-config: {item!r} is not KEY=VALUE")
        if key not in KEYS:
            raise UsageError(f"--add-config: unknown quota {key!r} (one of {', '.join(KEYS)})")
        try:
            out[key] = float(value)
        except ValueError:
            raise UsageError(f"--add-config: {key}={value!r} is not a number") from None
    return out


@click.group("quotas")
def quotas():
    """Describe and alter client quotas (kafka-configs.sh --entity-type users/clients).

    Quotas are producer_byte_rate and consumer_byte_rate (bytes per second),
    request_percentage (percent of one request-handler thread) and
    controller_mutation_rate (partitions created, added or deleted per second), set on a
    user, a client-id, or both, or on their default entities. The broker
    applies the most specific configured entity, as Kafka does, and answers a
    client over its quota with throttle_time_ms. Needs ALTER_CONFIGS (alter)
    or DESCRIBE_CONFIGS (describe) on the cluster when the broker has an
    authorizer.
    """


@quotas.command("describe")
@bootstrap_option
@entity_options
@properties_options
@json_option
def describe(bootstrap, user, user_default, client_id, client_default, properties, as_json):
    """Show the quotas of the entities matching the options (all entities without any).

    \b
    Examples:
      pylog quotas describe
      pylog quotas describe --user alice
      pylog quotas describe --client-default --json
    """
    comps = []
    for etype, name, default in (("user", user, user_default), ("client-id", client_id, client_default)):
        if name is not None and default:
            raise UsageError(f"--{etype} and --{'user' if etype == 'user' else 'client'}-default exclude each other")
        if name is not None:
            comps.append((etype, 0, name))
        elif default:
            comps.append((etype, 1, None))
    with _admin(bootstrap, properties) as admin:
        found = admin.describe(comps)
    found.sort(key=lambda e: [(t, n or "") for t, n in e[0]])
    if as_json:
        emit_json([{"entity": [{"entity_type": t, "entity_name": n} for t, n in ent], "quotas": vals}
                   for ent, vals in found])
        return
    if not found:
        err.print("no client quotas", style="dim")
        return
    for ent, vals in found:
        shown = ", ".join(f"{k}={v:g}" for k, v in sorted(vals.items()))
        out.print(f"Quota configs for {_show(ent)} are {shown}", markup=False)


@quotas.command("alter")
@bootstrap_option
@entity_options
@click.option("--add-config", "add", default=None, metavar="KEY=VALUE[,KEY=VALUE]",
              help="Quotas to set, e.g. producer_byte_rate=1048576,consumer_byte_rate=2097152.")
@click.option("--delete-config", "delete", default=None, metavar="KEY[,KEY]", help="Quotas to remove.")
@click.option("--validate-only", is_flag=True, help="Ask the broker to check the change without making it.")
@properties_options
@json_option
def alter(bootstrap, user, user_default, client_id, client_default, add, delete, validate_only, properties,
          as_json):
    """Set or remove quotas of one entity (a user, a client-id, both, or a default).

    \b
    Examples:
      pylog quotas alter --user alice --add-config producer_byte_rate=1048576
      pylog quotas alter --client-default --add-config consumer_byte_rate=2097152,request_percentage=50
      pylog quotas alter --user alice --client-id app --delete-config producer_byte_rate
    """
    ent = _entity(user, user_default, client_id, client_default)
    if not ent:
        raise UsageError("name an entity: --user/--user-default and/or --client-id/--client-default")
    values = _parse_add(add)
    removed = split_list(delete)
    for k in removed:
        if k not in KEYS:
            raise UsageError(f"--delete-config: unknown quota {k!r} (one of {', '.join(KEYS)})")
    if not values and not removed:
        raise UsageError("nothing to change: give --add-config and/or --delete-config")
    with _admin(bootstrap, properties) as admin:
        admin.alter(ent, values, removed, validate_only)
    if as_json:
        emit_json({"entity": [{"entity_type": t, "entity_name": n} for t, n in ent], "set": values,
                   "removed": removed, "validate_only": validate_only})
    else:
        verb = "Validated" if validate_only else "Completed"
        out.print(f"{verb} updating quotas for {_show(ent)}", markup=False)
