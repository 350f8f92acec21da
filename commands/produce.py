"""`pylog produce TOPIC`: lines from stdin or a file to a topic."""
from __future__ import annotations

import operator
import sys
import time
from itertools import accumulate

import click

from pylog.commands.completion import topic_names
from pylog.commands.console import emit_json, plural, print_err, stderr_is_terminal
from pylog.commands.options import bootstrap_option, json_option, properties_options, topic_argument
from pylog.core.config import PRODUCER_CONFIGS
from pylog.core.errors import PylogError, UnknownTopicOrPartitionError, UsageError

from pylog.commands.client_common import check_topic, client_props, producer_options, warn_created
from pylog.commands.produce_input import TEXT_FRAMED, LineFrame, parse_json, parse_text, read_blocks, unframe
from pylog.commands.produce_txn import Transactions, transaction_options
from pylog.commands.produce_schema import schema_produce_options
from pylog.commands.registry_options import registry_options

EXIT_ALL_DELIVERED = 0
EXIT_SOME_FAILED = 1
EXIT_NOTHING_DELIVERED = 3


class ProduceFailed(PylogError):
    exit_code = EXIT_SOME_FAILED


class NothingDelivered(PylogError):
    exit_code = EXIT_NOTHING_DELIVERED


def _header(item: str) -> tuple[str, bytes]:
    k, sep, v = item.partition("=")
    if not sep or not k:
        raise UsageError(f"--header {item!r}: expected KEY=VALUE")
    return k, v.encode("utf-8")


@click.command("produce")
@topic_argument(shell_complete=topic_names)
@bootstrap_option
@click.option("--input", "-i", "input_file", type=click.Path(dir_okay=False, allow_dash=True), default="-",
              show_default=True, help="Read records from FILE (one per line); '-' is stdin.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True,
              help="text: each line is a value (or KEY<sep>VALUE with --key-separator). json: each line is "
                   '{"key":..,"value":..,"headers":{..},"partition":..,"timestamp":..}.')
@click.option("--key-separator", "-K", default=None, metavar="SEP",
              help="Split each text line into key and value at the first SEP.")
@click.option("--partition", "-p", type=click.IntRange(min=0), default=None,
              help="Send every record to this partition (default: by key, sticky when keyless).")
@click.option("--header", "-H", "headers", multiple=True, metavar="KEY=VALUE",
              help="Add this header to every record (repeatable).")
