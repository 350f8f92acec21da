"""Click commands `pylog spark-ingest` and `pylog spark-compaction`."""
from __future__ import annotations

import functools
import sys
import time

import click

from pylog.commands.registry_options import registry_options

from pylog.commands.options import bootstrap_option, json_option, merge_properties
from pylog.core.errors import UsageError


def spark_options(f=None, *, when: str | None = None):
    """--master, --remote, --ship-env, --conf, --app-name and --spark-log, the same on every Spark command.

    The command gets `settings` (a SessionSettings); with `when`, the name of a flag of the
    command (diff's --spark), only when that flag is given, else None and Spark is not needed."""
    if f is None:
        return functools.partial(spark_options, when=when)

    @click.option("--master", default="local[*]", show_default=True, metavar="URL",
                  help="Spark master: local[N], local-cluster[W,C,MB], spark://HOST:PORT, yarn, k8s://...")
    @click.option("--remote", default=None, metavar="sc://HOST:PORT",
                  help="Run through Spark Connect instead of a JVM here (env SPARK_REMOTE); pylog's code is "
                       "uploaded as an artifact.")
    @click.option("--ship-env", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
                  help="Ship this Python environment to the executors (spark.archives; through Spark Connect "
                       "a session artifact) so they have pylog's dependencies. auto: on a cluster, probe the "
                       "executors once and ship only when they lack one; --conf spark.pyspark.python=PYTHON "
                       "(Spark Connect: spark.sql.execution.pyspark.python) names executors' Python that has "
                       "them and wins.")
    @click.option("--conf", "spark_conf", multiple=True, metavar="KEY=VALUE",
                  help="Any Spark setting, e.g. --conf spark.executor.memory=2g (repeatable).")
    @click.option("--app-name", default=None, metavar="NAME", help="Spark application name.")
    @click.option("--spark-log", default=None, type=click.Path(dir_okay=False), metavar="FILE",
                  help="Where Spark's own log goes (default: a new file under $TMPDIR/pylog-spark/, "
                       "named in the summary).")
    @functools.wraps(f)
    def wrapper(*args, master, remote, ship_env, spark_conf, app_name, spark_log, **kwargs):
        from pylog.spark.session import SessionSettings, parse_conf, remote_url, require_spark

        if when is not None and not kwargs.get(when):
            kwargs["settings"] = None
            return f(*args, **kwargs)

        settings = SessionSettings(master=master, app_name=app_name or f"pylog {f.__name__.replace('_', '-')}",
                                   conf=parse_conf(spark_conf), log_file=spark_log, ship_env=ship_env,
                                   remote=remote)
        require_spark(remote=bool(remote_url(settings)))
        kwargs["settings"] = settings
        return f(*args, **kwargs)

    return wrapper


def progress_factory(run, enabled):
    """The progress display a Spark command's job reports to (none when not `enabled`)."""
    from pylog.commands.spark_progress import JobProgress, stage

    if run.connect:  # no status tracker through Spark Connect: a spinner per job
        def make_spinner(label, records=None, bytes_=None):
            return stage(label, enabled)

        return make_spinner
    sc = run.spark.sparkContext

    def make(label, records=None, bytes_=None):
        return JobProgress(sc, label, records=records, bytes_=bytes_, enabled=enabled)

    return make


def say(line: str) -> None:
    """Progress lines before any task runs (stderr, so --json output stays clean)."""
    from pylog.commands.console import err

    err.print(line, markup=False)


def run_info(run) -> dict:
    """The Spark session's facts for a command's --json answer."""
    return {"master": run.master, "spark_startup_seconds": round(run.startup_seconds, 3),
            "session_reused": run.reused, "spark_log": run.log_file,
            "executor_python": run.executor_python.as_dict() if run.executor_python else None}


def spark_job(job):
    """job(): Spark's own errors (a failed task, a lost executor) become pylog's one-line DataError."""
    try:
        return job()
    except Exception as e:
        if e.__class__.__module__.startswith(("pyspark", "py4j")):
            from pylog.spark.ingest import job_failed

            raise job_failed(e) from None
        raise


def run_spark_diff(settings, a, b, ignore: set, by_key: bool, say=None) -> tuple:
    """`pylog diff --spark`: (the streaming diff's result, the Spark run's facts)."""
    from pylog.spark.diff import spark_diff_by_key, spark_diff_by_position
    from pylog.spark.session import open_session, preflight

    preflight(settings)
    t0 = time.monotonic()
    run = open_session(settings, say=say or (lambda line: None))
    try:
        result = spark_job(lambda: (spark_diff_by_key if by_key else spark_diff_by_position)(run.spark, a, b,
                                                                                              ignore))
    finally:
        finish_session(run)
    return result, {**run_info(run), "job_seconds": round(time.monotonic() - t0, 3)}


