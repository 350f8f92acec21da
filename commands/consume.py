"""`pylog consume TOPIC`: records to stdout, kcat-style formats or JSON."""
from __future__ import annotations

import base64
import binascii
import json
import re
import sys
import time

import click

from pylog.commands.console import err
from pylog.commands.options import bootstrap_option, json_option, properties_options
from pylog.core.config import CONSUMER_CONFIGS
from pylog.core.errors import UsageError

from pylog.commands.client_common import client_props
from pylog.commands.consume_output import Renderer

DECODERS = ("string", "hex", "base64", "json")
_TOKEN = re.compile(r"%[tpokshTKS%]|\\[ntr\\]")


def decode(data, how, for_json=False):
    if data is None:
        return None
    data = bytes(data)
    if how == "string":
        return data.decode("utf-8", "replace")
    if how == "hex":
        return binascii.hexlify(data).decode()
    if how == "base64":
        return base64.b64encode(data).decode()
    try:
        obj = json.loads(data)
    except ValueError:
        obj = data.decode("utf-8", "replace")  # not JSON: shown as text rather than failing mid-stream
    return obj if for_json else json.dumps(obj, separators=(",", ":"))


def parse_offset(text: str):
    """earliest | latest | N | -N | @TIMESTAMP -> ("earliest"|"latest"|"offset"|"relative"|"timestamp", n)."""
    t = text.strip()
    if t in ("earliest", "beginning"):
        return ("earliest", 0)
    if t in ("latest", "end"):
        return ("latest", 0)
    try:
        if t.startswith("@"):
            return ("timestamp", int(t[1:]))
        n = int(t)
    except ValueError:
        raise UsageError(f"--offset {text!r}: expected N, -N, earliest, latest or @TIMESTAMP_MS") from None
    return ("relative", -n) if n < 0 else ("offset", n)


def format_pieces(fmt: str) -> list:
    """The format string cut into kcat tokens and the literal text between them."""
    pieces = []
    pos = 0
    for m in _TOKEN.finditer(fmt):
        if m.start() > pos:
            pieces.append(fmt[pos:m.start()])
        pieces.append(m.group())
        pos = m.end()
    if pos < len(fmt):
        pieces.append(fmt[pos:])
    return pieces


def compile_format(fmt: str, kdec: str, vdec: str):
    """A function Record -> str for kcat tokens: %t topic %p partition %o offset %k key %s value
    %h headers %T timestamp %K key length %S value length."""
    pieces = format_pieces(fmt)
    esc = {"\\n": "\n", "\\t": "\t", "\\r": "\r", "\\\\": "\\", "%%": "%"}

    def render(topic, partition, r):
        outp = []
        for p in pieces:
            if p in esc:
                outp.append(esc[p])
            elif p == "%s":
                v = decode(r.value, vdec)
                outp.append("" if v is None else v)
            elif p == "%k":
                k = decode(r.key, kdec)
                outp.append("" if k is None else k)
            elif p == "%o":
                outp.append(str(r.offset))
            elif p == "%p":
                outp.append(str(partition))
            elif p == "%t":
                outp.append(topic)
            elif p == "%T":
                outp.append(str(r.timestamp))
            elif p == "%K":
                outp.append(str(-1 if r.key is None else len(r.key)))
            elif p == "%S":
                outp.append(str(-1 if r.value is None else len(r.value)))
            elif p == "%h":
                outp.append(",".join(f"{k}={'' if v is None else bytes(v).decode('utf-8', 'replace')}"
                                     for k, v in (r.headers or ())))
            else:
                outp.append(p)
        return "".join(outp)
    return render


def json_line(key_decoder, value_decoder):
    """A function (topic, partition, Record) -> one JSON line."""
    def render(topic, partition, r):
        return json.dumps({
            "topic": topic, "partition": partition, "offset": r.offset,
            "timestamp": r.timestamp, "key": decode(r.key, key_decoder, True),
            "value": decode(r.value, value_decoder, True),
            "headers": {k: (None if v is None else bytes(v).decode("utf-8", "replace"))
                        for k, v in (r.headers or ())},
        }, separators=(",", ":"), ensure_ascii=False) + "\n"
    return render


@click.command("consume")
@click.argument("topic")
@bootstrap_option
@click.option("--from-beginning", is_flag=True, help="Start at the earliest offset (same as --offset earliest).")
@click.option("--offset", "-o", "offset", default=None, metavar="N|-N|earliest|latest|@TS",
              help="Start position for every partition: absolute offset N, N records before the end (-N), "
                   "earliest, latest, or the first record at/after timestamp TS (ms). [default: latest]")
@click.option("--partition", "-p", "partitions", type=click.IntRange(min=0), multiple=True,
              help="Read only this partition (repeatable). Default: all partitions.")
@click.option("--max-messages", "-c", type=click.IntRange(min=1), default=None,
              help="Exit after this many records.")
@click.option("--exit-at-end", "-e", is_flag=True, help="Exit when every partition's end has been reached.")
@click.option("--timeout-ms", type=click.IntRange(min=0), default=None,
              help="Exit when no record arrives for this long.")
@click.option("--group", "-g", default=None, help="Consume as a member of this consumer group (group.id).")
@click.option("--group-protocol", type=click.Choice(("classic", "consumer")), default=None,
              help="Group protocol (group.protocol): classic, or consumer for KIP-848, where the broker "
                   "assigns the partitions. [default: classic]")
@click.option("--format", "-f", "fmt", default=None, metavar="FMT",
              help="kcat-style output format: %t topic, %p partition, %o offset, %k key, %s value, "
                   "%h headers, %T timestamp, %K key length, %S value length, \\n \\t. [default: '%s\\n']")