@producer_options(batch_default="1000000 (librdkafka's) from a file or pipe, 16384 from a terminal")
@transaction_options
@schema_produce_options
@registry_options
@properties_options
@json_option
def produce(topic, bootstrap, input_file, fmt, key_separator, partition, headers, acks, compression, linger_ms,
            batch_size, transactional_id, transaction_size, value_format, key_format, value_schema, value_subject,
            key_schema, key_subject, value_message, registry_url, registry_auth, properties, as_json):
    """Produce records to TOPIC from stdin or --input, one record per line.

    Prints a summary (records, bytes, partitions, failures, elapsed, rate) on
    stderr, or on stdout with --json. Records are counted as delivered only
    when the broker acknowledged them (with acks=0: when they were sent).

    A topic that does not exist is created by a broker with
    auto.create.topics.enable=true (with a warning), else nothing is sent.
    Ctrl-C or SIGTERM stops reading, waits briefly for records in flight and
    prints the summary marked interrupted (delivered, in flight, dropped).

    Exit status: 0 every record delivered; 1 some records failed (one line per
    distinct cause with its count and line numbers); 3 nothing was delivered
    (for example the broker is unreachable or the topic does not exist); 2
    usage errors such as an invalid -X property; 130 (143 on SIGTERM) when
    interrupted.

    With --transactional-id the records go in transactions (of --transaction-size
    records, or the whole input) and count as delivered when their transaction
    commits; the records of a transaction that had to be aborted are failed.

    With --value-format (and --key-format) avro, protobuf or json-schema each
    value is a JSON document encoded with a registry schema (--value-schema
    FILE, registered under TOPIC-value as confluent-kafka's serialisers do, or
    the latest of --value-subject) into the registry's wire format; a line
    that does not match is reported with its line number and not sent. The
    registry: --schema-registry, PYLOG_SCHEMA_REGISTRY_URL or
    -X schema.registry.url.
    """
    from pylog.core.client import Producer

    _check_options(key_separator, fmt, transaction_size, transactional_id)
    hdrs = [_header(h) for h in headers]
    properties, encoders = _schema_encoders(topic, dict(properties), registry_url, registry_auth, value_format,
                                            value_schema, value_subject, value_message, key_format, key_schema,
                                            key_subject)
    props = client_props(bootstrap, properties, PRODUCER_CONFIGS, **{
        "acks": acks, "compression.type": compression, "linger.ms": linger_ms,
        "batch.size": _batch_size(batch_size, input_file, properties),
        "transactional.id": transactional_id})
    sep = key_separator.encode("utf-8") if key_separator is not None else None
    stream, total_size = _open_input(input_file)

    stats = {"delivered": 0, "bytes": 0, "partitions": set(), "failed": []}
    tracker = _Tracker(stats)
    start = time.monotonic()
    producer = progress = stopped = interrupted = txn = None
    in_flight = 0
    try:
        producer = _connect(Producer, props, topic)
        if transactional_id is not None:
            try:
                txn = Transactions(producer, transaction_size, tracker)
            except PylogError as e:
                raise NothingDelivered(f"cannot produce to {topic}: init_transactions: {e}") from None
        if total_size is not None and not as_json and stderr_is_terminal():
            progress = _progress_bar(topic, total_size)
        read = 0
        raw = fmt == "json" or (TEXT_FRAMED and encoders is None and txn is None)  # framed where lines lie
        for first, lines, nbytes in read_blocks(stream, raw=raw):
            read += nbytes
            if fmt == "json":
                block = parse_json(first, lines, hdrs)
            else:
                block = parse_text(first, lines, sep, key_separator)
                if hdrs:
                    block.headers = [hdrs] * len(block.values)  # one list object: encoded once
            if encoders is not None:
                block = encoders.apply(block, first)
            stats["failed"] += block.errors
            stopped = _send_block(producer, tracker, txn, topic, partition, block, first)
            if stopped is not None:
                break
            tracker.settle()
            if progress is not None:
                progress.update(progress.task_ids[0], completed=read)
        if txn is not None and stopped is None:
            txn.end()
        producer.flush()
        tracker.settle()
    except KeyboardInterrupt as e:
        interrupted = e
        tracker.settle()  # batches acknowledged while reading waited for input
        in_flight = tracker.in_flight()
    finally:
        if progress is not None:
            progress.stop()
        if producer is not None:
            interrupted = _close(producer, tracker, txn, interrupted)
        if stream is not sys.stdin.buffer:
            stream.close()
    dropped = tracker.in_flight() if interrupted is not None else 0
    tracker.finish()
    failed = _report(topic, stats, time.monotonic() - start, txn, interrupted, in_flight, dropped, as_json)
    if interrupted is not None:
        raise interrupted
    _raise_outcome(topic, stats, failed, stopped)


def _check_options(key_separator, fmt, transaction_size, transactional_id) -> None:
    if key_separator == "":
        raise UsageError("--key-separator must not be empty")
    if key_separator is not None and fmt == "json":
        raise UsageError("--key-separator applies to --format text only")
    if transaction_size is not None and transactional_id is None:
        raise UsageError("--transaction-size needs --transactional-id")


