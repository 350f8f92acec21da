"""`consume --value-format/--key-format avro|protobuf|json-schema|auto`: the registry's wire
format decoded to JSON with the writer's schema fetched by id. `auto` decodes what starts
with the magic byte and shows the rest as text."""
from __future__ import annotations

import json

from pylog.commands.console import err

CONSUME_FORMATS = ["avro", "protobuf", "json-schema", "auto"]


class SchemaDecoder:
    """A decoder the consume renderers call as `decoder(data, for_json)`."""

    def __init__(self, deserializer, fmt: str):
        self.deser = deserializer
        self.fmt = fmt
        self._warned = set()

    def __call__(self, data, for_json: bool):
        from pylog.core.client.schema_registry import is_framed

        if data is None:
            return None
        data = bytes(data)
        if self.fmt == "auto" and not is_framed(data):
            return data.decode("utf-8", "replace")
        try:
            obj = self.deser.decode(data)
        except Exception as e:  # noqa: BLE001 - one bad record is shown, not fatal to the stream
            msg = str(e)
            if msg not in self._warned:
                self._warned.add(msg)
                err.print(f"warning: cannot decode a record with the registry's schema: {msg}", markup=False)
            return {"undecodable": data.hex()} if for_json else data.decode("utf-8", "replace")
        return obj if for_json else json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def schema_decoder(client, fmt):
    if fmt is None:
        return None
    from pylog.core.client.schema_registry import Deserializer

    return SchemaDecoder(Deserializer(client), fmt)