def finish_session(run) -> None:
    """Stop the Spark session of `run` (and what it started)."""
    from pylog.spark import session

    if not session.KEEP_SESSION:
        session.stop_session()


@click.command("spark-ingest")
@click.argument("inputs", nargs=-1, required=True, metavar="INPUT...")
@click.option("--topic", "-t", required=True, help="Kafka topic to write.")
@click.option("--format", "fmt", type=click.Choice(["json", "csv", "parquet", "text"]), default=None,
              help="Input format; by default inferred from the file extension (.json/.jsonl, .csv, .parquet, .txt).")
@click.option("--key-column", default=None, metavar="COL", help="Column holding the record key (default: no key).")
@click.option("--value-column", default=None, metavar="COL",
              help="Column holding the record value (default: the whole row as a JSON object; the line for text).")
@click.option("--headers-columns", default=None, metavar="COL[,COL...]",
              help="Columns sent as record headers, named after the column.")
@click.option("--timestamp-column", default=None, metavar="COL",
              help="Column holding the record timestamp: epoch milliseconds, a timestamp, or ISO-8601 text "
                   "(default: the time of writing).")
@click.option("--csv-header/--no-csv-header", default=True, show_default=True,
              help="Whether CSV inputs start with a header line (without one columns are _c0, _c1, ...).")
@click.option("--csv-delimiter", default=",", show_default=True, metavar="CHAR", help="CSV field separator (\\t for tab).")
@click.option("--mode", type=click.Choice(["produce", "segments"]), default="produce", show_default=True,
              help="produce: send through a broker with a pylog producer per task; segments: write Kafka "
                   "segments straight into --log-dir (offline bulk load).")
@bootstrap_option
@click.option("--log-dir", default=None, type=click.Path(file_okay=False), metavar="DIR",
              help="segments mode: the log dir to write (reachable at the same path from every executor).")
@click.option("--append", is_flag=True, help="segments mode: add to partitions that already hold data.")
@click.option("--partitions", type=click.IntRange(min=1), default=None, metavar="N",
              help="Create the topic with N partitions when it does not exist (required then).")
@click.option("--topic-config", multiple=True, metavar="KEY=VALUE",
              help="Topic config for a topic this command creates, e.g. cleanup.policy=compact (repeatable).")
@click.option("--acks", type=click.Choice(["all", "-1", "0", "1"]), default="all", show_default=True,
              help="produce mode: acknowledgements the producer waits for.")
@click.option("--compression", type=click.Choice(["none", "gzip", "snappy", "lz4", "zstd"]), default="none",
              show_default=True, help="Batch compression (both modes).")
@click.option("--batch-size", type=click.IntRange(min=1), default=16384, show_default=True, metavar="BYTES",
              help="Batch size in bytes (Kafka's batch.size), both modes.")
@click.option("--linger-ms", type=click.IntRange(min=0), default=5, show_default=True,
              help="produce mode: Kafka's linger.ms.")
@click.option("--idempotence/--no-idempotence", default=True, show_default=True,
              help="produce mode: idempotent producer (Kafka's enable.idempotence; needs acks=all).")
@click.option("-X", "--property", "x_props", multiple=True, metavar="KEY=VALUE",
              help="produce mode: any producer property by its Kafka name (repeatable).")
@click.option("--command-config", "-F", "config_file", type=click.Path(dir_okay=False), default=None,
              metavar="FILE", help="produce mode: producer properties file (Java .properties); -X overrides it.")
@click.option("--tasks", type=click.IntRange(min=1), default=None, metavar="N",
              help="produce mode: number of producer tasks (default: one per input split).")
@spark_options
@json_option
@click.option("--value-format", type=click.Choice(["avro", "protobuf", "json-schema"]), default=None,
              help="Encode each value (the row or --value-column as JSON) with a registry schema, in the "
                   "registry's wire format.")
@click.option("--value-schema", type=click.Path(dir_okay=False, exists=True), default=None, metavar="FILE",
              help="Schema file, registered under --value-subject (default TOPIC-value).")
@click.option("--value-subject", default=None, metavar="NAME",
              help="Subject of the value schema (without --value-schema: its latest version).")
