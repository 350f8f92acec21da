"""Fetch long polls waiting for data: futures keyed by (topic, partition).

A Fetch below min.bytes parks a future on every partition it reads; an append
(produce, a coordinator write) wakes the futures of its partition, and the
fetch reads again. At shutdown every waiter is woken so long polls answer
with what they have.
"""
from __future__ import annotations

import asyncio


class FetchWaiters:
    """The set of parked fetches, by partition."""

    def __init__(self):
        self._by_partition: dict[tuple[str, int], set[asyncio.Future]] = {}
        self._all: set[asyncio.Future] = set()

    def add(self, loop: asyncio.AbstractEventLoop, keys) -> asyncio.Future:
        """A future that completes when any of `keys` (topic, partition) gets data."""
        fut = loop.create_future()
        for k in keys:
            self._by_partition.setdefault(k, set()).add(fut)
        self._all.add(fut)
        return fut

    async def wait(self, loop: asyncio.AbstractEventLoop, keys, timeout: float) -> None:
        """Return at the next append to any (topic, partition) in `keys`, or after `timeout` s."""
        fut = self.add(loop, keys)
        try:
            await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            pass
        finally:
            self.remove(fut, keys)

    def remove(self, fut: asyncio.Future, keys) -> None:
        """Forget `fut` (woken or timed out)."""
        for k in keys:
            s = self._by_partition.get(k)
            if s is not None:
                s.discard(fut)
                if not s:
                    del self._by_partition[k]
        self._all.discard(fut)

    def wake(self, topic: str, partition: int) -> None:
        """New data in a partition: complete the futures parked on it."""
        waiters = self._by_partition.get((topic, partition))
        if waiters:
            for fut in waiters:
                if not fut.done():
                    fut.set_result(None)

    def wake_topic(self, topic: str) -> None:
        """Wake every fetch parked on a partition of `topic` (deleted topics)."""
        for (t, p) in list(self._by_partition):
            if t == topic:
                self.wake(t, p)

    def wake_all(self) -> None:
        """Shutdown: every long poll answers now with what it has."""
        for fut in list(self._all):
            if not fut.done():
                fut.set_result(None)
