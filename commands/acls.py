"""`pylog acls add|list|remove`: kafka-acls.sh for pylog and any Kafka-protocol broker."""
from __future__ import annotations

import click

from pylog.commands.client_common import client_props
from pylog.commands.console import emit_json, err, out
from pylog.commands.options import bootstrap_option, json_option, properties_options
from pylog.core.config import CONSUMER_CONFIGS
from pylog.core.errors import UsageError
from pylog.core.security.acl import (
    CLUSTER_NAME,
    AclBinding,
    AclFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    parse_enum,
)

OPERATIONS = [o.name for o in AclOperation if o not in (AclOperation.UNKNOWN, AclOperation.ANY)]


def _admin(bootstrap, properties):
    from pylog.core.client.security_admin import SecurityAdmin

    return SecurityAdmin(client_props(bootstrap, properties, CONSUMER_CONFIGS))


def resource_options(f):
    f = click.option("--transactional-id", "txn_ids", multiple=True, metavar="ID",
                     help="A transactional id resource (repeatable).")(f)
    f = click.option("--cluster", is_flag=True, help="The cluster resource (kafka-cluster).")(f)
    f = click.option("--group", "groups", multiple=True, metavar="GROUP", help="A group resource (repeatable).")(f)
    f = click.option("--topic", "topics", multiple=True, metavar="TOPIC",
                     help="A topic resource (repeatable; '*' for all topics).")(f)
    return f


def _resources(topics, groups, cluster, txn_ids) -> list[tuple[ResourceType, str]]:
    res = [(ResourceType.TOPIC, t) for t in topics] + [(ResourceType.GROUP, g) for g in groups]
    res += [(ResourceType.TRANSACTIONAL_ID, t) for t in txn_ids]
    if cluster:
        res.append((ResourceType.CLUSTER, CLUSTER_NAME))
    return res


def _enum(cls, text, what):
    try:
        return parse_enum(cls, text)
    except ValueError as e:
        raise UsageError(f"{what}: {e}") from None


def _rows(bindings):
    return [{"resource_type": b.resource_type.name, "resource_name": b.resource_name,
             "pattern_type": b.pattern_type.name, "principal": b.principal, "host": b.host,
             "operation": b.operation.name, "permission": b.permission.name} for b in bindings]


def _print(bindings, as_json, empty):
    rows = _rows(bindings)
    if as_json:
        emit_json(rows)
        return
    if not rows:
        err.print(empty, style="dim")
        return
    cols = ("RESOURCE", "PATTERN", "PRINCIPAL", "HOST", "OPERATION", "PERMISSION")
    table = [cols] + [(f"{r['resource_type']}:{r['resource_name']}", r["pattern_type"], r["principal"], r["host"],
                       r["operation"], r["permission"]) for r in rows]
    widths = [max(len(str(t[i])) for t in table) for i in range(len(cols))]
    for t in table:
        out.print("  ".join(str(c).ljust(w) for c, w in zip(t, widths)).rstrip(), markup=False, highlight=False)


@click.group("acls")
def acls():
    """Add, list and remove ACLs (kafka-acls.sh).

    Talks CreateAcls/DescribeAcls/DeleteAcls to the broker, which needs an
    authorizer (authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer)
    and a principal allowed ALTER (add, remove) or DESCRIBE (list) on the
    cluster. Security settings come with -X, e.g.
    -X security.protocol=SASL_SSL -X sasl.mechanism=SCRAM-SHA-512.
    """


@acls.command("add")
@bootstrap_option
@click.option("--allow-principal", "allow", multiple=True, metavar="PRINCIPAL",
              help="Principal granted the operations, e.g. User:alice or User:* (repeatable).")
@click.option("--deny-principal", "deny", multiple=True, metavar="PRINCIPAL",
              help="Principal refused the operations; a DENY wins over any ALLOW (repeatable).")
@click.option("--operation", "operations", multiple=True, metavar="OPERATION",
              help=f"Operation (repeatable): {', '.join(OPERATIONS)}.")
@click.option("--host", default="*", show_default=True, help="Client host the ACLs apply to.")
@resource_options
@click.option("--resource-pattern-type", "pattern", default="literal", show_default=True,
              type=click.Choice(["literal", "prefixed"], case_sensitive=False),
              help="literal: the exact name ('*' matches all); prefixed: every name starting with it.")
