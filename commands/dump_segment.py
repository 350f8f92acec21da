"""`pylog dump-segment`: print Kafka log files the way kafka-dump-log.sh does."""
from __future__ import annotations

import sys
from pathlib import Path

import click

from pylog.commands.registry_options import registry_options

from pylog.commands.console import plural
from pylog.commands.options import json_option
from pylog.commands.dump_format import DECODERS, Writer
from pylog.storage.scan import DEFAULT_MAX_MESSAGE_SIZE
from pylog.core.errors import DataError
from pylog.storage.kraft_bootstrap import BOOTSTRAP_CHECKPOINT
from pylog.commands.dump_log import Options, Problems, KRAFT_SNAPSHOT, dump_log
from pylog.commands.dump_files import (
    dump_index,
    dump_leader_epochs,
    dump_offset_checkpoint,
    dump_producer_snapshot,
    dump_time_index,
    dump_txn_index,
)


def _kind(path: Path) -> str | None:
    from pylog.storage.checkpoint import OFFSET_CHECKPOINT_FILES
    from pylog.storage.leader_epoch import LEADER_EPOCH_CHECKPOINT

    name = path.name
    if name.endswith(".log") or KRAFT_SNAPSHOT.match(name) or name == BOOTSTRAP_CHECKPOINT:
        return "log"
    for suffix, kind in ((".index", "index"), (".timeindex", "timeindex"), (".snapshot", "snapshot"),
                         (".txnindex", "txnindex")):
        if name.endswith(suffix):
            return kind
    if name == LEADER_EPOCH_CHECKPOINT:
        return "leader-epoch"
    if name in OFFSET_CHECKPOINT_FILES:
        return "offset-checkpoint"
    return None


_DUMPERS = {
    "log": dump_log, "index": dump_index, "timeindex": dump_time_index, "snapshot": dump_producer_snapshot,
    "txnindex": dump_txn_index, "leader-epoch": dump_leader_epochs, "offset-checkpoint": dump_offset_checkpoint,
}


