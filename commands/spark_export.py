"""Click command `pylog spark-export`."""
from __future__ import annotations

import time

import click

from pylog.commands.options import json_option, merge_properties, properties_options
from pylog.commands.registry_options import make_client, registry_options
from pylog.commands.spark_jobs import finish_session, progress_factory, run_info, say, spark_job, spark_options
from pylog.core.errors import UsageError


@click.command("spark-export")
@click.argument("topics", nargs=-1, required=True, metavar="TOPIC...")
@click.option("--from-dir", "from_dir", default=None, type=click.Path(file_okay=False), metavar="DIR",
              help="Read the topics' segments straight from this Kafka log dir (pylog's or Apache Kafka's), "
                   "reachable at the same path from every executor.")
@click.option("--bootstrap-server", "-b", "bootstrap", default=None, metavar="SERVERS",
              help="Read the topics through this Kafka-protocol cluster (pylog or Apache Kafka): the executors "
                   "fetch offset ranges from the partition leaders.")
@click.option("--format", "fmt", type=click.Choice(["parquet", "delta", "iceberg"]), default="parquet",
              show_default=True, help="Table format.")
@click.option("--output", "-o", default=None, type=click.Path(file_okay=False), metavar="PATH",
              help="The table's folder (iceberg: its warehouse, with a SQLite catalog PATH/catalog.db).")
@click.option("--catalog", "catalog_props", multiple=True, metavar="KEY=VALUE",
              help="iceberg: pyiceberg catalog properties (type=sql, uri=..., warehouse=...), repeatable.")
@click.option("--table", default=None, metavar="NAMESPACE.TABLE",
              help="iceberg: the table in the catalog (default pylog.export).")
@click.option("--isolation", type=click.Choice(["read_committed", "read_uncommitted"]), default="read_committed",
              show_default=True, help="Kafka's isolation.level: read_committed drops aborted transactions and "
                                      "stops at the last stable offset.")
@click.option("--compacted", is_flag=True,
              help="Only the latest record per key, tombstones removed (what compaction keeps); a snapshot "
                   "into a new table.")
@click.option("--from", "from_", default=None, metavar="OFFSET|TIME",
              help="Start at this offset, or at the first offset whose timestamp is at or after TIME "
                   "(ISO-8601 or @EPOCH_MS), found through the time index.")
@click.option("--until", default=None, metavar="OFFSET|TIME", help="Stop before this offset or time.")
@click.option("--partition-by", default=None, metavar="COL[,COL...]",
              help="Partition the table by these columns: topic, partition, date (of the timestamp), ...")
@click.option("--value-format", type=click.Choice(["bytes", "utf8", "json", "registry"]), default="bytes",
              show_default=True,
              help="How the value column is written: the bytes, UTF-8 text, parsed JSON, or JSON text decoded "
                   "from the schema registry's wire format (Avro, Protobuf, JSON Schema; --schema-registry).")
@click.option("--key-format", type=click.Choice(["bytes", "utf8"]), default="bytes", show_default=True,
              help="How the key column is written.")
@click.option("--value-schema", default=None, metavar="DDL",
              help="--value-format json: the values' schema as Spark DDL (default: inferred from a value).")
