"""The Kafka wire protocol: declared schemas and a generic codec. No I/O.

Each API is declared once as data (apis/*.py, schema.Field); compiler.py
turns every (struct, version) into generated Python once; codec.py adds the
headers and framing. Bodies are plain dicts with snake_case field names;
record sets decode to zero-copy memoryviews.
"""
from pylog.core.protocol.apis import API_KEYS, API_NAMES, SCHEMAS
from pylog.core.protocol.codec import (
    RecordsPiece,
    Request,
    RequestHeader,
    decode_request,
    decode_request_body,
    decode_request_header,
    decode_response,
    decode_response_body,
    encode_request,
    encode_request_body,
    encode_request_parts,
    encode_response,
    encode_response_body,
    encode_response_parts,
)
from pylog.core.protocol.consumer_protocol import (
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from pylog.core.protocol.embedded import MalformedDataError
from pylog.core.protocol.errors import InvalidRequestError, UnknownApiKeyError, UnsupportedVersionError
from pylog.core.protocol.schema import Api, Field, defaults_dict
from pylog.core.protocol.types import ZERO_UUID

__all__ = [
    "API_KEYS", "API_NAMES", "SCHEMAS", "Api", "Field", "defaults_dict", "ZERO_UUID",
    "RecordsPiece", "Request", "RequestHeader",
    "decode_request", "decode_request_header", "encode_request", "encode_request_parts",
    "decode_response", "encode_response", "encode_response_parts",
    "decode_request_body", "encode_request_body", "decode_response_body", "encode_response_body",
    "InvalidRequestError", "UnknownApiKeyError", "UnsupportedVersionError", "MalformedDataError",
    "encode_subscription", "decode_subscription", "encode_assignment", "decode_assignment",
]
