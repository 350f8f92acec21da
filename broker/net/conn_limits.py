"""Connection limits shared by every listener, with Kafka's property names.

- max.connections: at the limit the listeners stop accepting (new clients wait
  in the kernel's backlog) until a connection closes, as Kafka's acceptor
  waits for a connection slot.
- max.connections.per.ip (and max.connections.per.ip.overrides host:count,...):
  one more connection from that address is closed at accept, as Kafka's
  ConnectionQuotas does.
- connections.max.idle.ms: a connection with nothing owed and nothing read or
  written for that long is closed.
- queued.max.requests: a connection stops being read while this many of its
  requests wait for their answers (pylog applies it per connection: requests
  are handled as they are read, so there is no broker-wide queue to bound).
- queued.max.request.bytes: the memory all connections together may hold in
  large requests being read (Kafka's request memory pool; -1: no bound). A
  connection whose next request does not fit stops being read until another
  request is done; one request may always be read, however large
  (socket.request.max.bytes bounds it). Requests under 64 KiB come through each
  connection's own receive buffer and are not counted.
Each connection also stops being read while 8 MiB of its answers wait to be
written (file ranges of fetch answers go out with sendfile and take no memory).
"""
from __future__ import annotations

import logging

from pylog.core.config import split_list
from pylog.core.errors import UsageError

log = logging.getLogger("pylog.broker")


def parse_overrides(text: str) -> dict[str, int]:
    """`host:count,host:count` (max.connections.per.ip.overrides)."""
    out = {}
    for item in split_list(text):
        host, sep, count = item.rpartition(":")
        if not sep or not host or not count.strip().isdigit():
            raise UsageError(f"max.connections.per.ip.overrides: {item!r} is not host:count")
        out[host.strip().strip("[]")] = int(count)
    return out


class ConnectionLimits:
    """Counts connections per address and in all; the servers ask it at accept and tell it at close."""

    def __init__(self, config):
        self.max_total = config["max.connections"]
        self.max_per_ip = config["max.connections.per.ip"]
        self.overrides = parse_overrides(config["max.connections.per.ip.overrides"])
        self.idle_ms = config["connections.max.idle.ms"]
        self.max_slots = config["queued.max.requests"]
        qb = config["queued.max.request.bytes"]
        self.pool_max = qb if qb > 0 else None
        self.pool_used = 0
        self.pool_waiters: list = []  # connections waiting for pool room
        self.total = 0
        self.per_ip: dict[str, int] = {}
        self.servers: list = []  # to resume accepting when a slot frees

    def full(self) -> bool:
        """max.connections reached: stop accepting."""
        return self.total >= self.max_total

    def admit(self, host: str) -> str | None:
        """Count a connection from `host`; or the reason it is refused (counted nothing)."""
        limit = self.overrides.get(host, self.max_per_ip)
        have = self.per_ip.get(host, 0)
        if have >= limit:
            return f"address {host} already has the configured maximum of {limit} connections"
        self.per_ip[host] = have + 1
        self.total += 1
        return None

    def take(self, n: int) -> bool:
        """Reserve `n` bytes of the request memory pool; False when they do not fit."""
        if self.pool_max is None:
            return True
        if self.pool_used and self.pool_used + n > self.pool_max:
            return False
        self.pool_used += n
        return True

    def give(self, n: int) -> None:
        """Return `n` bytes to the pool; the connections waiting for room try again."""
        if self.pool_max is None:
            return
        self.pool_used -= n
        waiters, self.pool_waiters = self.pool_waiters, []
        for c in waiters:
            c.loop.call_soon(c.pool_retry)

    def release(self, host: str) -> None:
        """A counted connection closed; listeners paused at max.connections accept again."""
        n = self.per_ip.get(host, 0) - 1
        if n > 0:
            self.per_ip[host] = n
        else:
            self.per_ip.pop(host, None)
        was_full = self.total >= self.max_total
        self.total -= 1
        if was_full and not self.full():
            for s in self.servers:
                s.resume_accepting()
