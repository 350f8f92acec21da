"""Protocol decode errors: the Kafka error classes plus the header they concern.

The broker needs the correlation id of a request it cannot decode (to answer
UNSUPPORTED_VERSION, or to log which request broke the connection), so every
error raised by decode_request carries `.header` (a RequestHeader, or None
when not even the fixed 8-byte header could be read).
"""
from __future__ import annotations

from pylog.core.errors import InvalidRequestError, UnsupportedVersionError

__all__ = ["InvalidRequestError", "UnsupportedVersionError", "UnknownApiKeyError", "attach_header"]


class UnknownApiKeyError(InvalidRequestError):
    """The request's api key is not one pylog knows."""


def attach_header(exc, header):
    """Give a decode error the request header it concerns (None: not even a header)."""
    exc.header = header
    exc.request_header = header
    if header is not None:
        exc.api_key = header.api_key
        exc.api_version = header.api_version
        exc.correlation_id = header.correlation_id
    else:
        exc.api_key = exc.api_version = exc.correlation_id = None
    return exc