@properties_options(config_alias=False)
@registry_options
@spark_options
@json_option
def spark_export(topics, from_dir, bootstrap, fmt, output, catalog_props, table, isolation, compacted, from_, until,
                 partition_by, value_format, key_format, value_schema, properties, registry_url, registry_auth,
                 settings, as_json):
    """Export Kafka topics into a Parquet, Delta Lake or Apache Iceberg table with Spark.

    Reads TOPIC... from a Kafka log dir (--from-dir: the segments are read by
    the executors, no broker involved) or through a cluster (-b: the
    executors fetch offset ranges with pylog's Kafka client; -X sets client
    properties such as security.protocol) with Kafka's read semantics: control
    records never appear, --isolation read_committed (the default) drops
    aborted transactions and stops at the last stable offset, --compacted
    keeps what log compaction would. Columns: topic, partition, offset,
    timestamp, timestampType, key, value, headers, leaderEpoch.

    Exactly once and incremental: the offsets exported per partition are kept
    in the table's own commit metadata (Delta commit info, Iceberg snapshot
    summary, pylog's commit log beside a Parquet folder), so a rerun appends
    only what is new, and a run that fails or is killed leaves the table as it
    was.

    \b
    Examples:
      pylog spark-export orders --from-dir /var/lib/kafka/data --format delta -o /lake/orders
      pylog spark-export orders -b kafka1:9092 --format delta -o /lake/orders
      pylog spark-export orders payments --from-dir /data --output /lake/raw --partition-by topic,date
      pylog spark-export events --from-dir /data --format iceberg -o /lake/wh --table raw.events
      pylog spark-export users --from-dir /data --compacted --value-format json -o /lake/users
      pylog spark-export events -b kafka1:9092 --value-format registry --schema-registry http://sr:8081 -o /lake/ev
    """
    from pylog.spark.export import ExportOptions, light_driver_jvm, parse_time_or_offset, run_export
    from pylog.spark.session import open_session, preflight

    if bool(from_dir) == bool(bootstrap):
        raise UsageError("give exactly one source: --from-dir DIR or --bootstrap-server SERVERS")
    if not output and not (fmt == "iceberg" and catalog_props):
        raise UsageError("--output PATH is required" + (" (or --catalog for iceberg)" if fmt == "iceberg" else ""))
    if (catalog_props or table) and fmt != "iceberg":
        raise UsageError("--catalog and --table belong to --format iceberg")
    f_off, f_ts = parse_time_or_offset(from_, "--from")
    u_off, u_ts = parse_time_or_offset(until, "--until")
    opts = ExportOptions(topics=tuple(topics), from_dir=from_dir, fmt=fmt, output=output,
                         catalog=merge_properties(None, catalog_props, "--catalog"), table=table,
                         isolation=isolation, compacted=compacted, from_offset=f_off, until_offset=u_off,
                         from_time=f_ts, until_time=u_ts,
                         partition_by=tuple(c.strip() for c in (partition_by or "").split(",") if c.strip()),
                         value_format=value_format, key_format=key_format, value_schema=value_schema,
                         bootstrap=bootstrap, client_props=dict(properties))
    from pylog.commands.registry_options import pop_registry_props

    reg_props = pop_registry_props(opts.client_props)
    if value_format == "registry":
        client = make_client(registry_url, registry_auth, reg_props)
        opts.registry = (client.url, client.auth)
    if from_dir:
        from pylog.spark.log_plan import find_partition_dirs

        find_partition_dirs(from_dir, list(topics))  # a dir without the topics fails before Spark starts
    elif properties.get("isolation.level"):
        raise UsageError("give --isolation, not -X isolation.level")
    t0 = time.monotonic()
    preflight(settings)
    light_driver_jvm(settings, opts)
    run = open_session(settings, say=say)
    try:
        doc = spark_job(lambda: run_export(run.spark, opts, progress_factory(run, not as_json), say=say))
    finally:
        finish_session(run)
    doc.update(run_info(run))
    doc["total_seconds"] = round(time.monotonic() - t0, 3)
    if as_json:
        from pylog.commands.spark_progress import print_json

        print_json(doc)
    else:
        print_export(doc)


def print_export(doc: dict) -> None:
    from pylog.commands.spark_progress import grid, human_bytes, kv_table, print_tables

    rate = doc["records"] / doc["job_seconds"] if doc["job_seconds"] else 0.0
    rows = [("format", doc["format"]), ("table", doc["output"]), ("source", doc["from_dir"] or f"cluster {doc['bootstrap_servers']}"),
            ("topics", ", ".join(doc["topics"])), ("isolation", doc["isolation"]),
            ("records", f"{doc['records']:,}"), ("files", f"{doc['files']:,} ({human_bytes(doc['bytes'])})"),
            ("commit", f"version {doc['table_version']}" if doc["committed"] else "nothing new: table unchanged"),
            ("job time", f"{doc['job_seconds']:.2f} s ({rate:,.0f} records/s)"),
            ("spark start-up", f"{doc['spark_startup_seconds']:.2f} s" +
             (" (session reused)" if doc["session_reused"] else "")),
            ("master", doc["master"]), ("spark log", doc["spark_log"])]
    if doc["partition_by"]:
        rows.insert(5, ("partitioned by", ", ".join(doc["partition_by"])))
    if doc["compacted"]:
        rows.insert(5, ("compacted", "latest value per key, tombstones removed"))
    cols = ["partition", "from", "until", "offsets", "log end", "stable end", "read tasks"]
    body = [[f"{p['topic']}-{p['partition']}", p["start"], p["end"], f"{p['offsets']:,}", p["log_end_offset"],
             p["last_stable_offset"], p["read_tasks"]] for p in doc["partitions"]]
    print_tables(kv_table("spark-export", rows), grid("per partition", cols, body))