@registry_options
def spark_ingest(inputs, topic, fmt, key_column, value_column, headers_columns, timestamp_column, csv_header,
                 csv_delimiter, mode, bootstrap, log_dir, append, partitions, topic_config, acks, compression,
                 batch_size, linger_ms, idempotence, x_props, config_file, tasks, value_format, value_schema,
                 value_subject, registry_url, registry_auth, settings, as_json):
    """Bulk-load files into a Kafka topic with Spark.

    Reads INPUT files or folders (JSON lines, CSV, Parquet or plain text) and
    turns each row into a Kafka record: key from --key-column, value from
    --value-column (or the whole row as JSON), headers from --headers-columns,
    timestamp from --timestamp-column. Each row goes to the partition the Java
    client would choose: murmur2 of the key bytes, sticky for rows without a key.

    \b
    --mode produce (default): every Spark task runs a pylog producer against
      --bootstrap (idempotent, batching, compression and acks as options).
      Delivery is at least once: a Spark task that is retried sends its split
      again. At the end the records acknowledged per partition are checked
      against the broker's end offsets.
    --mode segments: offline bulk load into --log-dir. One task per Kafka
      partition writes Kafka-format segments, indexes, snapshots and
      checkpoints with pylog's storage engine; the topic is created (with
      --partitions) when missing. Partitions that hold data are refused unless
      --append. No broker may run on DIR meanwhile; afterwards `pylog verify
      DIR` passes and `pylog broker start --log-dir DIR` serves the data.

    \b
    Examples:
      pylog spark-ingest events.jsonl --topic events --key-column user_id --partitions 6
      pylog spark-ingest 'data/*.parquet' -t events --mode segments --log-dir /var/pylog --partitions 12
      pylog spark-ingest logs.txt -t lines --master spark://10.0.0.5:7077 -b 10.0.0.9:9092 --json
      pylog spark-ingest logs.txt -t lines --remote sc://10.0.0.5:15002 -b 10.0.0.9:9092

    \b
    Where it runs:
      --master local[N]            this machine (default local[*])
      --master spark://HOST:PORT   a Spark cluster; the executors get this Python
                                   environment (--ship-env auto) and pylog's code
      --remote sc://HOST:PORT      Spark Connect (also SPARK_REMOTE): no JVM here

    INPUT may be a quoted glob ('data/*.parquet'); inputs and options are checked
    before Spark starts. Spark's own log goes to a file named in the summary.
    """
    from pylog.spark.ingest import IngestOptions, check_inputs, expand_inputs, prepare_ingest, run_ingest
    from pylog.spark.session import open_session

    if mode == "segments" and not log_dir:
        raise UsageError("--mode segments needs --log-dir DIR")
    if mode == "produce" and (log_dir or append):
        raise UsageError("--log-dir and --append belong to --mode segments")
    opts = IngestOptions(
        inputs=expand_inputs(inputs), topic=topic, fmt=fmt, key_column=key_column, value_column=value_column,
        headers_columns=[c.strip() for c in (headers_columns or "").split(",") if c.strip()],
        timestamp_column=timestamp_column, csv_header=csv_header, csv_delimiter=csv_delimiter, mode=mode,
        bootstrap=bootstrap, log_dir=log_dir, append=append, partitions=partitions,
        topic_configs=merge_properties(None, topic_config, "--topic-config"), acks=acks, compression=compression,
        batch_size=batch_size, linger_ms=linger_ms, idempotence=idempotence,
        producer_props=merge_properties(config_file, x_props), tasks=tasks,
    )
    opts.value_encoding = _value_encoding(opts, value_format, value_schema, value_subject, registry_url,
                                          registry_auth)
    if mode == "segments":
        from pylog.storage.log_manager import validate_topic_name

        validate_topic_name(topic)
    t0 = time.monotonic()
    from pylog.spark.session import preflight

    check_inputs(opts.inputs)
    preflight(settings)  # Java and Spark are there before the topic is created
    prep = prepare_ingest(opts)  # inputs, format, broker or log dir: all before Spark starts
    run = open_session(settings, say=say)
    try:
        doc = run_ingest(run.spark, opts, progress_factory(run, not as_json), prep=prep, run=run, say=say)
    finally:
        finish_session(run)
    doc.update(run_info(run))
    doc["total_seconds"] = round(time.monotonic() - t0, 3)
    doc["job_seconds"] = round(doc["job_seconds"], 3)
    if as_json:
        from pylog.commands.spark_progress import print_json

        print_json(doc)
    else:
        _print_ingest(doc)
    if doc["partitions_mismatched"]:
        sys.exit(1)  # SystemExit: click's non-standalone mode would swallow ctx.exit(1)


