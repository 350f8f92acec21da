"""The console's HTTP server: its declared routes on an aiohttp application served from a
thread and event loop of its own (the broker's loop stays the broker's)."""
from __future__ import annotations

import asyncio
import threading

from aiohttp import web

STATE = web.AppKey("state", dict)  # what the handlers read: request.app[STATE]["console"]


class ThreadedServer:
    def __init__(self, routes, state: dict, host: str, port: int, ssl_context=None):
        self.routes = routes
        self.state = state
        self.host, self.port = host, port
        self.ssl_context = ssl_context
        self.loop: asyncio.AbstractEventLoop | None = None
        self.runner: web.AppRunner | None = None
        self.thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.ssl_context else 'http'}://{host}:{self.port}"

    def app(self) -> web.Application:
        app = web.Application(client_max_size=4 * 1024 * 1024)
        app[STATE] = self.state
        for method, path, handler in self.routes:
            app.router.add_route(method, path, handler)
        return app

    async def _start(self) -> int:
        self.runner = web.AppRunner(self.app(), access_log=None, handle_signals=False)
        await self.runner.setup()
        site = web.TCPSite(self.runner, self.host, self.port, ssl_context=self.ssl_context, reuse_address=True)
        await site.start()
        return self.runner.addresses[0][1]

    def start(self) -> int:
        """Bind and serve on a new thread; returns the bound port (a free one for port 0)."""
        self.loop = asyncio.new_event_loop()
        started = threading.Event()
        box: dict = {}

        def run():
            asyncio.set_event_loop(self.loop)
            try:
                box["port"] = self.loop.run_until_complete(self._start())
            except BaseException as e:  # noqa: BLE001 - handed to start()'s caller
                box["error"] = e
                started.set()
                return
            started.set()
            self.loop.run_forever()

        self.thread = threading.Thread(target=run, name="pylog-console-http", daemon=True)
        self.thread.start()
        started.wait()
        if "error" in box:
            raise box["error"]
        self.port = box["port"]
        return self.port

    def stop(self) -> None:
        if self.loop is None or self.runner is None:
            return
        fut = asyncio.run_coroutine_threadsafe(self.runner.cleanup(), self.loop)
        try:
            fut.result(10)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            if self.thread is not None:
                self.thread.join(10)
            self.loop = None