@click.command("dump-segment", context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--deep-iteration", is_flag=True, help="Print every record, not just the batch headers.")
@click.option("--print-data-log", is_flag=True, help="Print record keys and values (implies --deep-iteration).")
@click.option("--skip-record-metadata", is_flag=True, help="With --print-data-log, print only keys and values.")
@click.option("--key-decoder", type=click.Choice(DECODERS), default="string", show_default=True,
              help="How to print record keys: UTF-8 text (invalid bytes escaped), hex, base64, pretty JSON, or nothing.")
@click.option("--value-decoder", type=click.Choice(DECODERS), default="string", show_default=True,
              help="How to print record values (same choices as --key-decoder; registry: the schema "
                   "registry's wire format as JSON, with --schema-registry).")
@registry_options
@click.option("--offsets-decoder", is_flag=True,
              help="Decode __consumer_offsets records (offset commits, group metadata) as JSON.")
@click.option("--cluster-metadata-decoder", is_flag=True,
              help="Decode KRaft __cluster_metadata records (type, version and fields) as JSON.")
@click.option("--transaction-log-decoder", is_flag=True,
              help="Decode __transaction_state records (transactional id, producer id and epoch, state, "
                   "partitions) as JSON.")
@click.option("--verify-index-only", is_flag=True,
              help="For .index/.timeindex: check entries against the log without printing them.")
@click.option("--index-sanity-check", is_flag=True,
              help="For .index/.timeindex: run only the sanity check that decides whether a broker rebuilds it.")
@click.option("--max-message-size", type=click.IntRange(min=64), default=DEFAULT_MAX_MESSAGE_SIZE, show_default=True,
              help="Largest batch size believed; a larger length field is reported as corruption.")
@click.option("--max-bytes", type=click.IntRange(min=1), default=None,
              help="Dump only the first N bytes of each .log file.")
@json_option
def dump_segment(files, deep_iteration, print_data_log, skip_record_metadata, key_decoder, value_decoder,
                 offsets_decoder, cluster_metadata_decoder, transaction_log_decoder, verify_index_only,
                 index_sanity_check, max_message_size,
                 max_bytes, registry_url, registry_auth, as_json):
    """Print the contents of Kafka log files, as kafka-dump-log.sh does.

    FILES may be segment data (.log, and KRaft snapshots
    <offset>-<epoch>.checkpoint and bootstrap.checkpoint), offset indexes (.index), time indexes
    (.timeindex), producer snapshots (.snapshot), transaction indexes
    (.txnindex), leader-epoch-checkpoint and the offset checkpoint files
    (recovery-point-offset-checkpoint, log-start-offset-checkpoint,
    replication-offset-checkpoint, cleaner-offset-checkpoint).

    Batch lines carry Kafka's field names in Kafka's order (baseOffset,
    lastOffset, count, ..., crc, isvalid); v0/v1 message sets print offset,
    position, timestamp, size, magic, compresscodec, crc and isvalid.
    Files are streamed in chunks: any size works in constant memory. A
    corrupt or truncated batch is reported with its position and the dump
    resumes at the next valid batch.

    Index mismatches, non-consecutive offsets and time-index errors are
    printed on stderr after the dump, as Kafka does. Exit status: 0 when
    everything read cleanly, 1 when damage or index mismatches were found,
    2 on usage errors.

    \b
    Examples:
      pylog dump-segment /var/kafka/t-0/00000000000000000000.log
      pylog dump-segment --print-data-log --value-decoder hex 0000*.log
      pylog dump-segment --offsets-decoder __consumer_offsets-7/*.log
      pylog dump-segment --transaction-log-decoder __transaction_state-3/*.log
      pylog dump-segment --json 00000000000000000000.index | jq .
      pylog dump-segment --value-decoder registry --schema-registry http://127.0.0.1:8081 0000*.log
    """
    if offsets_decoder + cluster_metadata_decoder + transaction_log_decoder > 1:
        raise click.UsageError("--offsets-decoder, --cluster-metadata-decoder and --transaction-log-decoder "
                               "are exclusive")
    decoders_given = (offsets_decoder or cluster_metadata_decoder or transaction_log_decoder
                      or key_decoder != "string" or value_decoder != "string")
    print_data_log = print_data_log or decoders_given
    key_decoder, value_decoder = (_registry_decoder(d, registry_url, registry_auth)
                                  for d in (key_decoder, value_decoder))
    o = Options(
        deep_iteration=deep_iteration or print_data_log, print_data_log=print_data_log,
        skip_record_metadata=skip_record_metadata, key_decoder=key_decoder, value_decoder=value_decoder,
        offsets_decoder=offsets_decoder, cluster_metadata_decoder=cluster_metadata_decoder,
        transaction_log_decoder=transaction_log_decoder,
        verify_index_only=verify_index_only, index_sanity_check=index_sanity_check,
        max_message_size=max_message_size, max_bytes=max_bytes,
    )
    unknown = [name for name in files if _kind(Path(name)) is None]
    if unknown:
        raise DataError(f"{unknown[0]}: not a Kafka log file (expected .log, .index, .timeindex, .snapshot, "
                        ".txnindex, a KRaft .checkpoint, leader-epoch-checkpoint or an offset checkpoint file)"
                        + (f"; and {plural(len(unknown) - 1, 'more such file')}" if len(unknown) > 1 else ""))
    w = Writer(as_json)
    problems = Problems()
    for name in files:
        path = Path(name)
        kind = _kind(path)
        if as_json:
            if kind != "log":
                w.obj({"type": "file", "file": str(path), "kind": kind})
        else:
            w.line(f"Dumping {path}")
        try:
            _DUMPERS[kind](path, o, w, problems)
        except OSError as e:
            w.flush()
            raise DataError(f"{path}: cannot read: {e.strerror or e}") from None
        except ValueError as e:  # content a reader could not make sense of
            w.flush()
            raise DataError(f"{path}: not a valid {kind} file: {e}") from None
    w.flush()
    if problems.count:
        sys.exit(1)  # SystemExit: click's non-standalone mode would swallow ctx.exit(1)


def _registry_decoder(decoder, url, auth):
    """--key/--value-decoder registry: a function bytes -> JSON text (others pass through)."""
    if decoder != "registry":
        return decoder
    from pylog.commands.consume_schema import schema_decoder
    from pylog.commands.registry_options import make_client

    dec = schema_decoder(make_client(url, auth), "auto")
    return lambda data: dec(data, False)
