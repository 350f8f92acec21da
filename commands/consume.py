"""`pylog consume TOPIC`: records to stdout, kcat-style formats or JSON."""
from __future__ import annotations

import base64
import binascii
import codecs
import json
import re
import sys
import time

import click

from pylog.commands.completion import group_names, topic_names
from pylog.commands.console import err, escape_controls, plural
from pylog.commands.consume_select import (FORMATTER_PROPS, OFFSET_HELP, RecordFilter, Start, kafka_formatter,
                                           parse_offsets)
from pylog.commands.options import bootstrap_option, json_option, properties_options, topic_argument
from pylog.core.config import CONSUMER_CONFIGS
from pylog.core.errors import UsageError

from pylog.commands.client_common import check_topic, client_props, warn_created
from pylog.commands.consume_output import Renderer
from pylog.commands.consume_schema import CONSUME_FORMATS, schema_decoder
from pylog.commands.registry_options import make_client, pop_registry_props, registry_options

DECODERS = ("string", "hex", "base64", "json")
_TOKEN = re.compile(r"%[tpokshTKS%]|\\[ntr\\]")


def decode(data, how, for_json=False, errors="replace"):
    if data is None:
        return None
    if callable(how):  # a registry format (consume_schema.SchemaDecoder)
        return how(data, for_json)
    data = bytes(data)
    if how == "string":
        return data.decode("utf-8", errors)
    if how == "hex":
        return binascii.hexlify(data).decode()
    if how == "base64":
        return base64.b64encode(data).decode()
    try:
        obj = json.loads(data)
    except ValueError:
        obj = data.decode("utf-8", errors)  # not JSON: shown as text rather than failing mid-stream
    return obj if for_json else json.dumps(obj, separators=(",", ":"))


def json_field(out: dict, name: str, data, how: str) -> None:
    """out[name] = the decoded bytes; bytes that are not UTF-8 go as {"base64": "..."}, the
    form `pylog produce --format json` reads, so JSON output never loses a byte."""
    if callable(how):
        out[name] = how(data, True)
        return
    if data is not None and how == "string":
        try:
            out[name] = bytes(data).decode("utf-8")
        except UnicodeDecodeError:
            out[name] = {"base64": base64.b64encode(bytes(data)).decode()}
        return
    out[name] = decode(data, how, True)


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


def compile_format(fmt: str, kdec: str, vdec: str, errors: str = "replace", escape=None):
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
                v = decode(r.value, vdec, errors=errors)
                outp.append("" if v is None else (escape(v) if escape else v))
            elif p == "%k":
                k = decode(r.key, kdec, errors=errors)
                outp.append("" if k is None else (escape(k) if escape else k))
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
                h = ",".join(f"{k}={'' if v is None else bytes(v).decode('utf-8', errors)}"
                             for k, v in (r.headers or ()))
                outp.append(escape(h) if escape else h)
            else:
                outp.append(p)
        return "".join(outp)
    return render


def json_line(key_decoder, value_decoder):
    """A function (topic, partition, Record) -> one JSON line."""
    def render(topic, partition, r):
        doc = {"topic": topic, "partition": partition, "offset": r.offset, "timestamp": r.timestamp}
        json_field(doc, "key", r.key, key_decoder)
        json_field(doc, "value", r.value, value_decoder)
        doc["headers"] = {k: _header_text(v) for k, v in (r.headers or ())}
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n"
    return render


def _header_text(v):
    if v is None:
        return None
    return bytes(v).decode("utf-8", "backslashreplace")


def kcat_json(key_decoder, value_decoder, leader_of):
    """kcat's -J envelope: topic, partition, offset, tstype, ts, broker, headers
    (name, value, name, value...; only when the record has headers), key, payload."""
    def render(topic, partition, r):
        doc = {"topic": topic, "partition": partition, "offset": r.offset, "tstype": "create",
               "ts": r.timestamp, "broker": leader_of(topic, partition)}
        if r.headers:
            doc["headers"] = [x for k, v in r.headers for x in (k, _header_text(v))]
        json_field(doc, "key", r.key, key_decoder)
        json_field(doc, "payload", r.value, value_decoder)
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False) + "\n"
    return render