@properties_options
@json_option
def add(bootstrap, allow, deny, operations, host, topics, groups, cluster, txn_ids, pattern, properties, as_json):
    """Create ACLs: each principal x operation x resource.

    \b
    Examples:
      pylog acls add --allow-principal User:alice --operation Write --operation Describe --topic orders
      pylog acls add --allow-principal User:bob --operation Read --topic logs- --resource-pattern-type prefixed
      pylog acls add --deny-principal User:mallory --operation All --topic '*'
    """
    resources = _resources(topics, groups, cluster, txn_ids)
    if not resources:
        raise UsageError("name a resource: --topic, --group, --cluster or --transactional-id")
    if not allow and not deny:
        raise UsageError("name a principal: --allow-principal or --deny-principal")
    if not operations:
        raise UsageError("name an operation with --operation")
    ops = [_enum(AclOperation, o, "--operation") for o in operations]
    ptype = _enum(PatternType, pattern, "--resource-pattern-type")
    bindings = [AclBinding(rt, name, ptype, who, host, op, perm)
                for perm, whos in ((AclPermissionType.ALLOW, allow), (AclPermissionType.DENY, deny))
                for who in whos for rt, name in resources for op in ops]
    for b in bindings:
        why = b.validate()
        if why:
            raise UsageError(f"invalid ACL {b.principal} {b.operation.name} on {b.resource_type.name} "
                             f"{b.resource_name}: {why}")
    with _admin(bootstrap, properties) as admin:
        admin.create_acls(bindings)
    if as_json:
        emit_json(_rows(bindings))
    else:
        out.print(f"added {len(bindings)} ACL{'s' if len(bindings) != 1 else ''}", markup=False)


def _filters(topics, groups, cluster, txn_ids, pattern, principal, host, operation, permission):
    ptype = _enum(PatternType, pattern, "--resource-pattern-type")
    op = _enum(AclOperation, operation, "--operation") if operation else AclOperation.ANY
    perm = _enum(AclPermissionType, permission, "--permission") if permission else AclPermissionType.ANY
    resources = _resources(topics, groups, cluster, txn_ids) or [(ResourceType.ANY, None)]
    return [AclFilter(rt, name, ptype, principal, host, op, perm) for rt, name in resources]


def filter_options(pattern_default: str, pattern_help: str):
    """The options _filters takes: principal, host, operation, permission and the pattern type."""
    def add(f):
        f = click.option("--resource-pattern-type", "pattern", default=pattern_default, show_default=True,
                         type=click.Choice(["any", "match", "literal", "prefixed"], case_sensitive=False),
                         help=pattern_help)(f)
        f = click.option("--permission", type=click.Choice(["allow", "deny"], case_sensitive=False),
                         default=None, help="Only ALLOW or only DENY entries.")(f)
        f = click.option("--operation", default=None, metavar="OPERATION", help="Only this operation.")(f)
        f = click.option("--host", default=None, help="Only entries for this host.")(f)
        f = click.option("--principal", default=None, metavar="PRINCIPAL", help="Only this principal's entries.")(f)
        return f
    return add


@acls.command("list")
@bootstrap_option
@resource_options
@filter_options("any", "match: every ACL that applies to the named resource (literal, '*' and prefixes).")
@properties_options
@json_option
def list_(bootstrap, topics, groups, cluster, txn_ids, principal, host, operation, permission, pattern,
          properties, as_json):
    """List ACLs, optionally only those of a resource, principal or operation."""
    filters = _filters(topics, groups, cluster, txn_ids, pattern, principal, host, operation, permission)
    seen, found = set(), []
    with _admin(bootstrap, properties) as admin:
        for f in filters:
            for b in admin.describe_acls(f):
                if b not in seen:
                    seen.add(b)
                    found.append(b)
    _print(found, as_json, "no ACLs")


@acls.command("remove")
@bootstrap_option
@resource_options
@filter_options("literal", "Which pattern type of ACL to remove.")
@click.option("--all", "remove_all", is_flag=True, help="Allow removing every ACL when no resource is named.")
@properties_options
@json_option
def remove(bootstrap, topics, groups, cluster, txn_ids, principal, host, operation, permission, pattern,
           remove_all, properties, as_json):
    """Remove the ACLs matching the filters and print what was removed."""
    if not (topics or groups or cluster or txn_ids) and not remove_all:
        raise UsageError("name a resource (--topic, --group, --cluster, --transactional-id) or pass --all")
    filters = _filters(topics, groups, cluster, txn_ids, pattern, principal, host, operation, permission)
    with _admin(bootstrap, properties) as admin:
        removed = admin.delete_acls(filters)
    if as_json:
        emit_json(_rows(removed))
    else:
        _print(removed, False, "no ACL matched")
        if removed:
            out.print(f"removed {len(removed)} ACL{'s' if len(removed) != 1 else ''}", markup=False)
