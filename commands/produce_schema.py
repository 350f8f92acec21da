"""`produce --value-format/--key-format avro|protobuf|json-schema`: JSON in, the registry's
wire format out. A record whose key or value does not match its schema is reported with
its line number and the field at fault, and is not sent."""
from __future__ import annotations

import functools
import json
from pathlib import Path

import click

from pylog.core.errors import UsageError

SCHEMA_FORMATS = ["avro", "protobuf", "json-schema"]


def schema_produce_options(f):
    opts = [
        click.option("--value-format", type=click.Choice(SCHEMA_FORMATS), default=None,
                     help="Encode each value (a JSON document) with a registry schema, in the registry's wire "
                          "format (magic byte, schema id, payload)."),
        click.option("--key-format", type=click.Choice(SCHEMA_FORMATS), default=None,
                     help="The same for keys."),
        click.option("--value-schema", type=click.Path(dir_okay=False), default=None, metavar="FILE",
                     help="Schema file for values, registered under --value-subject (default TOPIC-value)."),
        click.option("--value-subject", default=None, metavar="NAME",
                     help="Subject of the value schema (without --value-schema: its latest version is used)."),
        click.option("--key-schema", type=click.Path(dir_okay=False), default=None, metavar="FILE"),
        click.option("--key-subject", default=None, metavar="NAME"),
        click.option("--value-message", default=None, metavar="NAME",
                     help="Protobuf: the message of the schema to encode (default: the first)."),
    ]

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)
    for o in reversed(opts):
        wrapper = o(wrapper)
    return wrapper


class SchemaEncoders:
    """The key and value serialisers a produce run uses (either may be None)."""

    def __init__(self, client, topic, value_format, value_schema, value_subject, value_message,
                 key_format, key_schema, key_subject):
        self.value = _serializer(client, value_format, value_schema, value_subject or f"{topic}-value",
                                 value_message, "value")
        self.key = _serializer(client, key_format, key_schema, key_subject or f"{topic}-key", None, "key")

    def apply(self, block, first):
        """Encode the block's keys and values; records that do not match leave the block as errors."""
        from pylog.core.schemas.codecs import ValueMismatch

        keep, errors = [], []
        n = len(block.values)
        new_values = list(block.values)
        new_keys = list(block.keys) if block.keys is not None else None
        for i in range(n):
            lineno = block.lines[i] if block.lines is not None else first + i
            try:
                if self.value is not None and block.values[i] is not None:
                    new_values[i] = self.value.encode(_json_of(block.values[i]))
                if self.key is not None and new_keys is not None and new_keys[i] is not None:
                    new_keys[i] = self.key.encode(_json_of(new_keys[i]))
                keep.append(i)
            except ValueMismatch as e:
                where = f" (field {e.field})" if getattr(e, "field", None) else ""
                errors.append((lineno, f"does not match the schema{where}: {e}"))
        if not errors:
            block.values, block.keys = new_values, new_keys
            return block
        from pylog.commands.produce_input import Block

        pick = lambda col: None if col is None else [col[i] for i in keep]  # noqa: E731
        lines = [block.lines[i] if block.lines is not None else first + i for i in keep]
        out = Block([new_values[i] for i in keep], pick(new_keys), pick(block.headers), pick(block.partitions),
                    pick(block.timestamps), lines, block.errors + errors)
        return out


def _json_of(raw: bytes):
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return bytes(raw).decode("utf-8", "replace")


def _serializer(client, fmt, schema_file, subject, message, what):
    if fmt is None:
        if schema_file:
            raise UsageError(f"--{what}-schema needs --{what}-format")
        return None
    from pylog.core.client.schema_registry import Serializer

    text = None
    if schema_file:
        try:
            text = Path(schema_file).read_text(encoding="utf-8")
        except OSError as e:
            raise UsageError(f"{schema_file}: {e.strerror}") from None
    return Serializer(client, fmt, subject, text, message)