@click.command("consume")
@topic_argument(shell_complete=topic_names)
@bootstrap_option
@click.option("--from-beginning", is_flag=True, help="Start at the earliest offset (same as --offset earliest).")
@click.option("--offset", "-o", "offsets", multiple=True, metavar="POSITION",
              help=f"Where to start (and, with e@TS, where to stop): {OFFSET_HELP}. [default: latest]")
@click.option("--partition", "-p", "partitions", type=click.IntRange(min=0), multiple=True,
              help="Read only this partition (repeatable). Default: all partitions.")
@click.option("--max-messages", "-c", type=click.IntRange(min=1), default=None,
              help="Exit after this many records.")
@click.option("--exit-at-end", "-e", is_flag=True, help="Exit when every partition's end has been reached.")
@click.option("--timeout-ms", type=click.IntRange(min=0), default=None,
              help="Exit when no record arrives for this long.")
@click.option("--group", "-g", "-G", default=None, shell_complete=group_names,
              help="Consume as a member of this consumer group (group.id).")
@click.option("--share-group", default=None, metavar="GROUP", shell_complete=group_names,
              help="Consume as a member of this share group (KIP-932): each record printed is acknowledged.")
@click.option("--reject-if", "reject_if", multiple=True, metavar="EXPR",
              help="With --share-group: reject (archive) records matching EXPR (the --filter syntax); repeatable.")
@click.option("--release-if", "release_if", multiple=True, metavar="EXPR",
              help="With --share-group: release records matching EXPR back to the group; repeatable.")
@click.option("--group-protocol", type=click.Choice(("classic", "consumer")), default=None,
              help="Group protocol (group.protocol): classic, or consumer for KIP-848, where the broker "
                   "assigns the partitions. [default: classic]")
@click.option("--format", "-f", "fmt", default=None, metavar="FMT",
              help="kcat-style output format: %t topic, %p partition, %o offset, %k key, %s value, "
                   "%h headers, %T timestamp, %K key length, %S value length, \\n \\t. [default: '%s\\n']")
@click.option("-J", "kcat_envelope", is_flag=True,
              help="kcat's JSON envelope per record (topic, partition, offset, tstype, ts, broker, headers, key, "
                   "payload).")
@click.option("--filter", "filters", multiple=True, metavar="EXPR",
              help="Print only records matching EXPR (repeatable, all must match): key=TEXT, key~REGEX, "
                   "header.NAME=TEXT, header.NAME~REGEX, header.NAME.")
@click.option("--formatter-property", "formatter_props", multiple=True, metavar="KEY=VALUE",
              help="kafka-console-consumer's formatter settings (repeatable): print.key, print.timestamp, "
                   "print.partition, print.offset, print.headers, print.value (true|false), key.separator, "
                   "line.separator, headers.separator, null.literal. --property takes them too.")
@click.option("--key-decoder", type=click.Choice(DECODERS), default="string", show_default=True,
              help="How keys are shown.")
@click.option("--value-decoder", type=click.Choice(DECODERS), default="string", show_default=True,
              help="How values are shown.")
@click.option("--value-format", type=click.Choice(CONSUME_FORMATS), default=None,
              help="Decode values in the schema registry's wire format to JSON (auto: those that start with "
                   "its magic byte).")
@click.option("--key-format", type=click.Choice(CONSUME_FORMATS), default=None, help="The same for keys.")
@registry_options
@click.option("--isolation", type=click.Choice(["read_uncommitted", "read_committed"]), default=None,
              help="isolation.level: read_committed shows only committed transactional records and stops at "
                   "the last stable offset. [default: read_uncommitted]")