@click.option("--key-decoder", type=click.Choice(DECODERS), default="string", show_default=True,
              help="How keys are shown.")
@click.option("--value-decoder", type=click.Choice(DECODERS), default="string", show_default=True,
              help="How values are shown.")
@click.option("--isolation", type=click.Choice(["read_uncommitted", "read_committed"]), default=None,
              help="isolation.level: read_committed shows only committed transactional records and stops at "
                   "the last stable offset. [default: read_uncommitted]")
@properties_options
@json_option
def consume(topic, bootstrap, from_beginning, offset, partitions, max_messages, exit_at_end, timeout_ms, group,
            group_protocol, fmt, key_decoder, value_decoder, isolation, properties, as_json):
    """Consume records from TOPIC and print them on stdout.

    By default each record's value is printed on its own line; --format
    takes kcat-style tokens and --json prints one JSON object per record
    (topic, partition, offset, timestamp, key, value, headers). Without
    --group the consumer reads the partitions directly and commits nothing.

    Exit status: 0 on normal end (--max-messages, --exit-at-end,
    --timeout-ms or Ctrl-C after records), 1 on errors, 2 on usage errors.
    """
    from pylog.core.client import Consumer, TopicPartition

    if from_beginning and offset is not None:
        raise UsageError("use either --from-beginning or --offset")
    start = parse_offset(offset) if offset is not None else (("earliest", 0) if from_beginning else None)
    if fmt is not None and as_json:
        raise UsageError("use either --format or --json")
    extra = {"group.id": group, "isolation.level": isolation}
    if group_protocol is not None:
        if group is None:
            raise UsageError("--group-protocol needs --group")
        extra["group.protocol"] = group_protocol
    if group is not None and start is not None:
        # a group member starts at its committed offsets; earliest/latest only apply where there are none
        if start[0] not in ("earliest", "latest") or partitions:
            raise UsageError("with --group the positions come from the group: use --from-beginning, "
                             "--offset earliest|latest, or no --partition")
        if "auto.offset.reset" not in properties:
            extra["auto.offset.reset"] = start[0]
    if start is None and "auto.offset.reset" not in properties:
        extra["auto.offset.reset"] = "latest"
    if group is None:
        extra["enable.auto.commit"] = "false"
    props = client_props(bootstrap, properties, CONSUMER_CONFIGS, **extra)
    fmt = fmt if fmt is not None else "%s\\n"
    renderer = Renderer(format_pieces(fmt), key_decoder, value_decoder, as_json,
                        compile_format(fmt, key_decoder, value_decoder), json_line(key_decoder, value_decoder))

    consumer = Consumer(props)
    count = 0
    try:
        if group is not None:
            try:
                from pylog.core.client.group import attach_group  # arrives with consumer groups
            except ImportError:
                raise UsageError("--group: consumer groups are not available in this build yet") from None
            attach_group(consumer)
            consumer.subscribe([topic])
        else:
            all_parts = consumer.partitions_for(topic)
            chosen = list(partitions) if partitions else all_parts
            bad = [p for p in chosen if p not in all_parts]
            if bad:
                raise UsageError(f"topic {topic} has no partition {bad[0]} (partitions: 0-{len(all_parts) - 1})")
            tps = [TopicPartition(topic, p) for p in chosen]
            consumer.assign(tps)
            if start is not None:
                kind, n = start
                if kind == "earliest":
                    consumer.seek_to_beginning(tps)
                elif kind == "latest":
                    consumer.seek_to_end(tps)
                elif kind == "offset":
                    for tp in tps:
                        consumer.seek(tp, n)
                elif kind == "timestamp":
                    consumer.seek_to_timestamp(n, tps)
                else:
                    begin = consumer.beginning_offsets(tps)
                    end = consumer.end_offsets(tps)
                    for tp in tps:
                        consumer.seek(tp, max(begin.get(tp, 0), end.get(tp, 0) - n))
        write = sys.stdout.write
        last_record = time.monotonic()
        end_offsets = None
        if exit_at_end and group is None:
            end_offsets = consumer.end_offsets(consumer.assignment())
        while True:
            recs = consumer.poll(200)
            now = time.monotonic()
            if recs:
                last_record = now
                chunks = []
                for tp, rs in recs.items():
                    if max_messages is not None and count + len(rs) > max_messages:
                        rs = rs[:max_messages - count]
                    chunks.append(renderer.render(tp.topic, tp.partition, rs))
                    count += len(rs)
                    if max_messages is not None and count >= max_messages:
                        break
                write("".join(chunks))
                sys.stdout.flush()
                if max_messages is not None and count >= max_messages:
                    break
            if exit_at_end and _at_end(consumer, end_offsets):
                break
            if timeout_ms is not None and (now - last_record) * 1000 >= timeout_ms:
                break
    except KeyboardInterrupt:
        pass
    finally:
        consumer.close()
    err.print(f"consumed {count} records from {topic}", style="dim")


def _at_end(consumer, end_offsets) -> bool:
    if not consumer.assignment():
        return False  # a group member before its first assignment
    for tp in consumer.assignment():
        pos = consumer.engine.positions.get(tp)
        if pos is None:
            return False
        # the high watermark of the latest fetch is the freshest end; before any
        # fetch answered, the end offsets listed at start
        end = consumer.high_watermark(tp)
        if end < 0 and end_offsets is not None:
            end = end_offsets.get(tp, -1)
        if end < 0 or pos[0] < end:
            return False
    return True
