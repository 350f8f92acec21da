"""Schema-registry payloads without I/O: the wire format (magic byte, schema id,
Protobuf message indexes) and per-format codecs that turn JSON values into a
registry schema's bytes and back (fastavro, jsonschema, protobuf do the work).

The registry server (registry/) and the clients (produce,
consume, dump-segment, Spark) share these; none of them touches a socket.
"""
from pylog.core.schemas.wire import MAGIC, WireFormatError, frame, unframe, encode_indexes, decode_indexes

__all__ = ["MAGIC", "WireFormatError", "frame", "unframe", "encode_indexes", "decode_indexes"]