@properties_options
@json_option
def consume(topic, bootstrap, from_beginning, offsets, partitions, max_messages, exit_at_end, timeout_ms, group,
            share_group, reject_if, release_if, group_protocol, fmt, kcat_envelope, filters, formatter_props,
            key_decoder, value_decoder, value_format, key_format, registry_url, registry_auth, isolation, properties,
            as_json):
    """Consume records from TOPIC and print them on stdout.

    By default each record's value is printed on its own line; --format
    takes kcat-style tokens, -J prints kcat's JSON envelope and --json one
    JSON object per record (topic, partition, offset, timestamp, key, value,
    headers; a key or value that is not UTF-8 goes as {"base64": "..."}, which
    `pylog produce --format json` reads back). kafka-console-consumer's formatter settings
    work too: --property print.key=true, print.timestamp, print.partition,
    print.offset, print.headers, print.value, key.separator, line.separator,
    headers.separator, null.literal. Other --property/-X keys are client
    properties.

    Piped output carries the records' bytes unchanged; on a terminal,
    control characters and invalid UTF-8 are shown escaped.

    Without --group the consumer reads the partitions directly and commits
    nothing. With --group it joins the group, starts at the group's stored
    offsets (-o stored) and on exit, Ctrl-C or SIGTERM commits and leaves
    the group.

    With --share-group it reads as a member of a share group: records are
    shared with the group's other consumers, each printed record is
    accepted, and --reject-if / --release-if reject or release the records
    they match.

    --value-format avro|protobuf|json-schema|auto decodes the schema
    registry's wire format to JSON (the registry from --schema-registry,
    PYLOG_SCHEMA_REGISTRY_URL or -X schema.registry.url).

    Exit status: 0 on normal end (--max-messages, --exit-at-end, e@TS,
    --timeout-ms, or Ctrl-C/SIGTERM after records), 1 on errors (such as a
    topic that does not exist), 2 on usage errors.
    """
    from pylog.core.client import Consumer

    properties = dict(properties)
    reg_props = pop_registry_props(properties)
    if value_format or key_format:
        key_decoder, value_decoder = _schema_decoders(make_client(registry_url, registry_auth, reg_props),
                                                      key_format, value_format, key_decoder, value_decoder)
    start, stop_ts = _start_position(offsets, from_beginning)
    formatter = _formatter_settings(properties, formatter_props, fmt, as_json, kcat_envelope)
    extra = _position_props(start, group, group_protocol, partitions, isolation, properties)
    keep = RecordFilter(filters)
    if share_group is not None or reject_if or release_if:
        return _share(topic, bootstrap, share_group, group, partitions, offsets or from_beginning, exit_at_end,
                      properties, _renderer(fmt, formatter, key_decoder, value_decoder, as_json, kcat_envelope),
                      keep, max_messages, timeout_ms, reject_if, release_if)
    props = client_props(bootstrap, properties, CONSUMER_CONFIGS, **extra)
    renderer = _renderer(fmt, formatter, key_decoder, value_decoder, as_json, kcat_envelope)

    consumer = Consumer(props)
    count = 0
    try:
        client = consumer.engine.client
        renderer.leader_of = lambda t, p: client.metadata.leader_for(t, p)  # the metadata object is replaced
        if check_topic(consumer.loop, consumer.engine.client, topic, consumer.config["allow.auto.create.topics"]):
            warn_created(topic)
        _join_or_assign(consumer, topic, group, partitions, start)
        write, flush, render, empty = _output(renderer)
        last_record = time.monotonic()
        end_offsets = None
        if (exit_at_end or stop_ts is not None) and group is None:
            end_offsets = consumer.end_offsets(consumer.assignment())
        stopped: set = set()  # partitions past the e@TS end time
        # a plain format to a pipe: whole fetched batches, rendered with no record object made
        whole = renderer.renders_batches and group is None and stop_ts is None and not keep and max_messages is None
        while True:
            if whole:
                polled = consumer.poll_fetched(200)
                chunk, got = renderer.render_fetched(polled)
                count += got
            else:
                polled = consumer.poll(200)
                if polled:
                    chunk, count = _render_polled(consumer, polled, render, empty, stop_ts, stopped, keep,
                                                  max_messages, count)
            now = time.monotonic()
            if polled:
                last_record = now
                write(chunk)
                flush()
                if max_messages is not None and count >= max_messages:
                    break
            if (exit_at_end or stop_ts is not None) and _at_end(consumer, end_offsets, stopped):
                break
            if timeout_ms is not None and (now - last_record) * 1000 >= timeout_ms:
                break
    except KeyboardInterrupt:
        pass  # Ctrl-C or SIGTERM: close below commits (auto-commit) and leaves the group
    finally:
        consumer.close()
    err.print(f"consumed {plural(count, 'record')} from {topic}", style="dim")