def _value_encoding(opts, fmt, schema_file, subject, url, auth):
    """--value-format: the schema resolved (and registered) once here, for the executors."""
    if fmt is None:
        if schema_file or subject:
            raise UsageError("--value-schema/--value-subject need --value-format")
        return None
    from pathlib import Path

    from pylog.commands.registry_options import make_client, pop_registry_props
    from pylog.core.client.schema_registry import Serializer

    client = make_client(url, auth, pop_registry_props(opts.producer_props))
    text = Path(schema_file).read_text(encoding="utf-8") if schema_file else None
    return Serializer(client, fmt, subject or f"{opts.topic}-value", text).spec


def _print_ingest(doc: dict) -> None:
    from pylog.commands.spark_progress import grid, human_bytes, kv_table, print_tables

    rate = doc["records"] / doc["job_seconds"] if doc["job_seconds"] else 0.0
    rows = [("mode", doc["mode"]), ("topic", doc["topic"]),
            ("target", doc.get("bootstrap") or doc.get("log_dir")),
            ("inputs", f"{', '.join(doc['inputs'])} ({doc['format']})"),
            ("records", f"{doc['records']:,}"), ("payload bytes", human_bytes(doc["bytes"])),
            ("tasks", doc["tasks"]), ("job time", f"{doc['job_seconds']:.2f} s ({rate:,.0f} records/s)"),
            ("spark start-up", f"{doc['spark_startup_seconds']:.2f} s" + (" (session reused)" if doc["session_reused"] else "")),
            ("master", doc["master"]), ("delivery", doc["delivery"]), ("spark log", doc["spark_log"])]
    if doc["mode"] == "segments":
        rows.insert(2, ("topic id", doc["topic_id"] + (" (created)" if doc["topic_created"] else "")))
        cols = ["partition", "records", "bytes", "start offset", "end offset", "check"]
        body = [[p["partition"], f"{p['records']:,}", human_bytes(p["bytes"]), p["start_offset"], p["end_offset"],
                 "ok" if p["match"] else "MISMATCH"] for p in doc["partitions"]]
    else:
        cols = ["partition", "acknowledged", "end offset before", "end offset after", "check"]
        body = [[p["partition"], f"{p['acknowledged']:,}", p["end_offset_before"], p["end_offset_after"],
                 "ok" if p["match"] else f"MISMATCH ({p['end_offset_delta'] - p['acknowledged']:+d})"]
                for p in doc["partitions"]]
    print_tables(kv_table("spark-ingest", rows), grid("per partition", cols, body))
    if doc["partitions_mismatched"]:
        from pylog.commands.console import err

        err.print(f"[red]{doc['partitions_mismatched']} partition(s) do not match the broker's end offsets "
                  f"(retried tasks or other producers)[/]")


@click.command("spark-compaction")
@click.argument("path", type=click.Path(exists=True), metavar="PATH")
@click.option("--topic", "topics", multiple=True, metavar="TOPIC", help="Only these topics (repeatable).")
@click.option("--top-keys", type=click.IntRange(min=0), default=5, show_default=True, metavar="N",
              help="Hottest keys to list per partition.")
@click.option("--html", "html_path", default=None, type=click.Path(dir_okay=False), metavar="REPORT.html",
              help="Also write a self-contained HTML report (saving per partition, key-frequency distribution).")
@click.option("--if-dirty", is_flag=True,
              help="Predict for `pylog compact --if-dirty`: only partitions whose dirty ratio reaches "
                   "min.cleanable.dirty.ratio are cleaned (by default every compacted partition is).")
@click.option("--set", "sets", multiple=True, metavar="KEY=VALUE",
              help="Topic config override, as `pylog compact --set` takes it (repeatable), "
                   "e.g. --set delete.retention.ms=0.")
@click.option("--now-ms", type=int, default=None, hidden=True,
              help="Pretend the current time is this (epoch ms), for tests.")