def _schema_encoders(topic, properties, registry_url, registry_auth, value_format, value_schema, value_subject,
                     value_message, key_format, key_schema, key_subject):
    """(the -X properties without the registry's, the schema encoders or None)."""
    from pylog.commands.registry_options import make_client, pop_registry_props

    reg_props = pop_registry_props(properties)
    if value_format or key_format:
        from pylog.commands.produce_schema import SchemaEncoders

        return properties, SchemaEncoders(make_client(registry_url, registry_auth, reg_props), topic, value_format,
                                          value_schema, value_subject, value_message, key_format, key_schema,
                                          key_subject)
    if value_schema or key_schema:
        raise UsageError("--value-schema/--key-schema need --value-format/--key-format")
    return properties, None


# librdkafka's batch.size (kcat's): the batch size of a produce from a file or a pipe
BULK_BATCH_SIZE = 1_000_000


def _batch_size(batch_size, input_file: str, properties: dict):
    """--batch-size, else -X batch.size, else 1,000,000 bytes when reading a file or a pipe (kcat's
    batches: bench cli measures 1.8-3.6x the records/s of 16 KB ones) and Kafka's 16,384 from a terminal."""
    if batch_size is not None or "batch.size" in properties:
        return batch_size
    if input_file == "-" and sys.stdin.isatty():
        return None
    return BULK_BATCH_SIZE


def _open_input(input_file: str):
    """(binary stream, its size or None for stdin)."""
    if input_file == "-":
        return sys.stdin.buffer, None
    try:
        stream = open(input_file, "rb")
    except OSError as e:
        raise UsageError(f"cannot read {input_file}: {e.strerror}") from None
    import os
    return stream, os.fstat(stream.fileno()).st_size


def _connect(producer_class, props: dict, topic: str):
    """A producer whose metadata has TOPIC (created with a warning where the broker auto-creates)."""
    try:
        producer = producer_class(props)
        if check_topic(producer.loop, producer.client, topic, allow_create=True):
            warn_created(topic)
        return producer
    except UnknownTopicOrPartitionError as e:
        raise NothingDelivered(f"nothing sent: {e}") from None
    except PylogError as e:
        raise NothingDelivered(f"cannot produce to {topic}: {e}") from None


def _progress_bar(topic: str, total_size: int):
    from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn

    from pylog.commands.console import err
    progress = Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                        TransferSpeedColumn(), console=err, transient=True)
    progress.start()
    progress.add_task(f"producing to {topic}", total=total_size)
    return progress


def _send_block(producer, tracker, txn, topic, partition, block, first):
    """Send one parsed block (in transaction-sized pieces with --transactional-id); the line reading
    stopped at, or None."""
    from pylog.core.client.errors import BulkSendStopped

    stopped = None
    for block, first in (((block, first),) if txn is None or not block.values else txn.pieces(block, first)):
        if not block.values:
            continue
        if isinstance(block.values, LineFrame):
            try:
                sent = producer.send_frame(topic, block.values, block.headers[0] if block.headers else None,
                                           partition)
            except BulkSendStopped as e:
                sent = e.runs, []
                stopped = tracker.stopped(block, first, e.runs, e.error)
            if sent is not None:
                tracker.add(block, first, *sent)
                return stopped
            block = unframe(block)  # a record too large for a run: the columns' path
        parts = block.partitions
        if parts is not None and partition is not None:
            parts = [partition if x is None else x for x in parts]
        try:
            runs, refused = producer.send_many(
                topic, block.values, keys=block.keys, headers=block.headers, runs=True,
                partition=partition if parts is None else None, partitions=parts, timestamps=block.timestamps)
        except BulkSendStopped as e:
            runs, refused = e.runs, []
            stopped = tracker.stopped(block, first, runs, e.error)
        tracker.add(block, first, runs, refused)
        if stopped is not None:
            return stopped
    return None


