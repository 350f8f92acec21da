"""`pylog topics create|list|describe|delete|alter-config`."""
from __future__ import annotations

import click
from pylog.commands.console import emit_json, err, out, plural, print_table
from pylog.commands.completion import topic_names
from pylog.commands.options import bootstrap_option, json_option, properties_options, topic_argument
from pylog.core.config import CONSUMER_CONFIGS, TOPIC_CONFIGS
from pylog.core.errors import TopicAlreadyExistsError, UnknownTopicOrPartitionError, UsageError

from pylog.commands.client_common import client_props


def _admin(bootstrap, properties):
    from pylog.core.client import Admin

    # topic commands accept the client properties common to all clients
    return Admin(client_props(bootstrap, properties, CONSUMER_CONFIGS))


def _kv(items, flag) -> dict:
    outd = {}
    for item in items:
        k, sep, v = item.partition("=")
        if not sep or not k.strip():
            raise UsageError(f"{flag} {item!r}: expected KEY=VALUE")
        k = k.strip()
        if k not in TOPIC_CONFIGS:
            raise UsageError(f"{flag} {item!r}: unknown topic config {k!r}")
        try:
            TOPIC_CONFIGS[k].parse(v)
        except Exception as e:
            raise UsageError(f"{flag} {item!r}: {e}") from None
        outd[k] = v
    return outd


@click.group("topics")
def topics():
    """Create, list, describe, delete topics and change their configs."""


@topics.command("create")
@topic_argument("name")
@bootstrap_option
@click.option("--partitions", "-p", type=click.IntRange(min=1), default=1, show_default=True,
              help="Number of partitions.")
@click.option("--replication-factor", "-r", type=click.IntRange(min=1), default=1, show_default=True,
              help="Replicas per partition.")
@click.option("--config", "--topic-config", "-c", "topic_configs", multiple=True, metavar="KEY=VALUE",
              help="Topic config such as retention.ms=60000 (repeatable), as kafka-topics.sh --config.")
@click.option("--if-not-exists", is_flag=True, help="Succeed when the topic already exists.")
@properties_options(config_alias=False)
@json_option
def create(name, bootstrap, partitions, replication_factor, topic_configs, if_not_exists, properties, as_json):
    """Create topic NAME."""
    configs = _kv(topic_configs, "--config")
    with _admin(bootstrap, properties) as admin:
        try:
            r = admin.create_topic(name, partitions, replication_factor, configs)
            created = True
        except TopicAlreadyExistsError:
            if not if_not_exists:
                raise
            created = False
            r = {}
    if as_json:
        emit_json({"topic": name, "created": created, "partitions": r.get("num_partitions", partitions),
                   "replication_factor": r.get("replication_factor", replication_factor), "configs": configs})
    else:
        out.print(f"created topic {name} ({plural(partitions, 'partition')})" if created else f"topic {name} already exists")


@topics.command("list")
@bootstrap_option
@click.option("--internal", is_flag=True, help="Include internal topics (__consumer_offsets...).")
@properties_options
@json_option
def list_(bootstrap, internal, properties, as_json):
    """List topics with their partition counts."""
    with _admin(bootstrap, properties) as admin:
        ts = admin.list_topics(include_internal=internal)
    if as_json:
        emit_json([{"topic": n, "partitions": len(t.partitions), "internal": t.internal,
                    "topic_id": str(t.topic_id)} for n, t in ts.items()])
        return
    rows = []
    for n, t in ts.items():
        rf = max((len(p.replicas) for p in t.partitions.values()), default=0)
        rows.append((n, len(t.partitions), rf))
    print_table([("topic", "left"), ("partitions", "right"), ("replication", "right")], rows)