def _render_polled(consumer, recs, render, empty, stop_ts, stopped, keep, max_messages, count):
    """One poll's records as one chunk of output, with the e@TS end, the filters and -c applied:
    (the chunk, the count of records written so far)."""
    chunks = []
    for tp, rs in recs.items():
        if stop_ts is not None:
            rs = _before(rs, stop_ts, tp, stopped, consumer)
        if keep:
            rs = keep.apply(rs)
        if max_messages is not None and count + len(rs) > max_messages:
            rs = rs[:max_messages - count]
        chunks.append(render(tp.topic, tp.partition, rs))
        count += len(rs)
        if max_messages is not None and count >= max_messages:
            break
    return empty.join(chunks), count


def _renderer(fmt, formatter, kdec, vdec, as_json, kcat_envelope) -> Renderer:
    """The output renderer: bytes exact when piped, escaped on a terminal."""
    tty = sys.stdout.isatty()
    if tty:
        errors, escape = "backslashreplace", escape_controls
    else:
        # invalid UTF-8 round-trips to stdout's bytes unchanged
        errors, escape = "surrogateescape", None
        sys.stdout.reconfigure(errors="surrogateescape")
    binary = not tty and codecs.lookup(sys.stdout.encoding or "ascii").name == "utf-8"
    if formatter:
        text = (lambda b: escape(decode(b, "string", errors=errors))) if escape else \
            (lambda b: decode(b, "string", errors=errors))
        one = kafka_formatter(formatter, text)
        r = Renderer(["%?"], kdec, vdec, False, one, None)
    elif kcat_envelope:
        r = Renderer(["%?"], kdec, vdec, False, None, None)
        r.render_one = kcat_json(kdec, vdec, lambda t, p: r.leader_of(t, p))
    else:
        fmt = fmt if fmt is not None else "%s\\n"
        r = Renderer(format_pieces(fmt), kdec, vdec, as_json, compile_format(fmt, kdec, vdec, errors, escape),
                     json_line(kdec, vdec), errors=errors, escape=escape)
    r.binary = binary
    return r


def _output(renderer: Renderer):
    """(write, flush, render, empty): piped UTF-8 stdout takes bytes, with no text layer between."""
    if not renderer.binary:
        return sys.stdout.write, sys.stdout.flush, renderer.render, ""
    sys.stdout.flush()
    return sys.stdout.buffer.write, sys.stdout.buffer.flush, renderer.render_bytes, b""


def _seek(consumer, tps, start: Start) -> None:
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


def _before(rs, stop_ts, tp, stopped, consumer):
    """The records before the first one at or after `stop_ts`; past it the partition stops."""
    if tp in stopped:
        return []
    for i, r in enumerate(rs):
        if r.timestamp >= stop_ts:
            stopped.add(tp)
            consumer.pause([tp])
            return rs[:i]
    return rs


def _at_end(consumer, end_offsets, stopped=()) -> bool:
    if not consumer.assignment():
        return False  # a group member before its first assignment
    for tp in consumer.assignment():
        if tp in stopped:
            continue
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


def _share(topic, bootstrap, share_group, group, partitions, positioned, exit_at_end, properties, renderer, keep,
           max_messages, timeout_ms, reject_if, release_if) -> None:
    if share_group is None:
        raise UsageError("--reject-if and --release-if need --share-group")
    for given, what in ((group, "--group"), (partitions, "--partition"), (positioned, "--offset/--from-beginning"),
                        (exit_at_end, "--exit-at-end")):
        if given:
            raise UsageError(f"{what} cannot be combined with --share-group: the share group assigns records "
                             "(its start offset: share.auto.offset.reset)")
    from pylog.commands.consume_share import consume_share

    consume_share(topic, bootstrap, share_group, properties, renderer, keep, max_messages, timeout_ms,
                  reject_if, release_if)