def _close(producer, tracker, txn, interrupted):
    """Close the producer and settle what is pending; a second Ctrl-C while waiting is the interrupt."""
    # on Ctrl-C give in-flight records a moment, not the whole delivery.timeout.ms
    try:
        producer.close(timeout=5 if interrupted else None)
    except KeyboardInterrupt as e:  # a second Ctrl-C: stop waiting
        interrupted = interrupted or e
    if interrupted is not None and txn is None:
        tracker.settle()  # what is still pending now was dropped: counted below
    else:
        tracker.settle(force=True, failure="transaction aborted" if txn is not None else None)
    return interrupted


def _report(topic, stats, elapsed, txn, interrupted, in_flight, dropped, as_json) -> list:
    """Print the summary (a line on stderr, or the --json document); returns the sorted failures."""
    failed = sorted(stats["failed"])
    summary = {
        "topic": topic,
        "records": stats["delivered"],
        "bytes": stats["bytes"],
        "partitions": sorted(stats["partitions"]),
        "failures": len(failed),
        "elapsed_s": round(elapsed, 3),
        "records_per_s": round(stats["delivered"] / elapsed, 1) if elapsed > 0 else 0.0,
    }
    if txn is not None:
        summary["transactions_committed"] = txn.committed
        summary["transactions_aborted"] = txn.aborted
    causes = _causes(failed)
    if interrupted is not None:
        summary.update(interrupted=True, in_flight=in_flight, dropped=dropped)
    if as_json:
        summary["failed"] = [{"line": n, "error": e} for n, e in failed]
        summary["errors"] = [{"error": e, "count": len(lines), "lines": lines[:100]} for e, lines in causes]
        emit_json(summary)
        return failed
    parts = ",".join(str(p) for p in summary["partitions"]) or "-"
    head = "interrupted: " if interrupted is not None else ""
    tail = (f"; {in_flight} in flight at the interrupt, {dropped} dropped (never acknowledged)"
            if interrupted is not None else "")
    print_err(f"{head}produced {plural(summary['records'], 'record')} ({plural(summary['bytes'], 'byte')}) "
              f"to {topic} partitions [{parts}] in {elapsed:.2f}s ({summary['records_per_s']:.0f} records/s); "
              f"{len(failed)} failed{tail}")
    if txn is not None:
        from pylog.commands.console import err

        err.print(f"transactions: {txn.committed} committed, {txn.aborted} aborted")
    for e, lines in causes:
        print_err(f"  {plural(len(lines), 'record')} failed: {e} ({_lines(lines)})")
    return failed


def _raise_outcome(topic, stats, failed, stopped) -> None:
    """Exit 1 (some failed) or 3 (nothing delivered) as the docstring of `produce` says."""
    if stopped is not None:
        msg = f"stopped reading at line {stopped}: {failed[-1][1] if failed else 'metadata timeout'}"
        if stats["delivered"] == 0:
            raise NothingDelivered(f"no records delivered to {topic}; {msg}")
        raise ProduceFailed(f"{len(failed)} records failed; {msg}")
    if failed:
        first = failed[0][1]
        if stats["delivered"] == 0:
            raise NothingDelivered(f"no records delivered to {topic}: {first}")
        raise ProduceFailed(f"{len(failed)} of {len(failed) + stats['delivered']} records failed "
                            f"(first: line {failed[0][0]}: {first})")


def _causes(failed) -> list:
    """[(error, [line numbers])] one entry per distinct error, the most frequent first."""
    by: dict = {}
    for n, e in failed:
        by.setdefault(e, []).append(n)
    return sorted(by.items(), key=lambda kv: (-len(kv[1]), kv[1][0]))


def _lines(lines: list) -> str:
    shown = ", ".join(map(str, lines[:5]))
    more = f" and {len(lines) - 5} more" if len(lines) > 5 else ""
    return f"line{'s' if len(lines) > 1 else ''} {shown}{more}"


