"""The node's run state, shared by the parts that must know it: whether the node is stopping,
and the way to stop it (cleanly, or uncleanly when no log dir is left).

The Broker owns one; the handlers' views, the share coordinator and the log-dir monitor are
given it (or its bound methods) instead of the Broker.
"""
from __future__ import annotations

import asyncio


class NodeState:
    """`stopping` is a plain attribute (long polls and timers read it); `fatal_error` says why
    the node halted, or None."""

    def __init__(self):
        self.stopping = False
        self.fatal_error: str | None = None
        self._stop_event: asyncio.Event | None = None

    def watch(self, event: asyncio.Event) -> None:
        """The event the node's serve() waits on: set by request_stop() (now, if already asked)."""
        self._stop_event = event
        if self.stopping:  # a signal arrived while starting
            event.set()

    def is_stopping(self) -> bool:
        """True once a shutdown was requested: long polls answer, timers stop rescheduling."""
        return self.stopping

    def request_stop(self) -> None:
        """Begin a graceful shutdown (signal handlers call this)."""
        if not self.stopping:
            self.stopping = True
            if self._stop_event is not None:
                self._stop_event.set()

    def halt(self, reason: str) -> None:
        """Stop uncleanly (no log dir left): no flush, checkpoints or clean-shutdown marker."""
        self.fatal_error = reason
        self.request_stop()
