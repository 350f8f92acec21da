"""Shell completion of topic and group names, asked from the broker.

Click calls these while completing (`_PYLOG_COMPLETE=bash_source pylog`); the
broker is the one named by --bootstrap-server/-b on the command line so far,
else PYLOG_BOOTSTRAP_SERVERS, else the default. Completion never fails: an
unreachable broker completes nothing, within about two seconds.
"""
from __future__ import annotations

import os

from pylog.commands.options import DEFAULT_BOOTSTRAP

_QUICK = {"socket.connection.setup.timeout.ms": "1000", "socket.connection.setup.timeout.max.ms": "1000",
          "request.timeout.ms": "2000", "default.api.timeout.ms": "2000", "reconnect.backoff.max.ms": "1000"}


def _bootstrap(ctx) -> str:
    while ctx is not None:
        b = ctx.params.get("bootstrap")
        if b:
            return b
        ctx = ctx.parent
    return os.environ.get("PYLOG_BOOTSTRAP_SERVERS") or DEFAULT_BOOTSTRAP


def _props(ctx) -> dict:
    from pylog.core.config import CONSUMER_CONFIGS

    props = {"bootstrap.servers": _bootstrap(ctx)}
    props.update({k: v for k, v in _QUICK.items() if k in CONSUMER_CONFIGS})
    return props


def topic_names(ctx, param, incomplete: str) -> list:
    """Topics on the broker whose names start with `incomplete`."""
    try:
        from pylog.core.client import Admin

        with Admin(_props(ctx)) as admin:
            names = sorted(admin.list_topics(include_internal=incomplete.startswith("_")))
    except Exception:  # completion must never print an error into the shell
        return []
    return _items(names, incomplete)


def group_names(ctx, param, incomplete: str) -> list:
    """Consumer groups on the broker whose ids start with `incomplete`."""
    try:
        from pylog.core.client.group_admin import GroupAdmin

        with GroupAdmin(_props(ctx)) as admin:
            ids = sorted(g["group_id"] for g in admin.list_groups())
    except Exception:
        return []
    return _items(ids, incomplete)


def _items(names, incomplete: str) -> list:
    from click.shell_completion import CompletionItem  # only while completing: a command's run skips it

    return [CompletionItem(n) for n in names if n.startswith(incomplete)]