class _Tracker:
    """Which lines each batch holds, so each line's outcome can be reported: a batch's
    records are counted delivered or failed (with their line numbers) when it completes."""

    def __init__(self, stats):
        self.stats = stats
        self.pending: list = []  # (batch, record indices, block, first line)
        self.hold = False  # transactional: settled only when a transaction ends
        self.partial: dict = {}  # id(block) -> [block, records delivered, [their indices per batch]]

    def add(self, block, first, runs, refused):
        for i, e in refused:
            self.stats["failed"].append((_line(block, first, i), str(e)))
        for b, idx, _ in runs:
            self.pending.append((b, idx, block, first))

    def settle(self, force=False, failure=None):
        """Count the batches that completed; keep the others. With `failure` (a transaction
        that did not commit) every pending record is failed."""
        stats = self.stats
        keep = []
        if self.hold and not force:
            return
        for entry in self.pending:
            b, idx, block, first = entry
            if failure is not None and (not b.done or b.error is None):
                stats["failed"] += [(_line(block, first, i), failure) for i in idx]
            elif not b.done:
                keep.append(entry)
            elif b.error is None:
                stats["delivered"] += len(idx)
                self._delivered(block, idx)
                stats["partitions"].add(b.partition)
            else:
                msg = str(b.error)
                stats["failed"] += [(_line(block, first, i), msg) for i in idx]
        self.pending = keep

    def _delivered(self, block, idx):
        """Key and value bytes are counted a block at a time: the block's total once all of
        its records are delivered (no per-record work on the way)."""
        n = len(block.values)
        if len(idx) == n:
            self.stats["bytes"] += _block_bytes(block)
            return
        entry = self.partial.setdefault(id(block), [block, 0, []])
        entry[1] += len(idx)
        entry[2].append(idx)
        if entry[1] == n:
            self.stats["bytes"] += _block_bytes(block)
            del self.partial[id(block)]

    def finish(self):
        """Count the bytes of the blocks only partly delivered (failures, an interrupt) record by record."""
        for block, _, idxs in self.partial.values():
            self.stats["bytes"] += sum(_bytes(block, idx) for idx in idxs)
        self.partial = {}

    def in_flight(self) -> int:
        """Records in batches sent or queued but not yet completed."""
        return sum(len(idx) for _, idx, _, _ in self.pending)

    def stopped(self, block, first, runs, error) -> int:
        """The line where a metadata or buffer timeout stopped the bulk send: the first
        record no batch took. It is reported failed; reading stops there."""
        taken = set()
        for _, idx, _ in runs:
            taken.update(idx)
        i = next((i for i in range(len(block.values)) if i not in taken), 0)
        lineno = _line(block, first, i)
        self.stats["failed"].append((lineno, str(error)))
        return lineno


def _line(block, first, i):
    return block.lines[i] if block.lines is not None else first + i


def _size(items) -> int:
    """Bytes in a key or value column (None counts 0)."""
    if items is None:
        return 0
    try:
        return sum(map(len, items))
    except TypeError:  # a None among them
        return sum(len(x) for x in items if x is not None)


def _block_bytes(block) -> int:
    if isinstance(block.values, LineFrame):
        return block.values.nbytes
    return _size(block.values) + _size(block.keys)


def _record_sizes(block) -> list:
    vl = [len(v) if v is not None else 0 for v in block.values] if None in block.values else \
        list(map(len, block.values))
    if block.keys is not None:
        kl = [len(k) if k is not None else 0 for k in block.keys] if None in block.keys else \
            list(map(len, block.keys))
        vl = list(map(operator.add, vl, kl))
    return vl


def _bytes(block, idx) -> int:
    """Key and value bytes of records `idx` of a block (sizes and prefix sums made once per block)."""
    if block.sizes is None:
        vl = block.values.sizes() if isinstance(block.values, LineFrame) else _record_sizes(block)
        block.sizes = (vl, [0] + list(accumulate(vl)))
    sizes, cum = block.sizes
    if isinstance(idx, range):
        return cum[idx.stop] - cum[idx.start]
    return sum(map(sizes.__getitem__, idx))