@topics.command("describe")
@topic_argument("name", shell_complete=topic_names)
@bootstrap_option
@click.option("--no-offsets", is_flag=True, help="Skip the per-partition start/end offsets.")
@click.option("--all-configs", is_flag=True, help="Show every config, not only those set on the topic.")
@properties_options
@json_option
def describe(name, bootstrap, no_offsets, all_configs, properties, as_json):
    """Partitions (leader, replicas, ISR, start/end offsets) and configs of topic NAME."""
    with _admin(bootstrap, properties) as admin:
        t = admin.describe_topic(name)
        parts = sorted(t.partitions)
        start, end = ({}, {}) if no_offsets else admin.offsets(name, parts)
        try:
            configs = admin.describe_configs(name)
        except Exception as e:  # brokers without DescribeConfigs still describe partitions
            err.print(f"configs unavailable: {e}", style="yellow", markup=False)
            configs = []
    shown = configs if all_configs else [c for c in configs if c["source"] not in ("DEFAULT_CONFIG",)]
    if as_json:
        emit_json({
            "topic": name, "topic_id": str(t.topic_id), "internal": t.internal,
            "partitions": [{
                "partition": p, "leader": t.partitions[p].leader, "leader_epoch": t.partitions[p].leader_epoch,
                "replicas": t.partitions[p].replicas, "isr": t.partitions[p].isr,
                **({} if no_offsets else {"start_offset": start.get(p), "end_offset": end.get(p)}),
            } for p in parts],
            "configs": {c["name"]: c["value"] for c in shown},
        })
        return
    out.print(f"[bold]{name}[/]  id {t.topic_id}  {plural(len(parts), 'partition')}")
    heads = ["partition", "leader", "epoch", "replicas", "isr", *(() if no_offsets else ("start", "end", "records"))]
    rows = []
    for p in parts:
        pi = t.partitions[p]
        row = [str(p), str(pi.leader), str(pi.leader_epoch), ",".join(map(str, pi.replicas)),
               ",".join(map(str, pi.isr))]
        if not no_offsets:
            s, e = start.get(p), end.get(p)
            row += [str(s), str(e), str(e - s) if s is not None and e is not None else "?"]
        rows.append(row)
    print_table([(h, "left" if h in ("replicas", "isr") else "right") for h in heads], rows)
    if shown:
        print_table([("config", "left"), ("value", "left"), ("source", "left")],
                    [(c["name"], "*****" if c["sensitive"] else str(c["value"]), c["source"]) for c in shown])


@topics.command("delete")
@topic_argument("name", shell_complete=topic_names)
@bootstrap_option
@click.option("--if-exists", is_flag=True, help="Succeed when the topic does not exist.")
@properties_options
@json_option
def delete(name, bootstrap, if_exists, properties, as_json):
    """Delete topic NAME."""
    with _admin(bootstrap, properties) as admin:
        try:
            admin.delete_topic(name)
            deleted = True
        except UnknownTopicOrPartitionError:
            if not if_exists:
                raise
            deleted = False
    if as_json:
        emit_json({"topic": name, "deleted": deleted})
    else:
        out.print(f"deleted topic {name}" if deleted else f"topic {name} does not exist")


@topics.command("alter-config")
@topic_argument("name", shell_complete=topic_names)
@bootstrap_option
@click.option("--config", "--set", "--add-config", "set_items", multiple=True, metavar="KEY=VALUE",
              help="Set a topic config (repeatable).")
@click.option("--delete-config", "--delete", "delete_keys", multiple=True, metavar="KEY",
              help="Remove a topic config override, back to the default (repeatable).")
@properties_options(config_alias=False)
@json_option
def alter_config(name, bootstrap, set_items, delete_keys, properties, as_json):
    """Change configs of topic NAME."""
    if not set_items and not delete_keys:
        raise UsageError("nothing to change: give --config KEY=VALUE and/or --delete-config KEY")
    sets = _kv(set_items, "--config")
    for k in delete_keys:
        if k not in TOPIC_CONFIGS:
            raise UsageError(f"--delete-config {k!r}: unknown topic config")
    with _admin(bootstrap, properties) as admin:
        admin.alter_configs(name, sets, delete_keys)
    if as_json:
        emit_json({"topic": name, "set": sets, "deleted": list(delete_keys)})
    else:
        out.print(f"updated configs of {name}: " + ", ".join([f"{k}={v}" for k, v in sets.items()] +
                                                            [f"-{k}" for k in delete_keys]))
