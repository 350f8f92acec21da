"""`EmbeddedBroker`: pylog's broker on a thread of the calling process, on 127.0.0.1 port 0.

The broker is the one `pylog broker start` runs (same storage engine, same handlers, the
Kafka wire protocol on a real socket), so any Kafka client can use it. Start-up takes a few
tens of milliseconds: no JVM, no container, no subprocess.
"""
from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Iterable

from pylog.broker.node.broker import Broker
from pylog.broker.node.settings import build_settings
from pylog.core.errors import PylogError


class EmbeddedBroker:
    """A single-node Kafka broker running on its own thread (a context manager, or start()/stop()).

    `log_dir`: where the data goes (default: a temporary directory removed on stop).
    `settings`: broker properties by Kafka's names, as `pylog broker start --set` takes them
    (for example `{"auto.create.topics.enable": "false", "num.partitions": "3"}`).
    `port`: 0 picks a free one; `bootstrap` tells which.
    `schema_registry`: True serves a schema registry (Confluent's REST API, schemas in
    `_schemas`) on a free port; `schema_registry_url` tells which.
    """

    def __init__(self, log_dir: str | Path | None = None, settings: dict | None = None,
                 host: str = "127.0.0.1", port: int = 0, schema_registry: bool = False):
        self._own_dir = log_dir is None
        self.log_dir = Path(log_dir) if log_dir is not None else None
        self.settings = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in (settings or {}).items()}
        if schema_registry:
            self.settings.setdefault("schema.registry.listeners", f"http://{host}:0")
        self.host = host
        self.port = port
        self.broker: Broker | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    # ---- lifecycle -----------------------------------------------------------------------
    @property
    def bootstrap(self) -> str:
        """`HOST:PORT` for `bootstrap.servers`."""
        return f"{self.host}:{self.port}"

    @property
    def schema_registry_url(self) -> str | None:
        """`http://HOST:PORT` of the broker's schema registry (None without one)."""
        reg = self.broker.schema_registry if self.broker is not None else None
        return reg.url if reg is not None else None

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self._ready.is_set()

    def start(self, timeout: float = 30.0) -> "EmbeddedBroker":
        """Load the log dir and listen; returns once clients can connect (raises if it cannot start)."""
        if self._thread is not None:
            raise PylogError("EmbeddedBroker is already started")
        if self.log_dir is None:
            self.log_dir = Path(tempfile.mkdtemp(prefix="pylog-embedded-"))
        settings = build_settings({}, self.settings, (str(self.log_dir),), f"{self.host}:{self.port}")
        self.broker = Broker(settings)
        self._ready.clear()
        self._error = None
        self.broker.open_storage()
        self._thread = threading.Thread(target=self._run, name=f"pylog-embedded-broker-{self.log_dir.name}",
                                        daemon=True)
        self._thread.start()
        if not self._ready.wait(timeout):
            self.stop()
            raise PylogError(f"embedded broker did not start within {timeout}s")
        if self._error is not None:
            err, self._error = self._error, None
            self._thread.join(timeout)
            self._thread = None
            self._cleanup()
            raise PylogError(f"embedded broker could not start: {err}") from err
        return self

    def _run(self) -> None:
        def ready(port: int) -> None:
            self.port = port
            self._ready.set()

        async def main():
            self._loop = asyncio.get_running_loop()
            await self.broker.serve(ready)

        try:
            asyncio.run(main())
        except BaseException as e:  # noqa: BLE001 - reported to start() or kept for stop()
            self._error = e
            self.broker.close_storage()
        finally:
            self._ready.set()

    def stop(self, timeout: float = 30.0) -> None:
        """Shut down cleanly (flush, checkpoints, clean-shutdown marker); removes a temporary log dir."""
        if self._thread is None:
            return
        if self._loop is not None and self._thread.is_alive():
            self._loop.call_soon_threadsafe(self.broker.request_stop)
        self._thread.join(timeout)
        alive = self._thread.is_alive()
        self._thread = None
        self._loop = None
        if alive:
            raise PylogError(f"embedded broker did not stop within {timeout}s")
        self._cleanup()
        if self._error is not None:
            err, self._error = self._error, None
            raise PylogError(f"embedded broker failed: {err}") from err

    def _cleanup(self) -> None:
        if self._own_dir and self.log_dir is not None:
            shutil.rmtree(self.log_dir, ignore_errors=True)
            self.log_dir = None

    def __enter__(self) -> "EmbeddedBroker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def faults(self):
        """The broker's fault rules: `faults.add(api="Produce", topic="orders",
        error="NOT_LEADER_OR_FOLLOWER", count=2)` returns a rule (`.hits`, `.clear()`, and a
        context manager that clears it); `faults.clear()` clears them all. See
        `pylog broker faults --help` for every kind of fault."""
        if self.broker is None:
            raise PylogError("EmbeddedBroker is not started")
        return self.broker.faults

    # ---- conveniences for tests -------------------------------------------------------------
    def client_config(self, **extra) -> dict:
        """`{"bootstrap.servers": ...}` plus `extra`, for any Kafka client's config dict."""
        return {"bootstrap.servers": self.bootstrap, **extra}

    def create_topic(self, name: str, partitions: int = 1, config: dict | None = None) -> None:
        """Create a topic (CreateTopics, as any client would)."""
        from pylog.core.client import Admin

        with Admin(self.client_config()) as admin:
            admin.create_topic(name, partitions=partitions, configs={k: str(v) for k, v in (config or {}).items()})

    def produce(self, topic: str, records: Iterable, partition: int | None = None,
                headers: list | None = None, timeout: float = 30.0) -> list:
        """Send values, or (key, value) pairs, with pylog's idempotent producer; returns their RecordMetadata."""
        from pylog.core.client import Producer

        with Producer(self.client_config(**{"linger.ms": 0})) as p:
            futures = []
            for r in records:
                key, value = r if isinstance(r, tuple) else (None, r)
                futures.append(p.send(topic, _bytes(value), key=_bytes(key), partition=partition,
                                      headers=headers))
            p.flush(timeout)
            return [f.get(timeout) for f in futures]

    def consume(self, topic: str, partitions: Iterable[int] | None = None, timeout: float = 30.0) -> list:
        """Every record now in `topic` (or the given partitions), in offset order per partition."""
        from pylog.core.client import Admin, Consumer, TopicPartition

        with Admin(self.client_config()) as admin:
            parts = sorted(partitions) if partitions is not None else sorted(admin.describe_topic(topic).partitions)
            start, end = admin.offsets(topic, parts)
        want = {p: end[p] for p in parts if end[p] > start[p]}
        out: dict[int, list] = {p: [] for p in parts}
        if not want:
            return []
        import time

        deadline = time.monotonic() + timeout
        with Consumer(self.client_config(**{"auto.offset.reset": "earliest", "enable.auto.commit": "false"})) as c:
            c.assign([TopicPartition(topic, p) for p in want])
            while any(not out[p] or out[p][-1].offset + 1 < want[p] for p in want):
                if time.monotonic() > deadline:
                    raise PylogError(f"consume {topic}: not every record arrived within {timeout}s")
                for tp, records in c.poll(200).items():
                    out[tp.partition].extend(r for r in records if r.offset < want[tp.partition])
        return [r for p in parts for r in out[p]]


def _bytes(v):
    if v is None or isinstance(v, (bytes, bytearray, memoryview)):
        return v
    return str(v).encode()