@registry_options
@spark_options
@json_option
def spark_compaction(path, topics, top_keys, html_path, if_dirty, sets, now_ms, registry_url, registry_auth, settings,
                     as_json):
    """Predict what log compaction would leave, with Spark.

    PATH is a log dir or one or more partition folders' parent, or a single
    partition folder. One Spark task per segment decodes its batches into rows
    (topic, partition, segment, offset, key hash, key size, value size,
    tombstone, timestamp, producer id). Per partition it reports segments,
    records, bytes, distinct keys, tombstones, the dirty section beyond
    cleaner-offset-checkpoint and its dirty ratio, the records and bytes that
    would remain after compaction (delete.retention.ms applied, using the
    cleaner's own retention rule), the saving in percent and the hottest keys.
    With --schema-registry the hottest keys' latest values (what compaction
    keeps) are decoded from the registry's wire format to JSON, keys too.

    The prediction is what `pylog compact PATH` (with the same --if-dirty and
    --set) leaves when run at the same moment on the same files: the rewrite
    goes through the cleaner's own batch filter. Nothing is written to PATH,
    so it also runs on the log dir of a live broker (or a copy of it).

    \b
    Examples:
      pylog spark-compaction /var/pylog
      pylog spark-compaction /var/pylog/orders-3 --json
      pylog spark-compaction /var/pylog --html report.html --master local[2]
      pylog spark-compaction /var/pylog --topic users --schema-registry http://127.0.0.1:8081
      pylog spark-compaction /shared/pylog --master spark://10.0.0.5:7077

    On a cluster or through Spark Connect, PATH must be reachable at the same
    path by the driver and every executor (a shared mount).
    """
    from pylog.spark.compaction_report import run_compaction_report
    from pylog.spark.compaction_html import write_html
    from pylog.spark.session import open_session
    from pylog.core.config import TOPIC_CONFIGS

    overrides = merge_properties(None, sets, "--set")
    for k in overrides:
        if k not in TOPIC_CONFIGS:
            raise UsageError(f"--set {k}: not a topic config")
    from pylog.spark.compaction import find_partitions

    find_partitions(path, list(topics))  # a path with no partitions fails before Spark starts
    t0 = time.monotonic()
    run = open_session(settings, say=say)
    try:
        doc = spark_job(lambda: run_compaction_report(run.spark, path, topics=list(topics), top_keys=top_keys,
                                                       now_ms=now_ms, force=not if_dirty, overrides=overrides,
                                                       progress_factory=progress_factory(run, not as_json)))
    finally:
        finish_session(run)
    if registry_url:  # the hottest keys' latest values, decoded (their keys too when framed)
        from pylog.commands.registry_options import make_client
        from pylog.spark.compaction_values import decode_hottest_keys

        decode_hottest_keys(doc, path, make_client(registry_url, registry_auth))
    doc.update(run_info(run))
    doc["total_seconds"] = round(time.monotonic() - t0, 3)
    if html_path:
        write_html(doc, html_path)
        doc["html"] = html_path
    if as_json:
        from pylog.commands.spark_progress import print_json

        print_json(doc)
    else:
        _print_compaction(doc)


def _print_compaction(doc: dict) -> None:
    from pylog.commands.spark_progress import grid, human_bytes, kv_table, print_tables

    t = doc["totals"]
    rows = [("path", doc["path"]), ("partitions", len(doc["partitions"])), ("segments", t["segments"]),
            ("records", f"{t['records']:,}"), ("bytes", human_bytes(t["bytes"])),
            ("after compaction", f"{t['records_after']:,} records, {human_bytes(t['bytes_after'])}"),
            ("saving", f"{t['saving_percent']:.1f} %"), ("job time", f"{doc['job_seconds']:.2f} s"),
            ("spark start-up", f"{doc['spark_startup_seconds']:.2f} s" + (" (session reused)" if doc["session_reused"] else "")),
            ("master", doc["master"]), ("retention rule", doc["retention_rule"]), ("spark log", doc["spark_log"])]
    if doc.get("html"):
        rows.append(("html report", doc["html"]))
    cols = ["partition", "segs", "records", "bytes", "keys", "tombstones", "dirty", "dirty ratio",
            "records after", "bytes after", "saving"]
    body = []
    for p in doc["partitions"]:
        body.append([f"{p['topic']}-{p['partition']}", p["segments"], f"{p['records']:,}", human_bytes(p["bytes"]),
                     f"{p['distinct_keys']:,}", f"{p['tombstones']:,}", human_bytes(p["dirty_bytes"]),
                     f"{p['dirty_ratio']:.2f}", f"{p['records_after']:,}", human_bytes(p["bytes_after"]),
                     f"{p['saving_percent']:.1f} %"])
    tables = [kv_table("spark-compaction", rows), grid("per partition", cols, body)]
    hot = []
    for p in doc["partitions"]:
        for k in p["hottest_keys"]:
            hot.append([f"{p['topic']}-{p['partition']}", k["key"], f"{k['records']:,}"]
                       + ([str(k.get("latest_value"))[:80]] if "values_decoded_with" in doc else []))
    if hot:
        tables.append(grid("hottest keys", ["partition", "key", "records"]
                           + (["latest value (decoded)"] if "values_decoded_with" in doc else []), hot))
    print_tables(*tables)
