"""`pylog produce TOPIC`: lines from stdin or a file to a topic."""
from __future__ import annotations

import base64
import json
import sys
import time

import click

from pylog.commands.console import emit_json, err
from pylog.commands.options import bootstrap_option, json_option, properties_options
from pylog.core.config import PRODUCER_CONFIGS
from pylog.core.errors import DataError, PylogError, UsageError

from pylog.commands.client_common import client_props, producer_options

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


def _to_bytes(v, what, lineno):
    if v is None:
        return None
    if isinstance(v, str):
        return v.encode("utf-8")
    if isinstance(v, dict) and set(v) == {"base64"}:
        return base64.b64decode(v["base64"])
    return json.dumps(v, separators=(",", ":")).encode("utf-8")


def parse_json_line(line: bytes, lineno: int):
    try:
        obj = json.loads(line)
    except ValueError as e:
        raise DataError(f"line {lineno}: malformed JSON: {e}") from None
    if not isinstance(obj, dict):
        raise DataError(f"line {lineno}: expected a JSON object with key/value/headers/partition/timestamp")
    unknown = set(obj) - {"key", "value", "headers", "partition", "timestamp"}
    if unknown:
        raise DataError(f"line {lineno}: unknown field(s) {', '.join(sorted(unknown))}")
    key = _to_bytes(obj.get("key"), "key", lineno)
    value = _to_bytes(obj.get("value"), "value", lineno)
    headers = obj.get("headers") or {}
    if isinstance(headers, dict):
        headers = [(str(k), _to_bytes(v, "header", lineno)) for k, v in headers.items()]
    elif isinstance(headers, list):
        try:
            headers = [(str(k), _to_bytes(v, "header", lineno)) for k, v in headers]
        except (TypeError, ValueError):
            raise DataError(f"line {lineno}: headers must be an object or a list of [key, value] pairs") from None
    else:
        raise DataError(f"line {lineno}: headers must be an object")
    partition = obj.get("partition")
    if partition is not None and (not isinstance(partition, int) or partition < 0):
        raise DataError(f"line {lineno}: partition must be a non-negative integer")
    ts = obj.get("timestamp")
    if ts is not None and not isinstance(ts, int):
        raise DataError(f"line {lineno}: timestamp must be an integer (ms since the epoch)")
    return key, value, headers, partition, ts


@click.command("produce")
@click.argument("topic")
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
@producer_options
@properties_options
@json_option
def produce(topic, bootstrap, input_file, fmt, key_separator, partition, headers, acks, compression, linger_ms,
            batch_size, properties, as_json):
    """Produce records to TOPIC from stdin or --input, one record per line.

    Prints a summary (records, bytes, partitions, failures, elapsed, rate) on
    stderr, or on stdout with --json. Records are counted as delivered only
    when the broker acknowledged them (with acks=0: when they were sent).

    Exit status: 0 every record delivered; 1 some records failed (their line
    numbers and causes are listed); 3 nothing was delivered (for example the
    broker is unreachable or the topic does not exist); 2 usage errors such as
    an invalid -X property.
    """
    from pylog.core.client import KafkaTimeoutError, Producer

    if key_separator == "":
        raise UsageError("--key-separator must not be empty")
    if key_separator is not None and fmt == "json":
        raise UsageError("--key-separator applies to --format text only")
    hdrs = [_header(h) for h in headers]
    props = client_props(bootstrap, properties, PRODUCER_CONFIGS, **{
        "acks": acks, "compression.type": compression, "linger.ms": linger_ms, "batch.size": batch_size})
    sep = key_separator.encode("utf-8") if key_separator is not None else None

    if input_file == "-":
        stream = sys.stdin.buffer
        total_size = None
    else:
        try:
            stream = open(input_file, "rb")
        except OSError as e:
            raise UsageError(f"cannot read {input_file}: {e.strerror}") from None
        import os
        total_size = os.fstat(stream.fileno()).st_size

    stats = {"delivered": 0, "bytes": 0, "partitions": set(), "failed": []}

    def on_done(lineno, nbytes, md, error):
        if error is None:
            stats["delivered"] += 1
            stats["bytes"] += nbytes
            stats["partitions"].add(md.partition)
        else:
            stats["failed"].append((lineno, str(error)))

    start = time.monotonic()
    producer = None
    progress = None
    sent = 0
    stopped = None
    interrupted = False
    try:
        try:
            producer = Producer(props)
        except PylogError as e:
            raise NothingDelivered(f"cannot produce to {topic}: {e}") from None
        if total_size is not None and err.is_terminal and not as_json:
            from rich.progress import BarColumn, DownloadColumn, Progress, TransferSpeedColumn
            progress = Progress("[progress.description]{task.description}", BarColumn(), DownloadColumn(),
                                TransferSpeedColumn(), console=err, transient=True)
            progress.start()
            task = progress.add_task(f"producing to {topic}", total=total_size)
        read = 0
        for lineno, raw in enumerate(stream, 1):
            read += len(raw)
            line = raw.rstrip(b"\r\n") if raw.endswith(b"\n") else raw
            if progress is not None and lineno % 1000 == 0:
                progress.update(task, completed=read)
            try:
                if fmt == "json":
                    if not line.strip():
                        continue
                    key, value, rh, p, ts = parse_json_line(line, lineno)
                    rh = hdrs + rh
                    if partition is not None and p is None:
                        p = partition
                else:
                    ts = None
                    p = partition
                    rh = hdrs
                    if sep is not None:
                        key, s, value = line.partition(sep)
                        if not s:
                            raise DataError(f"line {lineno}: no key separator {key_separator!r} found")
                    else:
                        key, value = None, line
            except DataError as e:
                stats["failed"].append((lineno, str(e).split(": ", 1)[1] if str(e).startswith("line ") else str(e)))
                continue
            nbytes = len(value or b"") + len(key or b"")
            fut = producer.send(topic, value, key, partition=p, timestamp=ts, headers=rh or None,
                                callback=_Cb(on_done, lineno, nbytes))
            sent += 1
            if isinstance(fut.exception(), KafkaTimeoutError):
                # no metadata for the topic within max.block.ms: every later line would wait as long
                stopped = lineno
                break
        producer.flush()
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        if progress is not None:
            progress.stop()
        if producer is not None:
            # on Ctrl-C give in-flight records a moment, not the whole delivery.timeout.ms
            producer.close(timeout=5 if interrupted else None)
        if stream is not sys.stdin.buffer:
            stream.close()
    elapsed = time.monotonic() - start
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
    if as_json:
        summary["failed"] = [{"line": n, "error": e} for n, e in failed]
        emit_json(summary)
    else:
        parts = ",".join(str(p) for p in summary["partitions"]) or "-"
        err.print(f"produced {summary['records']} records ({summary['bytes']} bytes) to {topic} "
                  f"partitions [{parts}] in {elapsed:.2f}s ({summary['records_per_s']:.0f} records/s); "
                  f"{len(failed)} failed")
        for n, e in failed[:20]:
            err.print(f"  line {n}: {e}", markup=False)
        if len(failed) > 20:
            err.print(f"  ... and {len(failed) - 20} more")
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


class _Cb:
    __slots__ = ("fn", "lineno", "nbytes")

    def __init__(self, fn, lineno, nbytes):
        self.fn = fn
        self.lineno = lineno
        self.nbytes = nbytes

    def __call__(self, md, error):
        self.fn(self.lineno, self.nbytes, md, error)
