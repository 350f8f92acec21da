"""The client side of a running broker's metrics listener, which `pylog broker status` and
`pylog broker faults` talk to: where it is, and one JSON request to it."""
from __future__ import annotations

import json
import urllib.error
import urllib.request

from pylog.core.errors import DataError, UsageError

DEFAULT_URL = "http://127.0.0.1:9404"


def admin_url_from(url: str | None, config_file: str | None) -> str:
    """--url, else metrics.listener from --config, else the default listener."""
    if url:
        return url
    if config_file:
        from pylog.commands.options import merge_properties

        props = merge_properties(config_file, (), "--set")
        if props.get("metrics.listener"):
            return props["metrics.listener"]
        raise UsageError(f"{config_file} sets no metrics.listener: give --url")
    return DEFAULT_URL


def request_json(base: str, path: str, timeout: float, on_http_error, method: str = "GET", payload=None):
    """The JSON answer of `method base+path`. On an HTTP error status `on_http_error(where, e)`
    returns the body to read anyway or raises; no listener or no JSON is a DataError."""
    from pylog.broker.ops.admin_http import parse_metrics_listener

    host, port = parse_metrics_listener(base)
    where = f"http://{host if ':' not in host else f'[{host}]'}:{port}{path}"
    data = json.dumps(payload).encode() if payload is not None else None
    req = urllib.request.Request(where, data=data, method=method,
                                 headers={"Content-Type": "application/json"} if data else {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            raw = r.read()
    except urllib.error.HTTPError as e:
        raw = on_http_error(where, e)
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", e)
        raise DataError(f"no broker metrics listener at {base}: {getattr(reason, 'strerror', None) or reason}") \
            from None
    try:
        return json.loads(raw)
    except ValueError:
        raise DataError(f"{where} did not answer with JSON (is this a pylog broker's metrics.listener?)") from None
