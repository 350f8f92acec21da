"""Requests that arrive while the broker is still loading the rest of its handler table.

The listener is up (and what clients ask first is answered) before the handler
modules that bring the coordinators are imported. A request for any other API
waits here, and so does every later request on its connection, so that each
connection's answers keep their order; once every handler is in place, `open`
runs them in the order they came.
"""
from __future__ import annotations

import sys
import threading
from typing import Callable, Collection

from pylog.broker.net.connection import Connection

_SWITCH_LOCK = threading.Lock()
_switch = {"loads": 0, "before": 0.005}  # loads under way; the interval before the first


class StartGate:
    """Holds each connection's requests from the first one `early` does not serve, until open()."""

    def __init__(self, early: Collection[int]):
        self.early = early  # the api keys served before open()
        self._held: dict[Connection, list[bytearray]] | None = {}

    @staticmethod
    async def load(loop, fn: Callable):
        """fn() in a worker thread while the loop answers the early requests. Meanwhile the GIL
        changes hands every 0.5 ms rather than Python's 5: the loop thread, waking for a request,
        waits that long at most for the worker's imports. (Brokers starting together in one
        process share the setting: the last load to end puts the first one's interval back.)"""
        with _SWITCH_LOCK:
            if not _switch["loads"]:
                _switch["before"] = sys.getswitchinterval()
                sys.setswitchinterval(min(_switch["before"], 0.0005))
            _switch["loads"] += 1
        try:
            return await loop.run_in_executor(None, fn)
        finally:
            with _SWITCH_LOCK:
                _switch["loads"] -= 1
                if not _switch["loads"]:
                    sys.setswitchinterval(_switch["before"])

    def hold(self, conn: Connection, frame: bytearray) -> bool:
        """True when the request waits (the gate is shut and it, or one before it, is not early)."""
        held = self._held
        if held is None:
            return False
        if conn not in held:
            if len(frame) < 2 or (frame[0] << 8 | frame[1]) in self.early:
                return False  # too short to name an API: the decoder says why
            held[conn] = []
        held[conn].append(frame)
        return True

    def open(self, dispatch: Callable[[Connection, bytearray], None]) -> None:
        """Every handler is in place: the held requests run, each connection's in order."""
        held, self._held = self._held, None
        for conn, frames in (held or {}).items():
            for frame in frames:
                if conn.closed:
                    break
                dispatch(conn, frame)