def _formatter_settings(properties: dict, formatter_props, fmt, as_json: bool, kcat_envelope: bool) -> dict[str, str]:
    """Kafka's console-consumer formatter settings, taken out of --property and from
    --formatter-property; refused with --format, -J or --json (one of which at most)."""
    if sum([fmt is not None, as_json, kcat_envelope]) > 1:
        raise UsageError("use one of --format, -J and --json")
    formatter = {k: properties.pop(k) for k in list(properties) if k in FORMATTER_PROPS}
    for item in formatter_props:
        k, sep, v = item.partition("=")
        if not sep or k not in FORMATTER_PROPS:
            raise UsageError(f"--formatter-property {item!r}: expected KEY=VALUE with KEY one of "
                             f"{', '.join(sorted(FORMATTER_PROPS))}")
        formatter[k] = v
    if formatter and (fmt is not None or as_json or kcat_envelope):
        raise UsageError(f"--property {next(iter(formatter))}: a formatter setting; it cannot be combined "
                         "with --format, -J or --json")
    return formatter


def _position_props(start, group, group_protocol, partitions, isolation, properties: dict) -> dict:
    """The consumer properties the start position, --group and --group-protocol decide."""
    if start is not None and start.kind == "stored" and group is None:
        raise UsageError("--offset stored: the stored offsets are a group's; give --group")
    extra = {"group.id": group, "isolation.level": isolation}
    if group_protocol is not None:
        if group is None:
            raise UsageError("--group-protocol needs --group")
        extra["group.protocol"] = group_protocol
    if group is not None and start is not None and start.kind != "stored":
        # a group member starts at its committed offsets; earliest/latest only apply where there are none
        if start.kind not in ("earliest", "latest") or partitions:
            raise UsageError("with --group the positions come from the group: use --from-beginning, "
                             "--offset earliest|latest|stored, or no --partition")
        if "auto.offset.reset" not in properties:
            extra["auto.offset.reset"] = start.kind
    if group is not None and partitions:
        raise UsageError("with --group the group assigns the partitions: drop --partition")
    if (start is None or start.kind == "stored") and "auto.offset.reset" not in properties:
        extra["auto.offset.reset"] = "latest"
    if group is None:
        extra["enable.auto.commit"] = "false"
    return extra


def _schema_decoders(client, key_format, value_format, key_decoder, value_decoder):
    """(key decoder, value decoder): the schema registry's where --key-format/--value-format ask for one."""
    value = schema_decoder(client, value_format) or value_decoder
    return schema_decoder(client, key_format) or key_decoder, value


def _start_position(offsets, from_beginning: bool):
    """(start, stop timestamp) from --offset, or the earliest offset with --from-beginning."""
    if from_beginning and offsets:
        raise UsageError("use either --from-beginning or --offset")
    start, stop_ts = parse_offsets(offsets)
    return (Start("earliest") if from_beginning else start), stop_ts


def _join_or_assign(consumer, topic: str, group, partitions, start) -> None:
    """Subscribe as a member of the group, or assign the partitions asked for (all by default) and seek."""
    from pylog.core.client import TopicPartition

    if group is not None:
        from pylog.core.client.membership import attach_group

        attach_group(consumer)
        consumer.subscribe([topic])
        return
    all_parts = consumer.partitions_for(topic)
    chosen = list(partitions) if partitions else all_parts
    bad = [p for p in chosen if p not in all_parts]
    if bad:
        raise UsageError(f"topic {topic} has no partition {bad[0]} (partitions: 0-{len(all_parts) - 1})")
    tps = [TopicPartition(topic, p) for p in chosen]
    consumer.assign(tps)
    if start is not None:
        _seek(consumer, tps, start)
